package fsm

import (
	"slices"
	"strconv"
	"testing"
)

// A key expired at the walk's time but not yet reaped is skipped by
// step; an MSET over it during the walk recreates it without a lookup
// (put sees it as existing), so the walk never hears of it.
func TestWalkKeysMSetOverExpired(t *testing.T) {
	smallWalks(t)
	f := New(Options{})
	now := int64(1_000_000)
	for i := 0; i < 300; i++ {
		f.Apply(now, Command{Args: toArgs([]string{"SET", "k" + strconv.Itoa(i), "v"})})
	}
	f.Apply(now, Command{Args: toArgs([]string{"SET", "x", "v", "PX", "10"})})
	wnow := now + 20 // x expired, still in the table
	cmd := Command{Args: toArgs([]string{"KEYS", "*"}), Encoded: false}
	w := f.BeginWalk(wnow, cmd)
	if w == nil {
		t.Fatal("not a walk")
	}
	for !w.step() {
	}
	// prepare runs with the lock free (Run): a write may come meanwhile.
	f.Apply(wnow+1, Command{Args: toArgs([]string{"MSET", "x", "again"})})
	_, touched := w.touched["x"]
	t.Logf("after MSET: touched %v seen %v", touched, slices.Contains(w.seen, "x"))
	w.prepare()
	w.finish()
	got := keysOf(w.result())
	walkMinKeys = 1 << 30
	want := keysOf(f.Read(wnow, cmd))
	if !slices.Equal(got, want) {
		t.Fatalf("walked KEYS has x: %v; one-step KEYS has x: %v (len %d vs %d)",
			slices.Contains(got, "x"), slices.Contains(want, "x"), len(got), len(want))
	}
}

// A SCAN whose arguments are wrong is a long read on an unindexed database:
// the whole walk runs before the error.
func TestScanSyntaxErrorWalks(t *testing.T) {
	smallWalks(t)
	f := New(Options{})
	for i := 0; i < 300; i++ {
		f.Apply(1, Command{Args: toArgs([]string{"SET", "k" + strconv.Itoa(i), "v"})})
	}
	for _, args := range [][]string{{"SCAN", "notanumber"}, {"SCAN", "0", "COUNT", "0"}, {"SCAN", "0", "BOGUS"}} {
		if f.LongRead(Command{Args: toArgs(args)}) {
			t.Errorf("%v is a long read (a full walk before its error)", args)
		}
	}
}
