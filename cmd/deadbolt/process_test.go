package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// proc is one real deadbolt process.
type proc struct {
	id, addr, raft, dir string
	extra               []string // more flags
	cmd                 *exec.Cmd
	log                 *os.File
}

// freeAddr returns a loopback address with a port free now, for a child
// process to listen on. It is taken below Linux's ephemeral range (32768
// and up), where a port chosen by the kernel (port 0) is also what the
// kernel hands to outgoing connections: one of those, the nodes' own
// among them, could take it before the child listens.
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrOn(t, "127.0.0.1")
}

// handedOut holds the addresses freeAddrOn has returned. The port it
// tries is closed again before a child listens on it, so without this two
// calls in a row (a node's client and raft addresses) could pick the same
// free port, and the child would fail to bind its second listener.
var handedOut struct {
	sync.Mutex
	addrs map[string]bool
}

// freeAddrOn is freeAddr on another loopback address, such as 127.0.0.2.
// It never returns an address twice in one test binary.
func freeAddrOn(t *testing.T, host string) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.addrs == nil {
		handedOut.addrs = make(map[string]bool)
	}
	for range 1000 {
		addr := net.JoinHostPort(host, strconv.Itoa(10000+rand.Intn(22000)))
		if handedOut.addrs[addr] {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		handedOut.addrs[addr] = true
		return addr
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

func buildBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("DEADBOLT_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "deadbolt")
	out, err := exec.Command("go", "build", "-race", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func (p *proc) start(t *testing.T, bin, peers string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(p.dir, "log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.log = f
	args := []string{"--id", p.id, "--addr", p.addr, "--raft-addr", p.raft,
		"--data-dir", filepath.Join(p.dir, "data"), "--peers", peers, "--snapshot-threshold", "64"}
	p.cmd = exec.Command(bin, append(args, p.extra...)...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		p.cmd = nil
	}
	if p.log != nil {
		p.log.Close()
		p.log = nil
	}
}

// leaderOf asks the nodes who leads; it returns the index of the leader.
func leaderOf(ctx context.Context, procs []*proc) (int, error) {
	for _, p := range procs {
		if p.cmd == nil {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
		r, err := c.Do(ctx, "RAFT", "LEADER").StringSlice()
		c.Close()
		if err != nil || len(r) != 2 {
			continue
		}
		for i, q := range procs {
			if q.id == r[0] && q.cmd != nil {
				return i, nil
			}
		}
	}
	return -1, errors.New("no leader")
}

// TestProcessesLeaderKill runs three real deadbolt processes, lets clients
// take, hold and release locks through every node, kills the leader with
// SIGKILL twice, and checks that no lock was ever held by two clients at
// once and that no acknowledged lock was lost while its holder held it.
func TestProcessesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildBinary(t)
	procs := make([]*proc, 3)
	var peers []string
	for i := range procs {
		procs[i] = &proc{id: fmt.Sprintf("p%d", i+1), addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir()}
		peers = append(peers, procs[i].id+"="+procs[i].raft)
	}
	for _, p := range procs {
		p.start(t, bin, strings.Join(peers, ","))
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range procs {
				b, _ := os.ReadFile(filepath.Join(p.dir, "log"))
				t.Logf("%s log:\n%s", p.id, b)
			}
		}
	})
	ctx := context.Background()
	waitLeader := func() int {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if l, err := leaderOf(ctx, procs); err == nil {
				return l
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no leader within 20s")
		return -1
	}
	waitLeader()

	const (
		locks   = 4
		clients = 12
		lease   = 30 * time.Second
	)
	var (
		holders    [locks]atomic.Value // lock -> owner in its critical section
		violations atomic.Int64
		granted    atomic.Int64
		stop       = make(chan struct{})
		wg         sync.WaitGroup
	)
	for i := range holders {
		holders[i].Store("")
	}
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			owner := fmt.Sprintf("client-%d", w)
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := procs[rng.Intn(len(procs))]
				c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond, ReadTimeout: 8 * time.Second})
				l := rng.Intn(locks)
				key := fmt.Sprintf("lock:{%d}", l)
				ok, err := c.SetNX(ctx, key, owner, lease).Result()
				if err != nil || !ok {
					c.Close()
					time.Sleep(5 * time.Millisecond)
					continue
				}
				granted.Add(1)
				if !holders[l].CompareAndSwap("", owner) {
					violations.Add(1)
					t.Errorf("%s granted %s while %v holds it", owner, key, holders[l].Load())
				}
				// While holding, the lock is ours on whichever node we ask.
				for i := 0; i < 3; i++ {
					q := procs[rng.Intn(len(procs))]
					qc := redis.NewClient(&redis.Options{Addr: q.addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond, ReadTimeout: 8 * time.Second})
					v, err := qc.Get(ctx, key).Result()
					qc.Close()
					if err == nil && v != owner {
						violations.Add(1)
						t.Errorf("%s holds %s but %s reads %q", owner, key, q.id, v)
					}
					time.Sleep(time.Duration(rng.Intn(20)) * time.Millisecond)
				}
				holders[l].Store("")
				// Release: WATCH, check, MULTI DEL.
				err = c.Watch(ctx, func(tx *redis.Tx) error {
					v, err := tx.Get(ctx, key).Result()
					if err != nil || v != owner {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, key).Err() })
					return err
				}, key)
				c.Close()
			}
		}(w)
	}
	for kill := 0; kill < 2; kill++ {
		time.Sleep(2 * time.Second)
		l := waitLeader()
		t.Logf("SIGKILL leader %s", procs[l].id)
		procs[l].kill()
		waitLeader()
		time.Sleep(time.Second)
		procs[l].start(t, bin, strings.Join(peers, ","))
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	if granted.Load() < 5 {
		t.Fatalf("only %d locks granted", granted.Load())
	}
	if v := violations.Load(); v > 0 {
		t.Fatalf("%d violations", v)
	}
	t.Logf("%d locks granted and checked across 2 leader kills", granted.Load())
}

// quietLogger drops go-redis's connection-pool chatter about nodes the
// test killed on purpose.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

func init() { redis.SetLogger(quietLogger{}) }

// TestFreeAddrNeverRepeats picks many addresses: none may come twice,
// though each port is closed again at once (a node given one port for
// both its listeners fails to start; CI saw it once).
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := make(map[string]bool)
	for range 3000 {
		a := freeAddr(t)
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
	}
}
