package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// startDeadboltCluster starts three bin/deadbolt processes forming one
// Raft cluster, each with its data directory under root (on disk, default
// fsync), and waits until all three agree on a leader. It returns the
// leader's RESP address and id and the processes' ids; stop kills the
// three; leader finds the current leader's RESP address.
func startDeadboltCluster(ctx context.Context, bin, root string, maxProcs int, extra ...string) (addr, leaderID string, pids []int, stop func(), leader func(context.Context) (string, error), err error) {
	c, err := startDeadboltNodes(ctx, bin, root, maxProcs, extra...)
	if err != nil {
		return "", "", nil, nil, nil, err
	}
	return c.leaderAddr, c.leaderID, c.pids, c.stop, c.leader, nil
}

// dbCluster is a running three-node cluster of bin/deadbolt processes.
type dbCluster struct {
	addrs                []string // the nodes' RESP addresses
	leaderID, leaderAddr string   // when it started
	pids                 []int
	stop                 func()
	leader               func(context.Context) (string, error)
}

// follower returns the RESP address of a node that was not the leader
// when the cluster started.
func (c *dbCluster) follower() string {
	for _, a := range c.addrs {
		if a != c.leaderAddr {
			return a
		}
	}
	return ""
}

// startDeadboltNodes is startDeadboltCluster, returning every node's
// address.
func startDeadboltNodes(ctx context.Context, bin, root string, maxProcs int, extra ...string) (*dbCluster, error) {
	var (
		pids []int
		stop func()
	)
	fail := func(err error) (*dbCluster, error) { return nil, err }
	path, err := exec.LookPath(bin)
	if err != nil {
		return fail(fmt.Errorf("deadbolt: %w (run make build, or pass -deadbolt-bin)", err))
	}
	ports, err := freePorts(6)
	if err != nil {
		return fail(err)
	}
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("n%d=%s", i+1, loopback(ports[3+i])))
	}
	var procs []*proc
	stop = func() {
		for _, p := range procs {
			p.stop()
		}
	}
	respAddrs := make([]string, 3)
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		respAddrs[i] = loopback(ports[i])
		args := append([]string{"--id", id, "--addr", respAddrs[i], "--raft-addr", loopback(ports[3+i]),
			"--data-dir", filepath.Join(root, "deadbolt-"+id), "--peers", strings.Join(peers, ","),
			"--log-level", "warn"}, extra...)
		p, err := startProc("deadbolt-"+id, root, maxProcs, path, args...)
		if err != nil {
			stop()
			return fail(err)
		}
		procs = append(procs, p)
		pids = append(pids, p.cmd.Process.Pid)
	}

	id, addr, err := waitLeader(ctx, respAddrs, procs)
	if err != nil {
		stop()
		return fail(err)
	}
	leader := func(ctx context.Context) (string, error) {
		_, addr, err := waitLeader(ctx, respAddrs, procs)
		return addr, err
	}
	return &dbCluster{addrs: respAddrs, leaderID: id, leaderAddr: addr, pids: pids, stop: stop, leader: leader}, nil
}

// startDeadboltSingle starts one bin/deadbolt process with a data
// directory under root: a one-voter Raft cluster that syncs every log
// entry, as a cluster member does, with no one to replicate to. It is the
// bound for the cluster on the same machine: the same log writes and
// state machine, without the followers' work and the round trips.
func startDeadboltSingle(ctx context.Context, bin, root string, maxProcs int) (addr string, pids []int, stop func(), err error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", nil, nil, fmt.Errorf("deadbolt: %w (run make build, or pass -deadbolt-bin)", err)
	}
	ports, err := freePorts(1)
	if err != nil {
		return "", nil, nil, err
	}
	addr = loopback(ports[0])
	p, err := startProc("deadbolt-1node", root, maxProcs, path,
		"--id", "s1", "--addr", addr, "--data-dir", filepath.Join(root, "deadbolt-1node"),
		"--log-level", "warn")
	if err != nil {
		return "", nil, nil, err
	}
	if _, _, err := waitLeader(ctx, []string{addr}, []*proc{p}); err != nil {
		p.stop()
		return "", nil, nil, err
	}
	return addr, []int{p.cmd.Process.Pid}, p.stop, nil
}

// waitLeader waits up to 30 s for the nodes to agree on a leader.
func waitLeader(ctx context.Context, addrs []string, procs []*proc) (id, addr string, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		id, addr, err := agreedLeader(ctx, addrs)
		if err == nil {
			return id, addr, nil
		}
		for _, p := range procs {
			if perr := p.exitErr(); perr != nil {
				return "", "", perr
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return "", "", errors.Join(errors.New("deadbolt cluster: no leader"), err, ctx.Err())
		}
		<-time.After(100 * time.Millisecond)
	}
}

// agreedLeader asks every node RAFT LEADER and returns the leader's id
// and RESP address when all name the same one.
func agreedLeader(ctx context.Context, addrs []string) (id, addr string, err error) {
	for i, a := range addrs {
		rc := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second})
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		v, err := rc.Do(pctx, "RAFT", "LEADER").StringSlice()
		cancel()
		rc.Close()
		if err != nil {
			return "", "", fmt.Errorf("%s: RAFT LEADER: %w", a, err)
		}
		if len(v) != 2 || v[1] == "" {
			return "", "", fmt.Errorf("%s: RAFT LEADER: %q", a, v)
		}
		if i > 0 && (v[0] != id || v[1] != addr) {
			return "", "", fmt.Errorf("nodes disagree on the leader: %s, %s", id, v[0])
		}
		id, addr = v[0], v[1]
	}
	return id, addr, nil
}
