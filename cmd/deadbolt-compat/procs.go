package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is one server process the matrix runs: a deadbolt node or the
// reference redis-server.
type server struct {
	name     string // n1, single, s2, redis ...
	addr     string // RESP
	raft     string // Raft transport, cluster nodes only
	sentinel string // --sentinel-addr, when it has one
	args     []string
	bin      string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// freeAddrs returns n distinct loopback addresses nothing listens on:
// each was listened on until all n were found, so they differ, and are
// free unless another process takes one meanwhile.
func freeAddrs(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

func (s *server) start() error {
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s start: %s %s\n", time.Now().Format(time.RFC3339Nano), s.bin, strings.Join(s.args, " "))
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(s.exited)
	}()
	return nil
}

func (s *server) running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	if !s.running() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop asks the process to shut down (SIGTERM), then kills it.
func (s *server) stop() {
	if !s.running() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.kill()
	}
}

// waitUp waits until the server answers PING; if its process exits
// first, the error carries the end of its log.
func (s *server) waitUp(ctx context.Context, limit time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err = c.Ping(ctx).Err(); err == nil {
			return nil
		}
		if !s.running() {
			b, _ := os.ReadFile(s.logPath)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			return fmt.Errorf("%s exited: %s", s.name, lines[len(lines)-1])
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s (%s) does not answer PING after %v: %v", s.name, s.addr, limit, err)
}

// cluster is the three-node Raft cluster of real processes.
type cluster struct {
	nodes []*server
}

// newCluster describes three nodes on addrs (nine: RESP, Raft and
// Sentinel of each).
func newCluster(bin, dir, logs string, addrs []string) *cluster {
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("n%d=%s", i+1, addrs[3*i+1]))
	}
	c := &cluster{}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		n := &server{
			name: id, addr: addrs[3*i], raft: addrs[3*i+1], sentinel: addrs[3*i+2], bin: bin,
			logPath: filepath.Join(logs, "deadbolt-"+id+".log"),
		}
		n.args = []string{"--id", id, "--addr", n.addr, "--raft-addr", n.raft,
			"--data-dir", filepath.Join(dir, id), "--peers", strings.Join(peers, ","),
			"--sentinel-addr", n.sentinel, "--master-name", "mymaster", "--log-level", "info"}
		c.nodes = append(c.nodes, n)
	}
	return c
}

func (c *cluster) start(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := n.start(); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		if err := n.waitUp(ctx, 20*time.Second); err != nil {
			return err
		}
	}
	return c.waitSettled(ctx, 30*time.Second)
}

func (c *cluster) stop() {
	for _, n := range c.nodes {
		n.stop()
	}
}

func (c *cluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.addr)
	}
	return out
}

func (c *cluster) sentinels() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.sentinel)
	}
	return out
}

func (c *cluster) byAddr(addr string) *server {
	for _, n := range c.nodes {
		if n.addr == addr {
			return n
		}
	}
	return nil
}

// leader asks the running nodes who leads: the leader's RESP address
// once every running node names the same one.
func (c *cluster) leader(ctx context.Context) (string, error) {
	var seen string
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second})
		r, err := cl.Do(ctx, "RAFT", "LEADER").StringSlice()
		cl.Close()
		if err != nil {
			return "", fmt.Errorf("%s RAFT LEADER: %w", n.name, err)
		}
		if len(r) != 2 || r[1] == "" {
			return "", fmt.Errorf("%s knows no leader (%q)", n.name, r)
		}
		if seen != "" && seen != r[1] {
			return "", fmt.Errorf("nodes disagree on the leader: %s and %s", seen, r[1])
		}
		seen = r[1]
	}
	if c.byAddr(seen) == nil {
		return "", fmt.Errorf("leader %q is not one of the nodes", seen)
	}
	return seen, nil
}

// waitSettled waits until every running node names the same leader, and
// every node's Sentinel view lists the other running nodes as replicas
// (every address known), so that discovery answers are complete.
func (c *cluster) waitSettled(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err = c.settled(ctx); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cluster not settled after %v: %w", limit, err)
}

func (c *cluster) settled(ctx context.Context) error {
	l, err := c.leader(ctx)
	if err != nil {
		return err
	}
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.sentinel, Protocol: 2, MaxRetries: -1, ReadTimeout: time.Second})
		master, err1 := cl.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").StringSlice()
		reps, err2 := cl.Do(ctx, "SENTINEL", "REPLICAS", "mymaster").Slice()
		info, err3 := cl.Info(ctx, "replication").Result()
		cl.Close()
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
		if len(master) != 2 || net.JoinHostPort(master[0], master[1]) != l {
			return fmt.Errorf("%s: Sentinel names master %q, Raft %s", n.name, master, l)
		}
		if len(reps) != len(c.nodes)-1 {
			return fmt.Errorf("%s: %d replicas listed, want %d", n.name, len(reps), len(c.nodes)-1)
		}
		role := "role:slave"
		if n.addr == l {
			role = "role:master"
		}
		if !strings.Contains(info, role+"\r\n") {
			return fmt.Errorf("%s: INFO replication does not say %s", n.name, role)
		}
		if n.addr != l && !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("%s: master_link_status is not up", n.name)
		}
	}
	return nil
}
