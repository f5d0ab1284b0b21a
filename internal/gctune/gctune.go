// Package gctune sets the Go collector's target (GOGC) from the live heap
// after every collection, so that a process with a small heap collects
// rarely and one with a large heap does not keep several times its data
// in garbage.
//
// A fixed GOGC lets the heap grow to (1 + GOGC/100) times what the last
// collection found live before the next one: at 400, five times. For a
// lock server whose live heap is a few megabytes that is cheap insurance
// against collecting on every burst; with millions of keys it is gigabytes
// (issue 19: 500,000 Redisson locks took 825 MB resident for about 180 MB
// of data). The tuner keeps the collector's allowance of new allocation
// between collections near Headroom bytes: GOGC = Headroom / live, never
// above Max (the configured --gc-percent, for small heaps) nor below Min
// (so that a huge heap is not collected continuously).
//
// The collector's cost per allocated byte is about live/allowance, so a
// small heap keeps Max's cost and a large one pays more CPU per byte in
// exchange for memory near its data.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Policy is what the tuner aims for.
type Policy struct {
	Max      int    // GOGC while the live heap is at most Headroom*100/Max
	Min      int    // the lowest GOGC it sets
	Headroom uint64 // bytes allocated between collections it aims for
	// Idle, if not zero: a process that has not collected for this long,
	// allocated under idleMaxAlloc in the last quarter of it and runs no
	// long read (Busy),
	// while it holds more than an eighth of its live heap (and at least
	// 4 MB) in garbage, collects then. A busy process collects more often
	// than that anyway; a quiet one (a node after a bulk of writes) would
	// otherwise keep up to Headroom of garbage until the next burst, which
	// INFO's used_memory (the heap) and the resident size show.
	Idle time.Duration
}

// idleMinGarbage is the least garbage an idle collection is worth.
const idleMinGarbage = 4 << 20

// idleMaxAlloc is the most a process may allocate between two looks of
// the idle collector (a quarter of Idle) and still count as idle: one that allocates more is serving someone, and a
// collection it did not need would compete with its requests (on a
// member with one P the collector's mark worker held the processor 10–38 ms
// at a time while the event loop waited, during KEYS over a million keys).
const idleMaxAlloc = 1 << 20

// idleCollect reports whether the idle collector collects: no collection
// for Idle (cyclesSame), little allocation since its last look
// (allocated), no
// long read in progress (busy), and enough garbage on the heap (heap
// bytes of objects, live of them found live by the last collection).
func idleCollect(cyclesSame, busy bool, allocated, heap, live uint64) bool {
	return cyclesSame && !busy && allocated < idleMaxAlloc && heap > live && heap-live >= max(idleMinGarbage, live/8)
}

// Percent returns the GOGC the policy chooses for a live heap of live
// bytes.
func (p Policy) Percent(live uint64) int { return p.percentWith(live, 0) }

// percentWith is Percent for an allowance of Headroom+extra bytes: rounded
// up when extra is not zero (Allow's grant is then in force whole).
func (p Policy) percentWith(live, extra uint64) int {
	if live == 0 {
		return p.Max
	}
	pct := (p.Headroom + extra) * 100 / live
	if extra > 0 && pct*live < (p.Headroom+extra)*100 {
		pct++
	}
	switch {
	case pct >= uint64(p.Max):
		return p.Max
	case pct <= uint64(p.Min):
		return p.Min
	}
	return int(pct)
}

// Tuner follows the collections of the process.
type Tuner struct {
	p       Policy
	mu      sync.Mutex
	stopped bool
	bulk    int    // Bulk loads in progress: GOGC stays at Max
	busy    int    // Busy readers in progress: no idle collection
	running uint64 // Allow: bytes allowed to callers still running
	spent   uint64 // Allow: bytes allowed to callers finished since the last collection
	live    uint64 // the live heap the last collection found
	percent int    // the GOGC it last set
	sample  []metrics.Sample
	done    chan struct{} // closed by Stop
	idles   atomic.Uint64 // the idle collector's collections
}

// IdleCollections counts the collections the idle collector started.
func (t *Tuner) IdleCollections() uint64 { return t.idles.Load() }

// active is the running tuner, for Bulk.
var active atomic.Pointer[Tuner]

// Bulk tells the running tuner, if any, that what the process allocates
// until release is called is nearly all going to stay live (a state
// machine restored from a snapshot): collecting at a small GOGC would mark
// the growing heap again and again for little garbage (restoring 500,000
// locks took twice the CPU at GOGC 25 as at 400). GOGC is Max meanwhile;
// release sets it from the live heap again at once. Without a tuner
// (GOGC set, a library's tests) it does nothing.
func Bulk() (release func()) {
	t := active.Load()
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	t.bulk++
	if !t.stopped && t.percent != t.p.Max {
		debug.SetGCPercent(t.p.Max)
		t.percent = t.p.Max
	}
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			t.bulk--
			t.mu.Unlock()
			t.adjust(false)
		})
	}
}

