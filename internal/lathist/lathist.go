// Package lathist is a lock-free histogram of non-negative integers
// (nanoseconds, bytes, entry counts) with logarithmic buckets: eight
// buckets per power of two, so a bucket's width is at most an eighth of
// its lower bound and a quantile read from it is off by at most 12.5 %.
// Recording is one atomic add on the bucket and two on the count and sum;
// nothing allocates after New.
//
// It backs INFO latencystats (where Redis uses an HDR histogram with
// finer buckets) and the Prometheus histograms of the HTTP endpoint, which
// read the same buckets at scrape time.
package lathist

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	subBits = 3
	sub     = 1 << subBits // buckets per power of two
	// maxExp is the largest power of two with buckets of its own; larger
	// values land in the last bucket (2^44 ns is almost five hours).
	maxExp = 44
	// Buckets is the number of buckets.
	Buckets = (maxExp-subBits+1)*sub + sub
)

// Hist is a histogram. The zero value is ready to use.
type Hist struct {
	count, sum atomic.Uint64
	b          [Buckets]atomic.Uint64
}

// index is the bucket of v: v itself below 8, then eight per power of two.
func index(v uint64) int {
	if v < sub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v in [2^e, 2^(e+1))
	if e > maxExp {
		return Buckets - 1
	}
	return (e-subBits+1)*sub + int((v>>(e-subBits))&(sub-1))
}

// Lower returns the smallest value bucket i holds.
func Lower(i int) uint64 {
	if i < sub {
		return uint64(i)
	}
	e := i/sub + subBits - 1
	return uint64(sub+i%sub) << (e - subBits)
}

// Upper returns the smallest value above bucket i (its exclusive bound).
func Upper(i int) uint64 {
	if i == Buckets-1 {
		return math.MaxUint64
	}
	return Lower(i + 1)
}

// Record adds one value.
func (h *Hist) Record(v uint64) {
	h.b[index(v)].Add(1)
	h.sum.Add(v)
	h.count.Add(1)
}

// RecordDuration adds a duration in nanoseconds (negative counts as 0).
func (h *Hist) RecordDuration(d time.Duration) { h.Record(uint64(max(d, 0))) }

// Reset empties the histogram. Values recorded meanwhile may be half lost.
func (h *Hist) Reset() {
	for i := range h.b {
		h.b[i].Store(0)
	}
	h.sum.Store(0)
	h.count.Store(0)
}

// Snap is a copy of a histogram at one moment (not atomic as a whole: a
// value recorded during the copy may be in Count and not in its bucket).
type Snap struct {
	Count, Sum uint64
	Counts     [Buckets]uint64
}

// Snapshot copies the histogram.
func (h *Hist) Snapshot() *Snap {
	s := &Snap{}
	h.SnapshotInto(s)
	return s
}

// SnapshotInto copies the histogram into s. Count is the sum of the
// buckets copied, so that it agrees with them.
func (h *Hist) SnapshotInto(s *Snap) {
	s.Count = 0
	for i := range h.b {
		s.Counts[i] = h.b[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = h.sum.Load()
}

// Quantile estimates the value below which a fraction q (0..1) of the
// values lie: the middle of the bucket that holds the q-th value, 0 for an
// empty histogram.
func (s *Snap) Quantile(q float64) float64 {
	if s.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.Count)))
	rank = min(max(rank, 1), s.Count)
	var seen uint64
	for i, n := range s.Counts {
		seen += n
		if seen >= rank {
			lo := float64(Lower(i))
			if i < sub {
				return lo
			}
			return (lo + float64(Upper(i))) / 2
		}
	}
	return float64(Lower(Buckets - 1))
}

// Cumulative returns, for each bound (ascending), how many values are at
// most that bound: Prometheus's "le" counts. It is exact for a bound one
// below a bucket edge (2^k-1 always is); for another bound, a bucket that
// straddles it counts as above it.
func (s *Snap) Cumulative(bounds []uint64) []uint64 {
	out := make([]uint64, len(bounds))
	i := 0
	var seen uint64
	for j, b := range bounds {
		for i < Buckets-1 && Upper(i)-1 <= b {
			seen += s.Counts[i]
			i++
		}
		out[j] = seen
	}
	return out
}
