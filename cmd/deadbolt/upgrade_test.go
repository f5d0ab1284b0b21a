package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestProcessRollingUpgrade is issue 18's rolling upgrade and downgrade: a
// three-node cluster of the older deadbolt (oldCommit), under a lock
// workload and a stream of acknowledged writes, has one node at a time
// stopped and started again with this tree's binary, then, once every node
// runs it, one node at a time back on the older one. No lock is ever held
// by two clients at once, every node serves throughout, and every write
// acknowledged at any point is there at the end, on every node.
// Snapshots are taken every 64 entries, so each restart restores one the
// other binary may have written.
func TestProcessRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	oldBin := buildOld(t)
	newBin := buildBinary(t)
	procs, peers := threeProcs(t, "u")
	for _, p := range procs {
		p.start(t, oldBin, peers)
	}
	ctx := context.Background()
	for _, p := range procs {
		waitServing(t, p)
	}

	// A lock held throughout, so that every snapshot holds a lock (the
	// current build writes those at snapshot version 3, which the older
	// one does not read).
	{
		c := redis.NewClient(&redis.Options{Addr: procs[0].addr, MaxRetries: -1, ReadTimeout: 5 * time.Second})
		if ok, err := c.SetNX(ctx, "lock:kept", "keeper", time.Hour).Result(); err != nil || !ok {
			t.Fatalf("SET lock:kept NX: %v, %v", ok, err)
		}
		c.Close()
	}
	w := startUpgradeWorkload(t, procs)
	steps := []struct {
		bin, name string
		down      bool
	}{{newBin, "current", false}, {oldBin, "old " + oldCommit[:7], true}}
	for _, step := range steps {
		if step.down {
			// Every member runs this build with --preserve-downgrade: what
			// the older build could not carry is refused.
			c := redis.NewClient(&redis.Options{Addr: procs[0].addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
			for _, cmd := range [][]any{{"ACL", "SETUSER", "locker", "on", ">pw", "~lock:*", "+@all"}, {"CONFIG", "SET", "hash-max-listpack-entries", "64"}} {
				if err := c.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "--preserve-downgrade") {
					t.Errorf("%v with --preserve-downgrade on every member: %v, want a refusal naming the flag", cmd, err)
				}
			}
			c.Close()
		}
		for _, p := range procs {
			before := w.acked.Load()
			// Two snapshots of its own (the two a node keeps), which the
			// other build restores at its start: it has no older one to
			// fall back on.
			c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
			for i := range 2 {
				if i > 0 {
					waitAcked(t, w, w.acked.Load()+5)
				}
				raftSnapshot(t, c, p.id)
			}
			c.Close()
			stopGracefully(t, p)
			if step.down {
				// Formats the older build reads: the stable store's first
				// layout, snapshots without lock shapes.
				out, err := exec.Command(newBin, "downgrade", "--data-dir", filepath.Join(p.dir, "data")).CombinedOutput()
				if err != nil {
					t.Fatalf("deadbolt downgrade: %v\n%s", err, out)
				}
				t.Logf("%s", bytes.TrimSpace(out))
			}
			p.extra = nil
			if !step.down {
				p.extra = []string{"--preserve-downgrade"}
			}
			p.start(t, step.bin, peers)
			waitServing(t, p)
			// The workload goes on through the swapped node too.
			waitAcked(t, w, before+20)
			t.Logf("%s now runs the %s build (%d writes acknowledged)", p.id, step.name, w.acked.Load())
		}
	}
	w.stop()
	if v := w.violations.Load(); v > 0 {
		t.Fatalf("%d mutual-exclusion violations", v)
	}
	if w.granted.Load() < 10 {
		t.Fatalf("only %d locks granted", w.granted.Load())
	}
	// Every acknowledged write, on every node (each read waits for the
	// node to have applied what the leader committed).
	keys := append(w.keys(), "lock:kept")
	for _, p := range procs {
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
		missing := 0
		for _, k := range keys {
			v, err := c.Get(ctx, k).Result()
			if want := k; err != nil || (v != want && !(k == "lock:kept" && v == "keeper")) {
				missing++
				if missing <= 5 {
					t.Errorf("%s: acknowledged %s reads %q, %v", p.id, k, v, err)
				}
			}
		}
		c.Close()
		if missing > 0 {
			t.Fatalf("%s lost %d of %d acknowledged writes", p.id, missing, len(keys))
		}
	}
	t.Logf("%d locks granted, %d writes acknowledged and found on every node after 6 binary swaps", w.granted.Load(), len(keys))
}

