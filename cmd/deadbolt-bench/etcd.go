package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// startEtcdCluster starts a three-member etcd cluster on loopback, each
// member with its data directory under root, and waits for a leader. It
// returns the leader's client endpoint, the server version and the
// members' process ids; stop kills the three; leader finds the current
// leader's endpoint.
func startEtcdCluster(ctx context.Context, bin, root string, maxProcs int) (endpoint, version string, pids []int, stop func(), leader func(context.Context) (string, error), err error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", "", nil, nil, nil, fmt.Errorf("etcd: %w (apt-get install etcd-server, or make bench, which installs it)", err)
	}
	ports, err := freePorts(6)
	if err != nil {
		return "", "", nil, nil, nil, err
	}
	var initial, endpoints []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("e%d=http://%s", i+1, loopback(ports[3+i])))
		endpoints = append(endpoints, "http://"+loopback(ports[i]))
	}
	var procs []*proc
	stop = func() {
		for _, p := range procs {
			p.stop()
		}
	}
	for i := range 3 {
		name := fmt.Sprintf("e%d", i+1)
		peer := "http://" + loopback(ports[3+i])
		p, err := startProc("etcd-"+name, root, maxProcs, path,
			"--name", name, "--data-dir", filepath.Join(root, "etcd-"+name),
			"--listen-client-urls", endpoints[i], "--advertise-client-urls", endpoints[i],
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new", "--initial-cluster-token", "deadbolt-bench",
			"--logger", "zap", "--log-level", "warn")
		if err != nil {
			stop()
			return "", "", nil, nil, nil, err
		}
		procs = append(procs, p)
		pids = append(pids, p.cmd.Process.Pid)
	}

	endpoint, version, err = waitEtcdLeader(ctx, endpoints, procs)
	if err != nil {
		stop()
		return "", "", nil, nil, nil, err
	}
	leader = func(ctx context.Context) (string, error) {
		ep, _, err := waitEtcdLeader(ctx, endpoints, procs)
		return ep, err
	}
	return endpoint, version, pids, stop, leader, nil
}

// waitEtcdLeader waits up to 30 s for a leader that every member names.
func waitEtcdLeader(ctx context.Context, endpoints []string, procs []*proc) (endpoint, version string, err error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", "", err
	}
	defer cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		endpoint, version, err = etcdLeader(ctx, cli, endpoints)
		if err == nil {
			return endpoint, version, nil
		}
		for _, p := range procs {
			if perr := p.exitErr(); perr != nil {
				return "", "", perr
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return "", "", errors.Join(errors.New("etcd cluster: no leader"), err, ctx.Err())
		}
		<-time.After(100 * time.Millisecond)
	}
}

// etcdLeader returns the client endpoint of the member that is leader,
// once every member answers and names the same leader.
func etcdLeader(ctx context.Context, cli *clientv3.Client, endpoints []string) (endpoint, version string, err error) {
	var leader uint64
	for _, ep := range endpoints {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", ep, err)
		}
		if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
			return "", "", fmt.Errorf("%s: leader %x, others %x", ep, st.Leader, leader)
		}
		leader = st.Leader
		if st.Header.MemberId == st.Leader {
			endpoint, version = ep, st.Version
		}
	}
	if endpoint == "" {
		return "", "", errors.New("no member says it is the leader")
	}
	return endpoint, version, nil
}

// measureEtcd runs clients workers against etcd, each with its own client
// connection to the leader, its own session (lease, kept alive) and its
// own mutex, doing Lock then Unlock.
func measureEtcd(ctx context.Context, t target, clients int, cfg config) (cell, error) {
	prefix := "/deadbolt-bench/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/"
	ttl := max(int(cfg.lease.Seconds()), 1)
	worker := func(i int) (pairFunc, func(), error) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{t.addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, err
		}
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
		if err != nil {
			cli.Close()
			return nil, nil, fmt.Errorf("etcd session: %w", err)
		}
		gen := 0
		m := concurrency.NewMutex(sess, prefix+strconv.Itoa(i))
		// renew goes on with a new lock, and a new session if the
		// lease is gone, after a failure that may have left the lock held.
		renew := func(err error) error {
			gen++
			select {
			case <-sess.Done():
				s, serr := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
				if serr != nil {
					return errors.Join(err, serr)
				}
				sess = s
			default:
			}
			m = concurrency.NewMutex(sess, prefix+strconv.Itoa(i)+"."+strconv.Itoa(gen))
			return err
		}
		closeFn := func() { sess.Close(); cli.Close() }
		return func(ctx context.Context) (time.Duration, error) {
			t0 := time.Now()
			if err := m.Lock(ctx); err != nil {
				return 0, renew(fmt.Errorf("etcd lock: %w", err))
			}
			acquire := time.Since(t0)
			if err := m.Unlock(ctx); err != nil {
				return 0, renew(fmt.Errorf("etcd unlock: %w", err))
			}
			return acquire, nil
		}, closeFn, nil
	}
	return measureCPU(ctx, t, clients, cfg, worker)
}
