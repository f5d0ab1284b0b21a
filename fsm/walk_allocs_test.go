package fsm

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// TestWalkAllocatesWhatItTellsTheCollector: a walk allocates no more than
// the estimate it gives the collector (walkAllocs, gctune.Allow), so that
// its own allocations do not start a collection during it (the allowance
// is the estimate's 64/45, the runtime's earliest trigger).
func TestWalkAllocatesWhatItTellsTheCollector(t *testing.T) {
	yield := walkYield
	walkYield = func() {}
	t.Cleanup(func() { walkYield = yield })
	f := New(Options{})
	now := int64(1_000_000)
	const n = 100_000
	for i := 0; i < n; i++ {
		f.Apply(now, Command{Args: toArgs([]string{"SET", "key:" + strconv.Itoa(i), "v"})})
	}
	ks := f.dbs[0]
	var mu sync.Mutex
	for _, c := range []struct {
		args    []string
		encoded bool
	}{
		{[]string{"KEYS", "*"}, true},
		{[]string{"KEYS", "*"}, false},
		{[]string{"SCAN", "0", "COUNT", "10"}, false},
	} {
		ks.scan = nil
		est := walkAllocs(c.args[0] == "KEYS", c.encoded, ks.keys.len(), ks.keys.names)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		mu.Lock()
		w := f.BeginWalk(now, Command{Args: toArgs(c.args), Encoded: c.encoded})
		mu.Unlock()
		if w == nil {
			t.Fatalf("%v: not a walk", c.args)
		}
		res := w.Run(&mu)
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(res)
		got := after.TotalAlloc - before.TotalAlloc
		t.Logf("%v encoded=%v: allocated %d bytes, %d a key; estimate %d", c.args, c.encoded, got, got/n, est)
		if got > est {
			t.Errorf("%v (encoded %v): the walk allocated %d bytes, over its estimate %d", c.args, c.encoded, got, est)
		}
	}
}
