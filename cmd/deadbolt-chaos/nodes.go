package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// node is one deadbolt process on its own host (network namespace).
type node struct {
	idx             int
	id              string
	ip, addr, raft  string
	dir, dataDir    string
	clockFile, logf string
	stallFile       string // while it exists, the node's log syncs wait
	failFile        string // while it exists, the node's log syncs fail with EIO

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	paused   bool
	stopping bool          // kill has signalled cmd: its exit is the harness's doing
	removed  bool          // taken out of the configuration by a nemesis
	offset   time.Duration // clock offset written to clockFile
}

func (n *node) alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// usable: running, not paused.
func (n *node) usable() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && !n.paused
}

// db is the cluster of deadbolt processes under test.
type db struct {
	bin   string
	lab   *lab
	nodes []*node
	extra []string // extra flags for every node
	log   func(format string, args ...any)
	peers string
	// secretFile holds the cluster secret every node is started with.
	secretFile string
	// tls are the --tls-cluster flags every node is started with.
	tls []string
	// exited is told of a process that exited without the harness
	// stopping it (a crash, or a join that gave up), after it was
	// marked not running, so healing starts it again.
	exited func(n *node, joining bool, err error)
}

// How the members authenticate each other.
type memberAuth int

const (
	authSecret memberAuth = iota // --cluster-secret-file
	authNone                     // --insecure-cluster
	authTLS                      // --tls-cluster
)

// tlsPort is the nodes' TLS client port with -tls-cluster, where a
// joining node reaches a member.
const tlsPort = "6380"

func newDB(bin string, l *lab, n int, out string, extra []string, logf func(string, ...any), auth memberAuth) (*db, error) {
	d := &db{bin: bin, lab: l, extra: extra, log: logf}
	var peers []string
	for i := 0; i < n; i++ {
		ip := hostIP(i)
		nd := &node{idx: i, id: fmt.Sprintf("n%d", i+1), ip: ip, addr: ip + ":6379", raft: ip + ":7000",
			dir: filepath.Join(out, fmt.Sprintf("n%d", i+1))}
		nd.dataDir = filepath.Join(nd.dir, "data")
		nd.clockFile = filepath.Join(nd.dir, "clock-offset-ms")
		nd.stallFile = filepath.Join(nd.dir, "disk-stall")
		nd.failFile = filepath.Join(nd.dir, "disk-fail")
		nd.logf = filepath.Join(out, nd.id+".log")
		if err := os.MkdirAll(nd.dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(nd.clockFile, []byte("0\n"), 0o644); err != nil {
			return nil, err
		}
		d.nodes = append(d.nodes, nd)
		peers = append(peers, nd.id+"="+nd.raft)
	}
	d.peers = strings.Join(peers, ",")
	switch auth {
	case authNone:
		d.extra = append(d.extra, "--insecure-cluster")
		return d, nil
	case authTLS:
		ips := make([]string, n)
		for i := range ips {
			ips[i] = hostIP(i)
		}
		ca, cert, key, err := memberCerts(out, ips)
		if err != nil {
			return nil, err
		}
		d.tls = []string{"--tls-cluster", "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca}
		return d, nil
	}
	// The members prove a shared secret to each other: their Raft
	// addresses are not on loopback (the hostile-peer nemesis checks that
	// nobody else is heard).
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	d.secretFile = filepath.Join(out, "cluster-secret")
	if err := os.WriteFile(d.secretFile, []byte(hex.EncodeToString(secret)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return d, nil
}

// start starts n's process: bootstrapping with the others, or, with join
// set, as a fresh node joining through that member.
func (d *db) start(n *node, join string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(n.logf, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== harness: start %s at %s (join %q)\n", n.id, time.Now().Format(time.RFC3339Nano), join)
	args := []string{"netns", "exec", d.lab.hostNS(n.idx), d.bin,
		"--id", n.id, "--addr", n.addr, "--raft-addr", n.raft, "--data-dir", n.dataDir,
		"--clock-offset-file", n.clockFile, "--disk-stall-file", n.stallFile, "--disk-fail-file", n.failFile, "--log-level", "info",
		"--protected-mode", "no"} // the clients come from the lab's own address
	if d.secretFile != "" {
		args = append(args, "--cluster-secret-file", d.secretFile)
	}
	if len(d.tls) > 0 {
		args = append(args, d.tls...)
		args = append(args, "--tls-addr", n.ip+":"+tlsPort)
		if host, _, err := net.SplitHostPort(join); err == nil {
			join = net.JoinHostPort(host, tlsPort) // a TLS cluster joins over TLS
		}
	}
	if join != "" {
		args = append(args, "--join", join)
	} else {
		args = append(args, "--peers", d.peers)
	}
	args = append(args, d.extra...)
	args = binaryFor(n, args) // upgrade.go
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		own := n.cmd == cmd && !n.stopping
		if own {
			n.cmd, n.paused = nil, false
		}
		n.mu.Unlock()
		close(done)
		if own && d.exited != nil {
			d.exited(n, join != "", err)
		}
	}()
	n.cmd, n.done, n.paused = cmd, done, false
	return nil
}

// signal sends sig to n's process, if it runs.
func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
}

// kill stops n with SIGKILL (or SIGTERM, graceful) and waits for it.
func (n *node) kill(sig syscall.Signal) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.stopping = cmd != nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	if sig == syscall.SIGTERM {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
	n.mu.Lock()
	n.cmd, n.paused, n.stopping = nil, false, false
	n.mu.Unlock()
}

// setOffset makes n's clock run offset ahead (negative: behind).
func (n *node) setOffset(off time.Duration) error {
	n.mu.Lock()
	n.offset = off
	n.mu.Unlock()
	tmp := n.clockFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(off.Milliseconds(), 10)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, n.clockFile)
}

// adminClient is a short-lived connection for administrative commands.
func adminClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 6 * time.Second, WriteTimeout: time.Second,
		PoolSize: 1, ContextTimeoutEnabled: true})
}

