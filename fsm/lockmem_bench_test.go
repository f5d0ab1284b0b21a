package fsm

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
)

// BenchmarkMemoryPerLock: the state machine's live heap and snapshot size
// per held lock, for sizing (README, "Running in production"). A lock is
// what the clients take: SET lock:<resource> <36-byte owner> NX PX 30000
// (a redsync or Redisson-style plain lock). Reported as heap-B/lock and
// snapshot-B/lock over 200,000 locks (ns/op is one round of 200,000).
func BenchmarkMemoryPerLock(b *testing.B) {
	const n = 200000
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		f := New(Options{})
		for i := range n {
			owner := fmt.Sprintf("%08x-1d2c-4b8e-9f3a-7c6d5e4f3a2b", i)
			f.Apply(1, Command{Args: [][]byte{[]byte("set"), []byte(fmt.Sprintf("lock:orders:%d", i)), []byte(owner), []byte("nx"), []byte("px"), []byte("30000")}})
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		var snap bytes.Buffer
		if err := f.Snapshot(&snap); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/lock")
		b.ReportMetric(float64(snap.Len())/n, "snapshot-B/lock")
		runtime.KeepAlive(f)
		f.Close()
	}
}

// redissonLock returns the commands that leave lock i of a Redisson
// client behind: HSET <name> <uuid>:<thread> 1 and PEXPIRE <name> 600000
// (the lock script's effect with a 10-minute lease). Eight clients
// (UUIDs) and 64 thread ids take turns.
func redissonLock(i int) (hset, pexpire [][]byte) {
	key := []byte("lock:entity:" + strconv.Itoa(i))
	field := []byte(fmt.Sprintf("b4e7c0a2-1d2c-4b8e-9f3a-7c6d5e4f3a%02x:%d", 16+i%8, 40+i%64))
	return [][]byte{[]byte("hset"), key, field, []byte("1")},
		[][]byte{[]byte("pexpire"), key, []byte("600000")}
}

// BenchmarkMemoryPerRedissonLock: the state machine's live heap and
// snapshot size per Redisson lock hash (one <uuid>:<thread> field set to
// 1, a 10-minute lease), over 500,000 locks, as issue 19 measures a node.
// With DEADBOLT_HEAPPROFILE=<file> it writes a heap profile of the loaded
// state there (go tool pprof -sample_index=inuse_space).
func BenchmarkMemoryPerRedissonLock(b *testing.B) {
	const n = 500000
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		f := New(Options{})
		for i := range n {
			hset, pexpire := redissonLock(i)
			f.Apply(1, Command{Args: hset})
			f.Apply(1, Command{Args: pexpire})
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		var snap bytes.Buffer
		if err := f.Snapshot(&snap); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/lock")
		b.ReportMetric(float64(snap.Len())/n, "snapshot-B/lock")
		if path := os.Getenv("DEADBOLT_HEAPPROFILE"); path != "" {
			out, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			pprof.WriteHeapProfile(out)
			out.Close()
		}
		runtime.KeepAlive(f)
		f.Close()
	}
}

// BenchmarkRestoreRedissonLocks: restoring a snapshot of 500,000 Redisson
// locks (a node's start from its snapshot), per lock.
func BenchmarkRestoreRedissonLocks(b *testing.B) {
	const n = 500000
	f := New(Options{})
	for i := range n {
		hset, pexpire := redissonLock(i)
		f.Apply(1, Command{Args: hset})
		f.Apply(1, Command{Args: pexpire})
	}
	var snap bytes.Buffer
	if err := f.Snapshot(&snap); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.ResetTimer()
	for b.Loop() {
		g := New(Options{})
		if err := g.Restore(bytes.NewReader(snap.Bytes())); err != nil {
			b.Fatal(err)
		}
		g.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/lock")
}
