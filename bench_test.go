package deadbolt

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkLockUnlock runs the Redisson-style lock+unlock pair (EVALSHA)
// end to end through go-redis against an in-process node, with 64
// parallel clients each on its own lock.
func BenchmarkLockUnlock(b *testing.B) { benchLockUnlock(b, RunT(b), nil) }

// BenchmarkClusterLockUnlock is BenchmarkLockUnlock against the leader of
// an in-process three-node cluster with data on disk: every pair is two
// Raft entries (or a share of batched ones) fsynced on a quorum. Its
// allocs/op counts the go-redis clients too; a memory profile separates
// the server's stacks (server/, cluster/, fsm/, luaexec/) from theirs.
func BenchmarkClusterLockUnlock(b *testing.B) {
	b.ReportAllocs()
	c := RunClusterT(b, 3)
	benchLockUnlock(b, c.Nodes[c.WaitLeader()], nil)
}

// BenchmarkLockUnlockMetrics is BenchmarkLockUnlock with the HTTP
// endpoint on and scraped every 100 ms (Prometheus usually scrapes every
// 15 s): the commands should run as fast as without it.
func BenchmarkLockUnlockMetrics(b *testing.B) {
	n := RunT(b, func(c *Config) { c.HTTPAddr = "127.0.0.1:0" })
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		hc := &http.Client{Timeout: 5 * time.Second}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			r, err := hc.Get("http://" + n.HTTPAddr() + "/metrics")
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}()
	defer func() { close(stop); <-done }()
	benchLockUnlock(b, n, nil)
}

// benchLockUnlock runs the pair against n, through go-redis with 64
// connections; opt, if set, changes the client's options (a user).
func benchLockUnlock(b *testing.B, n *Node, opt func(*redis.Options)) {
	ctx := context.Background()
	o := &redis.Options{Addr: n.Addr(), PoolSize: 64}
	if opt != nil {
		opt(o)
	}
	rdb := redis.NewClient(o)
	defer rdb.Close()
	lock, unlock := redis.NewScript(rLock), redis.NewScript(rUnlock)
	if err := lock.Load(ctx, rdb).Err(); err != nil {
		b.Fatal(err)
	}
	if err := unlock.Load(ctx, rdb).Err(); err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	// CPU time per pair (client and node together, and the scraper if
	// any) varies less than wall time on a machine shared with other work.
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		me := id.Add(1)
		key := fmt.Sprintf("{lock%d}", me)
		owner := fmt.Sprintf("uuid:%d", me)
		for pb.Next() {
			if err := lock.EvalSha(ctx, rdb, []string{key}, 30000, owner).Err(); err != redis.Nil {
				b.Fatal(err)
			}
			if err := unlock.EvalSha(ctx, rdb, []string{key, "redisson_lock__channel:" + key}, 0, 30000, owner).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLockUnlockFcall is BenchmarkLockUnlock with the two scripts
// loaded as the functions of one library and called with FCALL.
func BenchmarkLockUnlockFcall(b *testing.B) {
	n := RunT(b)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), PoolSize: 64})
	defer rdb.Close()
	lib := "#!lua name=benchlock\n" +
		"local function lock(KEYS, ARGV)\n" + rLock + "\nend\n" +
		"local function unlock(KEYS, ARGV)\n" + rUnlock + "\nend\n" +
		"redis.register_function('lock', lock)\nredis.register_function('unlock', unlock)\n"
	if err := rdb.FunctionLoad(ctx, lib).Err(); err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		me := id.Add(1)
		key := fmt.Sprintf("{lock%d}", me)
		owner := fmt.Sprintf("uuid:%d", me)
		for pb.Next() {
			if err := rdb.FCall(ctx, "lock", []string{key}, 30000, owner).Err(); err != redis.Nil {
				b.Fatal(err)
			}
			if err := rdb.FCall(ctx, "unlock", []string{key, "redisson_lock__channel:" + key}, 0, 30000, owner).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
