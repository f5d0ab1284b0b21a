package fsm

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// smallWalks makes every database of more than a few keys a long read,
// walked a few keys at a time, for the test.
func smallWalks(t *testing.T) {
	minKeys, step, run := walkMinKeys, walkStep, walkRun
	walkMinKeys, walkStep, walkRun = 50, 7, 7
	t.Cleanup(func() { walkMinKeys, walkStep, walkRun = minKeys, step, run })
}

// keysOf is a KEYS reply's keys.
func keysOf(r Result) []string {
	out := []string{}
	for _, e := range r.Reply.Elems {
		out = append(out, string(e.Str))
	}
	return out
}

// scannedOf is a SCAN reply's keys.
func scannedOf(r Result) []string {
	return keysOf(Result{Reply: r.Reply.Elems[1]})
}

// TestWalkKeysWhileWriting: a KEYS walked in steps while keys are created,
// deleted, expired and recreated between the steps answers exactly the
// keys that exist when it ends (what a KEYS in one step answers then), in
// byte order, each once.
func TestWalkKeysWhileWriting(t *testing.T) {
	smallWalks(t)
	for seed := int64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewSource(seed))
		f := New(Options{})
		now := int64(1_000_000)
		apply := func(args ...string) { f.Apply(now, Command{Args: toArgs(args)}) }
		key := func() string { return "k" + strconv.Itoa(r.Intn(400)) }
		for i := 0; i < 300; i++ {
			apply("SET", key(), "v")
		}
		pattern := []string{"*", "k1*", "k?5"}[r.Intn(3)]
		cmd := Command{Args: toArgs([]string{"KEYS", pattern})}
		w := f.BeginWalk(now, cmd)
		if w == nil {
			t.Fatal("KEYS over 300 keys is not a walk")
		}
		for !w.step() {
			for n := r.Intn(6); n > 0; n-- {
				switch r.Intn(5) {
				case 0, 1:
					apply("SET", key(), "v")
				case 2:
					apply("DEL", key())
				case 3:
					apply("SET", key(), "v", "PX", "1") // expires at the next tick
				case 4:
					k := key()
					apply("DEL", k)
					apply("SET", k, "again")
				}
			}
		}
		w.prepare()
		w.finish()
		got := keysOf(w.result())
		minKeys := walkMinKeys
		walkMinKeys = 1 << 30
		want := keysOf(f.Read(now, cmd))
		walkMinKeys = minKeys
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d KEYS %s: walked %d keys, one step %d\n got %v\nwant %v", seed, pattern, len(got), len(want), got, want)
		}
	}
}

// TestWalkScanIndexWhileWriting: the scan index a SCAN builds in steps,
// while keys come and go, serves a full iteration that returns every key
// present throughout, and the answers of the index-free algorithm.
func TestWalkScanIndexWhileWriting(t *testing.T) {
	smallWalks(t)
	for seed := int64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewSource(seed))
		f := New(Options{})
		now := int64(1_000_000)
		apply := func(args ...string) { f.Apply(now, Command{Args: toArgs(args)}) }
		for i := 0; i < 300; i++ {
			apply("SET", "k"+strconv.Itoa(i), "v")
		}
		cmd := Command{Args: toArgs([]string{"SCAN", "0", "COUNT", "1000"})}
		w := f.BeginWalk(now, cmd)
		if w == nil {
			t.Fatal("the first SCAN over 300 keys is not a walk")
		}
		for !w.step() {
			for n := r.Intn(6); n > 0; n-- {
				k := "k" + strconv.Itoa(100+r.Intn(400)) // k0..k99 stay throughout
				if r.Intn(2) == 0 {
					apply("SET", k, "v")
				} else {
					apply("DEL", k)
				}
			}
		}
		w.prepare()
		w.finish()
		got := scannedOf(w.result())
		_, want := scanOracle(f.dbs[0], now, 0, 1000)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: walked SCAN %v, want %v", seed, got, want)
		}
		if f.dbs[0].scan == nil {
			t.Fatal("no index installed")
		}
		for i := 0; i < 100; i++ {
			if !slices.Contains(got, "k"+strconv.Itoa(i)) {
				t.Fatalf("seed %d: k%d, present throughout, missing", seed, i)
			}
		}
	}
}

// TestWalkDatabaseReplaced: a FLUSHDB during a walk: the answer is the
// database as it is at the end.
func TestWalkDatabaseReplaced(t *testing.T) {
	smallWalks(t)
	f := New(Options{})
	for i := 0; i < 100; i++ {
		f.Apply(1, Command{Args: toArgs([]string{"SET", "k" + strconv.Itoa(i), "v"})})
	}
	w := f.BeginWalk(1, Command{Args: toArgs([]string{"KEYS", "*"})})
	w.step()
	f.Apply(1, Command{Args: toArgs([]string{"FLUSHDB"})})
	f.Apply(1, Command{Args: toArgs([]string{"SET", "new", "v"})})
	for !w.step() {
	}
	w.prepare()
	w.finish()
	if got := keysOf(w.result()); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("KEYS across a FLUSHDB: %v", got)
	}
}
