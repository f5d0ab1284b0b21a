package gctune

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Allow tells the running tuner, if any, that the caller is about to
// allocate about n bytes that will soon be garbage (a long read's list of
// keys, its sort buffer and its reply): the collector's allowance of new
// allocation is raised while the caller runs and then until the tuner
// sees the next collection, so that the caller's own allocations do not
// start a collection in the middle of it. The tuner sees it when its
// finalizer runs (arm), on the runtime's finalizer goroutine after the
// collection has ended, not at its end: until then GOGC stays raised and
// sets the target of the cycle after it over the new live heap. It is raised by n*64/45: the runtime
// starts a cycle once as little as 45/64 of the allowance is allocated
// (its pacer's earliest trigger), so that a cycle may start before n
// bytes are allocated if the allowance grows by n only. A collection during KEYS or the first
// SCAN over a million keys marked the whole heap (150-180 MB, 300 ms of
// marking) on a one-P member's only processor while other clients' PINGs
// waited (issue 19; runtime/trace of a leader).
//
// The deferral is bounded in bytes, not in time: the allowances of the
// callers running and of those finished since the last collection add up
// to at most the live heap, so the heap stays under twice the live heap
// plus Headroom however many long reads overlap or follow each other
// (raising GOGC to Max for the length of a walk, as Bulk does, let clients
// looping KEYS keep the heap at several times the data). What a caller
// leaves behind is collected by the next collection: the idle collector's
// once the process is quiet, or the raised target's once it is reached.
// Without a tuner it does nothing.
func Allow(n uint64) (release func()) {
	t := active.Load()
	if t == nil || n == 0 {
		return func() {}
	}
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	var now uint64 // the heap's size now; 0 if unknown
	if heap[0].Value.Kind() == metrics.KindUint64 {
		now = heap[0].Value.Uint64()
	}
	t.mu.Lock()
	g := grant(n, now, t.live, t.p.Headroom+t.extraLocked())
	t.running += g
	t.setLocked()
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			t.running -= g
			t.spent += g
			t.mu.Unlock()
		})
	}
}

// grant is what Allow adds to the allowance for n bytes, with the heap at
// heap bytes now, live bytes found live by the last collection and an
// allowance of have bytes: n*64/45, or more if the garbage already on
// the heap (since the last collection, or from earlier long reads) would
// otherwise bring the runtime's earliest trigger below heap+n. On a
// cluster leader a long read began with 50-60 MB of garbage from the
// writes before it, and the collection that followed started near the
// end of the next walk.
func grant(n, heap, live, have uint64) uint64 {
	g := n / triggerNum * triggerDen
	if heap+n > live {
		if want := (heap + n - live + triggerNum - 1) / triggerNum * triggerDen; want > have {
			g = max(g, want-have)
		}
	}
	return g
}

// The runtime's earliest trigger, as a fraction of the allowance of new
// allocation between collections (its pacer's minimum trigger ratio).
const triggerNum, triggerDen = 45, 64

// Allowance is the tuner's own count of the allocation it means to let
// pass between collections now: Headroom, and what Allow added (bounded
// by the live heap). What the runtime lets pass is GOGC over the live
// heap: more when Min holds GOGC up, or when a small lowering was
// skipped; less when Max caps it. Allow's grant adds to this count, not
// to what is in force (TestAllowOverMinPercent), and sets GOGC at least
// this high unless Max caps it (TestAllowReachesRuntime).
func (t *Tuner) Allowance() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p.Headroom + t.extraLocked()
}

// extraLocked is what Allow adds to the headroom now.
func (t *Tuner) extraLocked() uint64 {
	return min(t.running+t.spent, t.live)
}

// setLocked sets GOGC from the live heap found by the last collection and
// the allowance (t.mu held), unless a bulk load keeps it at Max. While
// Allow's callers hold an allowance any raise is made: a grant skipped as
// small would leave the runtime's earliest trigger under what they
// allocate (TestAllowReachesRuntime).
func (t *Tuner) setLocked() {
	if t.stopped || t.bulk > 0 {
		return
	}
	pct := t.p.percentWith(t.live, t.extraLocked())
	// Small changes are not worth the runtime's bookkeeping.
	if pct != t.percent && (pct == t.p.Max || pct == t.p.Min || pct*8 < t.percent*7 || pct*8 > t.percent*9 || pct > t.percent && t.running+t.spent > 0) {
		debug.SetGCPercent(pct)
		t.percent = pct
	}
}
