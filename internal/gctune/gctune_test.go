package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPolicyPercent(t *testing.T) {
	p := Policy{Max: 400, Min: 25, Headroom: 64 << 20}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 400}, {1 << 20, 400}, {16 << 20, 400}, {32 << 20, 200},
		{128 << 20, 50}, {256 << 20, 25}, {4 << 30, 25},
	} {
		if got := p.Percent(c.live); got != c.want {
			t.Errorf("Percent(%d MB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// currentGOGC reads the collector's target.
func currentGOGC() int {
	old := debug.SetGCPercent(100)
	debug.SetGCPercent(old)
	return old
}

// waitGOGC collects until the tuner has set want, or fails after a
// deadline.
func waitGOGC(t *testing.T, tu *Tuner, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for tu.Percent() != want {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after 20 s, want %d", tu.Percent(), want)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := currentGOGC(); got != want {
		t.Fatalf("the runtime's GOGC is %d, the tuner's %d", got, want)
	}
}

// TestTunerFollowsLiveHeap: a live heap of 64 MB lowers GOGC to the
// minimum (4 MB of headroom), and dropping it raises GOGC back to the
// maximum.
func TestTunerFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tu := Start(Policy{Max: 400, Min: 25, Headroom: 4 << 20})
	defer tu.Stop()
	if got := currentGOGC(); got != 400 {
		t.Fatalf("GOGC %d after Start, want 400", got)
	}
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitGOGC(t, tu, 25)
	runtime.KeepAlive(live)
	live = nil
	waitGOGC(t, tu, 400)
}

// TestTunerBulk: during a Bulk load GOGC stays at the maximum whatever the
// live heap, and its release sets it from the live heap at once.
func TestTunerBulk(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tu := Start(Policy{Max: 400, Min: 25, Headroom: 4 << 20})
	defer tu.Stop()
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitGOGC(t, tu, 25)
	release := Bulk()
	if got := currentGOGC(); got != 400 {
		t.Fatalf("GOGC %d in a bulk load, want 400", got)
	}
	for range 3 {
		runtime.GC()
	}
	time.Sleep(10 * time.Millisecond) // finalizers run on their own goroutine
	if got := currentGOGC(); got != 400 {
		t.Fatalf("GOGC %d after collections in a bulk load, want 400", got)
	}
	release()
	if got := currentGOGC(); got != 25 {
		t.Fatalf("GOGC %d after the bulk load, want 25", got)
	}
	runtime.KeepAlive(live)
}

var garbageSink []byte

// TestTunerIdle: a process that stops allocating with garbage on its heap
// collects within a few Idle periods without being asked, and one with
// Idle zero does not.
func TestTunerIdle(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	cycles := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	for _, idle := range []time.Duration{20 * time.Millisecond, 0} {
		tu := Start(Policy{Max: 100000, Min: 25, Headroom: 1 << 40, Idle: idle}) // no collection by the target
		runtime.GC()
		before := cycles()
		for range 64 {
			garbageSink = make([]byte, 256<<10) // 16 MB of garbage
		}
		garbageSink = nil
		deadline := time.Now().Add(10 * time.Second)
		if idle == 0 {
			deadline = time.Now().Add(200 * time.Millisecond)
		}
		for cycles() == before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		tu.Stop()
		if got := cycles() > before; got != (idle > 0) {
			t.Errorf("Idle %v: collected by itself: %v", idle, got)
		}
	}
}

// TestIdleCollectOnlyWhenIdle: the idle collector collects garbage left
// by a burst only once the process is quiet: not while it still
// allocates (serving clients), not while a long read runs (Busy), not
// within a tick that saw a collection, and not for little garbage.
func TestIdleCollectOnlyWhenIdle(t *testing.T) {
	const live, heap = 200 << 20, 260 << 20 // 60 MB of garbage
	for _, c := range []struct {
		name             string
		cyclesSame, busy bool
		allocated, heap  uint64
		want             bool
	}{
		{"quiet", true, false, 0, heap, true},
		{"a little allocation", true, false, idleMaxAlloc - 1, heap, true},
		{"serving clients", true, false, idleMaxAlloc, heap, false},
		{"serving clients fast", true, false, 50 << 20, heap, false},
		{"a long read", true, true, 0, heap, false},
		{"collected meanwhile", false, false, 0, heap, false},
		{"little garbage", true, false, 0, live + live/8 - 1, false},
		{"no garbage", true, false, 0, live, false},
	} {
		if got := idleCollect(c.cyclesSame, c.busy, c.allocated, c.heap, live); got != c.want {
			t.Errorf("%s: idleCollect = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTunerBusy: Busy marks the running tuner busy until released
// (twice released counts once), and does nothing without a tuner.
func TestTunerBusy(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	Busy()() // no tuner: nothing to do, no panic
	tu := Start(Policy{Max: 400, Min: 25, Headroom: 4 << 20})
	defer tu.Stop()
	busy := tu.BusyReaders
	r1, r2 := Busy(), Busy()
	if got := busy(); got != 2 {
		t.Fatalf("two readers: busy %d", got)
	}
	r1()
	r1()
	if got := busy(); got != 1 {
		t.Fatalf("one released twice: busy %d, want 1", got)
	}
	r2()
	if got := busy(); got != 0 {
		t.Fatalf("all released: busy %d", got)
	}
}

// TestIdleWatchCollectsSoonAfterBurst: the idle collector looks every
// quarter of Idle, so a process that goes quiet after a burst (a load of
// a million keys, collections during it) collects within a quarter of Idle
// of being quiet with its last collection Idle old, not up to a whole
// period later, when the next burst (a KEYS, say) may have begun; it never
// collects during the burst.
func TestIdleWatchCollectsSoonAfterBurst(t *testing.T) {
	const idle = time.Second
	start := time.Unix(1000, 0)
	const (
		rate  = 200 << 20 // bytes a second during the burst
		every = 400 << 20 // allocated between two of its collections
		end   = 2900 * time.Millisecond
	)
	// The counters at d after the start: bytes allocated in all,
	// collections, the time of the last.
	at := func(d time.Duration) (a, n uint64, last time.Duration) {
		a = uint64(min(d, end).Seconds() * rate)
		n = a / every
		return a, n, time.Duration(float64(n*every) / rate * float64(time.Second))
	}
	w := idleWatch{idle: idle, lastCycle: start}
	const live, heap = 200 << 20, 260 << 20
	var collected time.Duration
	for d := idle / idleLooks; d < 10*time.Second; d += idle / idleLooks {
		a, n, _ := at(d)
		if w.look(start.Add(d), n, a, heap, live, false) {
			collected = d
			break
		}
	}
	_, _, last := at(end)
	due := max(end, last+idle)
	switch {
	case collected == 0:
		t.Fatal("never collected after the burst")
	case collected < end:
		t.Fatalf("collected during the burst, at %v", collected)
	case collected-due > idle/4:
		t.Fatalf("collected at %v, %v after it was due, want within %v", collected, collected-due, idle/4)
	}
}

// The running tuner's idle collector waits while a long read holds Busy
// and while the process allocates, and collects once both stop: the
// wiring of idleCollect's inputs into the collector's loop.
func TestTunerIdleWaitsWhileBusyOrAllocating(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const idle = 20 * time.Millisecond
	garbage := func() {
		for range 64 {
			garbageSink = make([]byte, 256<<10) // 16 MB of garbage
		}
		garbageSink = nil
	}
	for _, c := range []string{"busy", "allocating"} {
		t.Run(c, func(t *testing.T) {
			tu := Start(Policy{Max: 100000, Min: 25, Headroom: 1 << 40, Idle: idle}) // no collection by the target
			defer tu.Stop()
			runtime.GC()
			garbage()
			stop := make(chan struct{})
			done := make(chan struct{})
			if c == "busy" {
				release := Busy()
				go func() { <-stop; release(); close(done) }()
			} else {
				// Far over idleMaxAlloc at every look, made there: a
				// goroutine allocating in a loop could be kept off
				// the processor for a look's period on a loaded machine.
				var kept []byte // written by the idle collector's goroutine only
				hook := func() { kept = make([]byte, 2*idleMaxAlloc); runtime.KeepAlive(kept) }
				beforeLook.Store(&hook)
				go func() { <-stop; beforeLook.Store(nil); close(done) }()
			}
			time.Sleep(20 * idle) // twenty periods, eighty looks
			if n := tu.IdleCollections(); n != 0 {
				t.Fatalf("%s: the idle collector collected %d times meanwhile", c, n)
			}
			close(stop)
			<-done
			garbage()
			deadline := time.Now().Add(10 * time.Second)
			for tu.IdleCollections() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if tu.IdleCollections() == 0 {
				t.Fatalf("%s: no idle collection once it stopped", c)
			}
		})
	}
}

// TestTunerAllow: Allow raises the allowance of new allocation by what it
// is told, for as long as the caller runs and then until the next
// collection; a running caller's allowance outlives collections; all the
// allowances together are bounded by the live heap.
func TestTunerAllow(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const headroom = 4 << 20
	tu := Start(Policy{Max: 400, Min: 1, Headroom: headroom})
	defer tu.Stop()
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitAllowance := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for tu.Allowance() != want {
			if time.Now().After(deadline) {
				t.Fatalf("allowance %d after 20 s, want %d", tu.Allowance(), want)
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for tu.Percent() > 10 { // about 4 MB over 64 MB live
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after 20 s with 64 MB live, want under 10", tu.Percent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	waitAllowance(headroom)

	// 22.5 MB to allocate: the allowance grows by 32 MB, since the
	// runtime may start a cycle at 45/64 of it (and a little more for the
	// garbage on the heap: TestGrant).
	release := Allow(45 << 19)
	allowed := tu.Allowance()
	if allowed < headroom+32<<20 || allowed > headroom+64<<20 {
		t.Fatalf("allowance %d with 22.5 MB allowed, want %d and up to 32 MB more", allowed, headroom+32<<20)
	}
	// The allowance over the 64 MB live (and the test binary's own; the
	// last collection may have found less of it).
	if got, most := currentGOGC(), int(allowed*100/(48<<20)); got < 45 || got > most {
		t.Fatalf("GOGC %d with 22.5 MB allowed over 64 MB live, want 45-%d", got, most)
	}
	for range 2 {
		runtime.GC()
	}
	time.Sleep(10 * time.Millisecond) // finalizers run on their own goroutine
	if got := tu.Allowance(); got != allowed {
		t.Fatalf("allowance %d after collections while the caller runs, want %d", got, allowed)
	}
	release()
	release() // a second call does nothing
	if got := tu.Allowance(); got != allowed {
		t.Fatalf("allowance %d once released, want %d until a collection", got, allowed)
	}
	waitAllowance(headroom)
	if got := currentGOGC(); got > 10 {
		t.Fatalf("GOGC %d after the collection, want under 10 again", got)
	}

	release = Allow(1 << 40)
	if got := tu.Allowance(); got < headroom+64<<20 || got > headroom+128<<20 {
		t.Fatalf("allowance %d with 1 TB allowed and 64 MB live, want the live heap's size above the headroom", got)
	}
	if got := currentGOGC(); got > 150 {
		t.Fatalf("GOGC %d with 1 TB allowed over 64 MB live, want at most about 106", got)
	}
	release()
	waitAllowance(headroom)
	runtime.KeepAlive(live)
}

// TestGrant: Allow's grant is n*64/45 when the allowance has room for the
// garbage already on the heap, and more when it has not: enough that the
// runtime's earliest trigger (45/64 of the allowance above the live heap)
// lies above the heap plus n.
func TestGrant(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct{ n, heap, live, have, want uint64 }{
		{45 * mb, 100 * mb, 100 * mb, 64 * mb, 64 * mb},            // no garbage: the allowance covers it
		{45 * mb, 100 * mb, 100 * mb, 200 * mb, 64 * mb},           // never less than n*64/45
		{45 * mb, 145 * mb, 100 * mb, 64 * mb, 128*mb - 64*mb + 0}, // 45 MB of garbage: 128 MB needed, 64 MB there
		{45 * mb, 190 * mb, 100 * mb, 64 * mb, 192*mb - 64*mb},
		{45 * mb, 0, 100 * mb, 64 * mb, 64 * mb}, // the heap's size unknown
	} {
		if got := grant(c.n, c.heap, c.live, c.have); got != c.want {
			t.Errorf("grant(%d, %d, %d, %d MB) = %d MB, want %d MB", c.n/mb, c.heap/mb, c.live/mb, c.have/mb, got/mb, c.want/mb)
		}
	}
	// The trigger lies above the heap plus n with the grant.
	n, heap, live, have := uint64(58*mb), uint64(215*mb), uint64(152*mb), uint64(64*mb)
	g := grant(n, heap, live, have)
	if trigger := live + (have+g)/64*45; trigger < heap+n {
		t.Errorf("earliest trigger %d MB with the grant, under heap+n %d MB", trigger/mb, (heap+n)/mb)
	}
}

// TestAllowReachesRuntime: what Allow grants reaches the runtime's GOGC
// even when it is small against the live heap: the percent in force,
// over the live heap, is at least the tuner's count of the allowance.
// Before, a raise under an eighth of GOGC was skipped and the percent
// rounded down (16.9 MB live, 4 MB headroom, 600 KB allowed: GOGC stayed
// 26, 4.4 MB in force against 5.1 MB counted).
func TestAllowReachesRuntime(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const headroom = 4 << 20
	tu := Start(Policy{Max: 400, Min: 1, Headroom: headroom})
	defer tu.Stop()
	live := make([][]byte, 16)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	deadline := time.Now().Add(20 * time.Second)
	for tu.Percent() > 30 { // about 4 MB over 16 MB live
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after 20 s with 16 MB live, want under 30", tu.Percent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	before := currentGOGC()
	for _, n := range []uint64{600 << 10, 100 << 10, 1 << 20} {
		release := Allow(n)
		tu.mu.Lock()
		lv := tu.live
		tu.mu.Unlock()
		counted := tu.Allowance()
		gogc := currentGOGC()
		if inForce := lv * uint64(gogc) / 100; inForce < counted {
			t.Errorf("Allow(%d): GOGC %d (before %d), %d bytes in force over %d live, under the %d counted", n, gogc, before, inForce, lv, counted)
		}
		defer release()
	}
	runtime.KeepAlive(live)
}

// TestAllowOverMinPercent: with GOGC held up by Min (a large heap), the
// allowance in force is more than the tuner's count, and Allow's grant
// still brings the runtime's earliest trigger (45/64 of the allowance in
// force above the live heap) above the heap plus n: a grant reckoned
// from the allowance in force but added to the count fell short of it.
func TestAllowOverMinPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const headroom = 1 << 20
	tu := Start(Policy{Max: 400, Min: 50, Headroom: headroom})
	defer tu.Stop()
	live := make([][]byte, 16)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitGOGC(t, tu, 50)
	runtime.GC()
	time.Sleep(10 * time.Millisecond) // the tuner's finalizer
	// 3 MB of garbage (under the earliest trigger, 45/64 of 8 MB), then
	// 4 MB allowed.
	for range 3 {
		allowSink = make([]byte, 1<<20)
	}
	allowSink = nil
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	const n = 4 << 20
	release := Allow(n)
	defer release()
	tu.mu.Lock()
	lv := tu.live
	tu.mu.Unlock()
	gogc := currentGOGC()
	if trigger, need := lv+lv*uint64(gogc)/100*triggerNum/triggerDen, heap[0].Value.Uint64()+n; trigger < need {
		t.Fatalf("GOGC %d over %d live: earliest trigger %d, under the heap plus n %d", gogc, lv, trigger, need)
	}
	runtime.KeepAlive(live)
}

// allowSink makes garbage that the compiler does not elide.
var allowSink []byte