// waitServing waits until p answers a write of its own (through the
// leader if it follows).
func waitServing(t *testing.T, p *proc) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond, ReadTimeout: 5 * time.Second})
	defer c.Close()
	deadline := time.Now().Add(60 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = c.Set(context.Background(), "probe:"+p.id, "1", 0).Err(); err == nil {
			return
		}
		if exited(p) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s serves no write within 60 s: %v", p.id, err)
}

// stopGracefully stops p with SIGTERM, as an operator's service manager
// does before it starts another binary.
func stopGracefully(t *testing.T, p *proc) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop within 30 s of SIGTERM", p.id)
		p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
	p.log.Close()
	p.log = nil
}

// upgradeWorkload: lock clients checking mutual exclusion, and a writer
// recording the writes the cluster acknowledged.
type upgradeWorkload struct {
	t          *testing.T
	procs      []*proc
	done       chan struct{}
	wg         sync.WaitGroup
	violations atomic.Int64
	granted    atomic.Int64
	acked      atomic.Int64
	mu         sync.Mutex
	ackedKeys  []string
}

func startUpgradeWorkload(t *testing.T, procs []*proc) *upgradeWorkload {
	w := &upgradeWorkload{t: t, procs: procs, done: make(chan struct{})}
	const locks, clients = 3, 6
	var holders [locks]atomic.Value
	for i := range holders {
		holders[i].Store("")
	}
	ctx := context.Background()
	client := func(p *proc) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: 5 * time.Second, PoolSize: 1})
	}
	for c := range clients {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			owner := fmt.Sprintf("client-%d", c)
			for !w.stopped() {
				p := procs[rng.Intn(len(procs))]
				cl := client(p)
				l := rng.Intn(locks)
				key := fmt.Sprintf("lock:%d", l)
				ok, err := cl.SetNX(ctx, key, owner, 30*time.Second).Result()
				if err != nil || !ok {
					cl.Close()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				w.granted.Add(1)
				if !holders[l].CompareAndSwap("", owner) {
					w.violations.Add(1)
					t.Errorf("%s granted %s through %s while %v holds it", owner, key, p.id, holders[l].Load())
				}
				time.Sleep(time.Duration(rng.Intn(20)) * time.Millisecond)
				holders[l].Store("")
				// Release only our own lock: WATCH, check, MULTI DEL. A
				// release whose outcome is unknown leaves the lock to its lease.
				cl.Watch(ctx, func(tx *redis.Tx) error {
					v, err := tx.Get(ctx, key).Result()
					if err != nil || v != owner {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, key).Err() })
					return err
				}, key)
				cl.Close()
			}
		}()
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		rng := rand.New(rand.NewSource(99))
		clients := make([]*redis.Client, len(procs))
		defer func() {
			for _, c := range clients {
				if c != nil {
					c.Close()
				}
			}
		}()
		for n := 0; !w.stopped(); n++ {
			i := rng.Intn(len(procs))
			if clients[i] == nil {
				clients[i] = client(procs[i])
			}
			k := fmt.Sprintf("ack:%d", n)
			if err := clients[i].Set(ctx, k, k, 0).Err(); err != nil {
				clients[i].Close()
				clients[i] = nil
				time.Sleep(10 * time.Millisecond)
				continue
			}
			w.mu.Lock()
			w.ackedKeys = append(w.ackedKeys, k)
			w.mu.Unlock()
			w.acked.Add(1)
		}
	}()
	return w
}

func (w *upgradeWorkload) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *upgradeWorkload) stop() {
	close(w.done)
	w.wg.Wait()
}

func (w *upgradeWorkload) keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ackedKeys...)
}