func (n *node) do(ctx context.Context, timeout time.Duration, args ...any) (any, error) {
	c := adminClient(n.addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

// leader asks every usable node whom it follows and returns the node most
// name, when it runs and a majority of the configuration it reports names
// it. The configuration is the cluster's, not the harness's idea of it: a
// removal whose outcome was unknown may have been committed later.
func (d *db) leader(ctx context.Context) (*node, error) {
	voters := map[string][]string{} // leader id -> the nodes that name it
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range d.nodes {
		if !n.usable() {
			continue
		}
		wg.Add(1)
		go func(n *node) {
			defer wg.Done()
			r, err := n.do(ctx, 500*time.Millisecond, "RAFT", "LEADER")
			if err != nil {
				return
			}
			if a, ok := r.([]any); ok && len(a) == 2 {
				if id, ok := a[0].(string); ok {
					mu.Lock()
					voters[id] = append(voters[id], n.id)
					mu.Unlock()
				}
			}
		}(n)
	}
	wg.Wait()
	best := ""
	for id, v := range voters {
		if len(v) > len(voters[best]) {
			best = id
		}
	}
	if best == "" {
		return nil, errors.New("no node names a leader")
	}
	var l *node
	for _, n := range d.nodes {
		if n.id == best && n.usable() {
			l = n
		}
	}
	if l == nil {
		return nil, fmt.Errorf("leader %s is not running", best)
	}
	members, err := l.memberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("leader %s: %w", best, err)
	}
	agree := 0
	for _, id := range voters[best] {
		if contains(members, id) {
			agree++
		}
	}
	if !contains(members, best) || agree*2 <= len(members) {
		return nil, fmt.Errorf("no leader agreed on by a majority: %s named by %v, its members %v", best, voters[best], members)
	}
	return l, nil
}

// waitLeader polls until a leader is agreed on.
func (d *db) waitLeader(ctx context.Context, limit time.Duration) (*node, error) {
	deadline := time.Now().Add(limit)
	for {
		l, err := d.leader(ctx)
		if err == nil {
			return l, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// memberList is RAFT MEMBERS on n: the ids, sorted.
func (n *node) memberList(ctx context.Context) ([]string, error) {
	r, err := n.do(ctx, time.Second, "RAFT", "MEMBERS")
	if err != nil {
		return nil, err
	}
	rows, ok := r.([]any)
	if !ok {
		return nil, fmt.Errorf("RAFT MEMBERS: unexpected reply %v", r)
	}
	var ids []string
	for _, row := range rows {
		if f, ok := row.([]any); ok && len(f) > 0 {
			ids = append(ids, fmt.Sprint(f[0]))
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// others returns the nodes other than those given.
func (d *db) others(not ...*node) []*node {
	var out []*node
outer:
	for _, n := range d.nodes {
		for _, x := range not {
			if n == x {
				continue outer
			}
		}
		out = append(out, n)
	}
	return out
}

func ids(ns []*node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.id)
	}
	return strings.Join(s, ",")
}

func idxs(ns []*node) []int {
	var s []int
	for _, n := range ns {
		s = append(s, n.idx)
	}
	return s
}
