package fsm

import (
	"runtime/debug"
	"strconv"
	"sync"
	"testing"

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