// waitAcked waits until the workload has n acknowledged writes.
func waitAcked(t *testing.T, w *upgradeWorkload, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.acked.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the cluster acknowledged %d writes, not %d, within 60 s", w.acked.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exited reports whether p's process has ended (a zombie not yet waited
// for), so that a node refusing to start fails the test at once.
func exited(p *proc) bool {
	if p.cmd == nil || p.cmd.Process == nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return false // no /proc: wait for the deadline
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// TestProcessDowngradeTool: a node that ran this build without
// --preserve-downgrade holds snapshots with lock shapes (version 3) and
// the slotted stable store, both of which the older build refuses; after
// deadbolt downgrade it starts on the older build with every write, and
// then on this build again.
func TestProcessDowngradeTool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	oldBin := buildOld(t)
	newBin := buildBinary(t)
	p := &proc{id: "d1", addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir()}
	peers := p.id + "=" + p.raft
	p.start(t, newBin, peers)
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("log:\n%s", readLog(p))
		}
	})
	waitServing(t, p)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	if ok, err := c.SetNX(ctx, "lock:a", "holder", time.Hour).Result(); err != nil || !ok {
		t.Fatalf("SET lock:a NX: %v %v", ok, err)
	}
	// Two snapshots, each after new writes: the two a node keeps.
	for i := range 2 {
		for j := range 10 {
			if err := c.Set(ctx, fmt.Sprintf("k%d.%d", i, j), "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Do(ctx, "RAFT", "SNAPSHOT").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	data := filepath.Join(p.dir, "data")
	// Not while the node runs.
	if out, err := exec.Command(newBin, "downgrade", "--data-dir", data).CombinedOutput(); err == nil || !strings.Contains(string(out), "stop the node first") {
		t.Fatalf("deadbolt downgrade on a running node's directory: %v\n%s", err, out)
	}
	stopGracefully(t, p)

	// Without the tool the older build refuses the directory.
	out, err := exec.Command(oldBin, "--id", p.id, "--addr", p.addr, "--raft-addr", p.raft, "--data-dir", data, "--peers", peers).CombinedOutput()
	if err == nil {
		t.Fatalf("the older build started on this build's data directory:\n%s", out)
	}
	t.Logf("the older build, before deadbolt downgrade: %v: %s", err, lastLine(out))

	out, err = exec.Command(newBin, "downgrade", "--data-dir", data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2 rewritten at version 2") || !strings.Contains(string(out), "stable store rewritten") {
		t.Fatalf("deadbolt downgrade: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
	for _, bin := range []string{oldBin, newBin} {
		p.start(t, bin, peers)
		waitServing(t, p)
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
		if v, err := c.Get(ctx, "lock:a").Result(); err != nil || v != "holder" {
			t.Fatalf("lock:a = %q, %v", v, err)
		}
		if ttl, err := c.PTTL(ctx, "lock:a").Result(); err != nil || ttl <= 0 {
			t.Fatalf("lock:a lost its lease: %v, %v", ttl, err)
		}
		for i := range 2 {
			for j := range 10 {
				if v, err := c.Get(ctx, fmt.Sprintf("k%d.%d", i, j)).Result(); err != nil || v != "v" {
					t.Fatalf("k%d.%d = %q, %v", i, j, v, err)
				}
			}
		}
		c.Close()
		stopGracefully(t, p)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// raftSnapshot asks c's node for a snapshot, again while it has nothing
// new to snapshot (the writes the test waited for not applied there yet).
func raftSnapshot(t *testing.T, c *redis.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.Do(context.Background(), "RAFT", "SNAPSHOT").Err()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "nothing new") || time.Now().After(deadline) {
			t.Fatalf("RAFT SNAPSHOT on %s: %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// threeProcs makes three members named prefix1..prefix3, each with its
// own addresses and data directory, and their --peers list; they are
// killed when the test ends, and their logs shown if it failed. The
// caller starts them, each with the build it wants.
func threeProcs(t *testing.T, prefix string) ([]*proc, string) {
	procs := make([]*proc, 3)
	var ids []string
	for i := range procs {
		procs[i] = &proc{id: fmt.Sprintf("%s%d", prefix, i+1), addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir()}
		ids = append(ids, procs[i].id+"="+procs[i].raft)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range procs {
				t.Logf("%s log:\n%s", p.id, readLog(p))
			}
		}
	})
	return procs, strings.Join(ids, ",")
}
