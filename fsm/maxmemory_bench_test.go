package fsm

import (
	"strconv"
	"testing"
)

// The logical size is kept per command for the keys it meets: a write to
// a big aggregate must not cost a walk over it. Compare with the same
// benchmarks on a tree without maxmemory.go (fsm/DESIGN.md, "maxmemory").

// BenchmarkApplyHSetBigHash sets one field of a 100,000-field hash.
func BenchmarkApplyHSetBigHash(b *testing.B) {
	f := New(Options{})
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
// pops, so that it stays that long).
func BenchmarkApplyLPushLongList(b *testing.B) {
	f := New(Options{})
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