// Busy tells the running tuner, if any, that a long read (a KEYS or SCAN
// over the whole keyspace) runs until release is called: the process is
// not idle meanwhile, whatever it allocates, so the idle collector waits
// (a collection it starts during the read marks the whole heap while
// other clients wait for the processor). Without a tuner it does nothing.
func Busy() (release func()) {
	t := active.Load()
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	t.busy++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			t.busy--
			t.mu.Unlock()
		})
	}
}

// BusyReaders is the number of Busy readers not yet released.
func (t *Tuner) BusyReaders() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.busy
}

// Start sets GOGC to p.Max and then adjusts it after every collection,
// until Stop.
func Start(p Policy) *Tuner {
	t := &Tuner{p: p, percent: p.Max, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, done: make(chan struct{})}
	debug.SetGCPercent(p.Max)
	t.arm()
	active.Store(t)
	if p.Idle > 0 {
		go t.idle()
	}
	return t
}

// idle collects when the process has not for p.Idle, is quiet and holds
// enough garbage, until Stop. It looks every p.Idle/4, so that a process
// that goes quiet after a burst collects soon after (within half of Idle
// once its last collection is Idle old), before the next burst, rather
// than up to two periods later, when the next burst may have begun.
func (t *Tuner) idle() {
	samples := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	tick := time.NewTicker(max(t.p.Idle/idleLooks, time.Millisecond))
	defer tick.Stop()
	w := idleWatch{idle: t.p.Idle, lastCycle: time.Now()}
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		if h := beforeLook.Load(); h != nil {
			(*h)()
		}
		metrics.Read(samples)
		for _, s := range samples {
			if s.Value.Kind() != metrics.KindUint64 {
				return
			}
		}
		t.mu.Lock()
		busy := t.bulk > 0 || t.busy > 0
		t.mu.Unlock()
		if w.look(time.Now(), samples[0].Value.Uint64(), samples[3].Value.Uint64(), samples[2].Value.Uint64(), samples[1].Value.Uint64(), busy) {
			runtime.GC()
			t.idles.Add(1)
			metrics.Read(samples)
			w.collected(time.Now(), samples[0].Value.Uint64(), samples[3].Value.Uint64())
		}
	}
}

// beforeLook, when set (by tests), runs at each of the idle collector's
// looks before it reads the runtime's counters: a test that must look
// like a process allocating at every look allocates there, where no
// scheduling delay can leave a look without it.
var beforeLook atomic.Pointer[func()]

// idleWatch is the idle collector's memory between looks.
type idleWatch struct {
	idle      time.Duration
	cycles    uint64    // collections counted at the last look
	allocs    uint64    // bytes allocated in all, at the last look
	lastCycle time.Time // when a collection was last seen
}

// look takes the counters read at now (collections n, bytes allocated in
// all a, heap and live bytes, a long read in progress) and reports
// whether to collect.
func (w *idleWatch) look(now time.Time, n, a, heap, live uint64, busy bool) bool {
	if n != w.cycles {
		w.lastCycle = now
	}
	collect := idleCollect(now.Sub(w.lastCycle) >= w.idle, busy, a-w.allocs, heap, live)
	w.cycles, w.allocs = n, a
	return collect
}

// collected notes the idle collector's own collection, ended at now.
func (w *idleWatch) collected(now time.Time, n, a uint64) {
	w.cycles, w.allocs, w.lastCycle = n, a, now
}

// idleLooks is how many times per Idle period the idle collector looks.
const idleLooks = 4

// arm attaches a finalizer to a fresh object: it runs after the next
// collection finds the object unreachable, adjusts GOGC and arms again.
func (t *Tuner) arm() {
	s := new(sentinel)
	runtime.SetFinalizer(s, func(*sentinel) {
		if t.adjust(true) {
			t.arm()
		}
	})
}

// sentinel is big enough not to be a tiny allocation (which may share a
// block with others and be finalized late).
type sentinel struct{ _ [16]byte }

// adjust sets GOGC from the live heap, after a collection (collected:
// what finished callers of Allow left is gone) or a bulk load; false
// once stopped.
func (t *Tuner) adjust(collected bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	if collected {
		t.spent = 0
	}
	if t.bulk > 0 {
		return true
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return false
	}
	t.live = t.sample[0].Value.Uint64()
	t.setLocked()
	return true
}

// Percent is the GOGC the tuner last set.
func (t *Tuner) Percent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// Stop stops adjusting; GOGC stays where it is.
func (t *Tuner) Stop() {
	t.mu.Lock()
	if !t.stopped {
		close(t.done)
	}
	t.stopped = true
	t.mu.Unlock()
	active.CompareAndSwap(t, nil)
}
