package lathist

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Every value lands in a bucket whose bounds hold it, and buckets tile the
// number line without gaps.
func TestBucketsHoldTheirValues(t *testing.T) {
	for i := 0; i < Buckets-1; i++ {
		if Upper(i) <= Lower(i) || Lower(i+1) != Upper(i) {
			t.Fatalf("bucket %d: [%d, %d) next starts at %d", i, Lower(i), Upper(i), Lower(i+1))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := r.Uint64() >> r.IntN(64)
		i := index(v)
		if v < Lower(i) || (i < Buckets-1 && v >= Upper(i)) {
			t.Fatalf("%d in bucket %d [%d, %d)", v, i, Lower(i), Upper(i))
		}
	}
}

// Quantiles are within the promised 12.5 % of the exact ones.
func TestQuantileError(t *testing.T) {
	var h Hist
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]uint64, 0, 20000)
	for range cap(vals) {
		v := uint64(r.ExpFloat64() * 50000)
		vals = append(vals, v)
		h.Record(v)
	}
	slices.Sort(vals)
	s := h.Snapshot()
	if s.Count != uint64(len(vals)) {
		t.Fatalf("count %d, want %d", s.Count, len(vals))
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := float64(vals[int(q*float64(len(vals)))-1])
		got := s.Quantile(q)
		if got < exact*0.875 || got > exact*1.125 {
			t.Errorf("p%v: %v, exact %v", q*100, got, exact)
		}
	}
	c := s.Cumulative([]uint64{1<<10 - 1, 1 << 16, 1 << 40})
	n10 := uint64(0)
	for _, v := range vals {
		if v <= 1<<10-1 {
			n10++
		}
	}
	if c[0] != n10 || c[2] != s.Count || c[1] < c[0] {
		t.Errorf("cumulative %v: want %d below 1024 and %d in all", c, n10, s.Count)
	}
	h.Reset()
	if h.Snapshot().Count != 0 {
		t.Error("Reset left values")
	}
}
