package fsm

import (
	"strconv"
	"testing"
)

// The logical size is kept per command for the keys it meets, and only
// while maxmemory is set: a write to a big aggregate must not cost a walk
// over it, and without a limit a write must cost what it cost before
// maxmemory.go (BenchmarkApplySet, BenchmarkEvalLockUnlock). Compare with
// the same benchmarks on a tree without maxmemory.go (fsm/DESIGN.md,
// "maxmemory").

// withMaxmemory is a state machine with a limit its benchmark never
// reaches: it counts, and refuses nothing.
func withMaxmemory() *FSM {
	f := New(Options{})
	f.Apply(0, Command{Args: toArgs([]string{"__setconfig", "maxmemory", "1000000000"})})
	return f
}

// BenchmarkApplySetMaxmemory is BenchmarkApplySet with a limit set: the
// cost of counting.
func BenchmarkApplySetMaxmemory(b *testing.B) { benchApplySet(b, withMaxmemory()) }

// BenchmarkEvalLockUnlockMaxmemory is BenchmarkEvalLockUnlock with a
// limit set.
func BenchmarkEvalLockUnlockMaxmemory(b *testing.B) { benchEvalLockUnlock(b, withMaxmemory()) }

// BenchmarkApplyHSetBigHash sets one field of a 100,000-field hash, with
// a limit set.
func BenchmarkApplyHSetBigHash(b *testing.B) {
	f := withMaxmemory()
	defer f.Close()
	for i := range 100_000 {
		f.Apply(0, Command{Args: toArgs([]string{"HSET", "h", "f" + strconv.Itoa(i), "v"})})
	}
	cmd := Command{Args: toArgs([]string{"HSET", "h", "f7", "w"})}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Apply(int64(i), cmd)
	}
}

// BenchmarkApplyLPushLongList pushes onto a list of 100,000 elements (and
// pops, so that it stays that long), with a limit set.
func BenchmarkApplyLPushLongList(b *testing.B) {
	f := withMaxmemory()
	defer f.Close()
	for range 1000 {
		args := []string{"RPUSH", "l"}
		for range 100 {
			args = append(args, "element-of-some-length")
		}
		f.Apply(0, Command{Args: toArgs(args)})
	}
	push := Command{Args: toArgs([]string{"LPUSH", "l", "x"})}
	pop := Command{Args: toArgs([]string{"RPOP", "l"})}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Apply(int64(i), push)
		f.Apply(int64(i), pop)
	}
}

// BenchmarkMaxmemoryOn100k is the entry that sets a limit where there was
// none over 100,000 lock-sized keys (the count every key once under the
// apply costs), and the one that takes it off again.
func BenchmarkMaxmemoryOn100k(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	for i := range 100_000 {
		f.Apply(0, Command{Args: toArgs([]string{"SET", "lock:" + strconv.Itoa(i), "owner-uuid:1", "PX", "30000"})})
	}
	on := Command{Args: toArgs([]string{"__setconfig", "maxmemory", "1000000000"})}
	off := Command{Args: toArgs([]string{"__setconfig", "maxmemory", "0"})}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Apply(0, on)
		if used, _ := f.LogicalMemory(); used == 0 {
			b.Fatal("nothing counted")
		}
		f.Apply(0, off)
	}
}
