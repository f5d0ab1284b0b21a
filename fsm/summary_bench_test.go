package fsm

import (
	"strconv"
	"testing"
)

// BenchmarkSummary is the metrics endpoint's count of 100k keys, half of
// them with a deadline: how long it holds the state machine's lock.
func BenchmarkSummary(b *testing.B) {
	f := New(Options{})
	for i := range 100000 {
		args := [][]byte{[]byte("set"), []byte("k" + strconv.Itoa(i)), []byte("v")}
		if i%2 == 0 {
			args = append(args, []byte("px"), []byte("100000"))
		}
		f.Apply(1, Command{Args: args})
	}
	if s := f.Summary(); s.Keys != 100000 || s.Expires != 50000 {
		b.Fatalf("summary %+v", s)
	}
	for b.Loop() {
		f.Summary()
	}
}
