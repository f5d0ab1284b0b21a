package fsm

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/gctune"
)

// TestWalkKeepsCollectorBusy: while a KEYS or SCAN walk runs, the running
// gctune tuner counts it as a busy reader, so its idle collector does not
// start a collection (whose marking of a million keys held a one-P
// cluster leader's processor 10–38 ms at a time during KEYS); once the
// walk is done the count is back to zero.
func TestWalkKeepsCollectorBusy(t *testing.T) {
	minKeys, step := walkMinKeys, walkStep
	walkMinKeys, walkStep = 50, 100
	t.Cleanup(func() { walkMinKeys, walkStep = minKeys, step })
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tu := gctune.Start(gctune.Policy{Max: 400, Min: 25, Headroom: 64 << 20})
	defer tu.Stop()
	var during, yields int
	old := walkYield
	walkYield = func() { yields++; during = max(during, tu.BusyReaders()) }
	t.Cleanup(func() { walkYield = old })

	f := New(Options{})
	now := int64(1_000_000)
	for i := 0; i < 1000; i++ {
		f.Apply(now, Command{Args: toArgs([]string{"SET", "key:" + strconv.Itoa(i), "v"})})
	}
	var mu sync.Mutex
	for _, args := range [][]string{{"KEYS", "*"}, {"SCAN", "0", "COUNT", "10"}} {
		during, yields = 0, 0
		mu.Lock()
		w := f.BeginWalk(now, Command{Args: toArgs(args)})
		mu.Unlock()
		if w == nil {
			t.Fatalf("%s: not a walk", args[0])
		}
		w.Run(&mu)
		if yields == 0 || during != 1 {
			t.Fatalf("%s: busy readers %d during the walk (%d yields), want 1", args[0], during, yields)
		}
		if n := tu.BusyReaders(); n != 0 {
			t.Fatalf("%s: busy readers %d after the walk, want 0", args[0], n)
		}
	}
}

// TestWalkAllowsItsAllocations: a walk raises the runtime's allowance of
// new allocation (GOGC over the live heap, read back from the runtime) by
// about what it allocates (the names seen, the sort's buffer, KEYS's
// reply, SCAN's index), so that its own allocations do not start a
// collection during it (one marked a million keys on a one-P leader's
// only processor during KEYS and SCAN); the tuner's count of it outlives
// the walk until the next collection, which collects what it left. The
// headroom is small against the live heap (a 32 MB ballast) so that the
// walk's grant moves GOGC.
func TestWalkAllowsItsAllocations(t *testing.T) {
	minKeys, step := walkMinKeys, walkStep
	walkMinKeys, walkStep = 50, 1000
	t.Cleanup(func() { walkMinKeys, walkStep = minKeys, step })
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const headroom = 1 << 20
	tu := gctune.Start(gctune.Policy{Max: 400, Min: 1, Headroom: headroom})
	defer tu.Stop()
	ballast := make([][]byte, 32)
	for i := range ballast {
		ballast[i] = make([]byte, 1<<20)
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var during, counted uint64
	old := walkYield
	walkYield = func() {
		metrics.Read(live)
		during = max(during, live[0].Value.Uint64()*uint64(currentGOGC())/100)
		counted = max(counted, tu.Allowance())
	}
	t.Cleanup(func() { walkYield = old })

	f := New(Options{})
	now := int64(1_000_000)
	const n = 20_000
	names := 0
	for i := 0; i < n; i++ {
		k := "key:" + strconv.Itoa(i)
		names += len(k)
		f.Apply(now, Command{Args: toArgs([]string{"SET", k, "v"})})
	}
	var mu sync.Mutex
	for _, c := range []struct {
		args []string
		want uint64
	}{
		{[]string{"KEYS", "*"}, (walkSeenAllocs(true, n) + walkMatchedAllocs(false, n, names)) / 45 * 64},
		{[]string{"SCAN", "0", "COUNT", "10"}, walkSeenAllocs(false, n) / 45 * 64},
	} {
		runtime.GC()
		waitAllowance(t, tu, headroom)
		before := currentGOGC()
		if before > 10 {
			t.Fatalf("GOGC %d with 1 MB headroom over 32 MB live, want under 10", before)
		}
		during, counted = 0, 0
		mu.Lock()
		w := f.BeginWalk(now, Command{Args: toArgs(c.args)})
		mu.Unlock()
		if w == nil {
			t.Fatalf("%s: not a walk", c.args[0])
		}
		w.Run(&mu)
		// At least the estimate's 64/45 (more for garbage already on
		// the heap: gctune.TestGrant).
		if during < headroom+c.want {
			t.Fatalf("%s: GOGC %d before the walk; the runtime's allowance %d during it, want at least %d", c.args[0], before, during, headroom+c.want)
		}
		if got := tu.Allowance(); got != counted {
			t.Fatalf("%s: allowance %d after the walk, want %d until a collection", c.args[0], got, counted)
		}
	}
	runtime.GC()
	waitAllowance(t, tu, headroom)
	runtime.KeepAlive(ballast)
}

// currentGOGC reads GOGC back from the runtime.
func currentGOGC() int {
	old := debug.SetGCPercent(-1)
	debug.SetGCPercent(old)
	return old
}

// waitAllowance waits for the tuner's allowance to be want (a collection's
// finalizer resets it on a goroutine of its own).
func waitAllowance(t *testing.T, tu *gctune.Tuner, want uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for tu.Allowance() != want {
		if time.Now().After(deadline) {
			t.Fatalf("allowance %d after 20 s, want %d", tu.Allowance(), want)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}
