package fsm

import (
	"bytes"
	"fmt"
	"runtime"
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
