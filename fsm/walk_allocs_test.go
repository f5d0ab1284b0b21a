package fsm

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// TestWalkAllocatesWhatItTellsTheCollector: a walk allocates no more than
// it tells the collector it will (gctune.Allow), so that its own
// allocations do not start a collection during it (the allowance is the
// estimate's 64/45, the runtime's earliest trigger), and tells it not
// much more than that: a KEYS whose pattern matches few keys is not
// granted the allowance of one that matches all (a grant per call for
// nothing, which looping selective KEYS would keep up).
func TestWalkAllocatesWhatItTellsTheCollector(t *testing.T) {
	yield, allow := walkYield, walkAllow
	var told uint64
	walkYield = func() {}
	walkAllow = func(n uint64) func() { told += n; return func() {} }
	t.Cleanup(func() { walkYield, walkAllow = yield, allow })
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
		{[]string{"KEYS", "key:*"}, true},
		{[]string{"KEYS", "key:*"}, false},
		{[]string{"KEYS", "nomatch*"}, true},
		{[]string{"SCAN", "0", "COUNT", "10"}, false},
	} {
		ks.scan = nil
		told = 0
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
		t.Logf("%v encoded=%v: allocated %d bytes, %d a key; told %d", c.args, c.encoded, got, got/n, told)
		if got > told {
			t.Errorf("%v (encoded %v): the walk allocated %d bytes, over the %d it told", c.args, c.encoded, got, told)
		}
		if most := got*3/2 + 2*walkFixed; told > most {
			t.Errorf("%v (encoded %v): the walk told %d bytes, over %d for the %d it allocated", c.args, c.encoded, told, most, got)
		}
	}
}
