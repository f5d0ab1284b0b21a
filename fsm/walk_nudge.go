package fsm

import (
	"slices"
	"sync"
	"sync/atomic"
)

// A walk's yields also run the functions registered with OnWalkYield: a
// cluster member's event loop waits for its sockets in the Go runtime's
// network poller, and with one P (GOMAXPROCS=1) the scheduler polls the
// network only when the P has nothing else to run, or from its monitor
// thread every 10 ms. A walk that yields goes straight back on the run
// queue, and between its steps the P runs raft's goroutines or, after a
// collection, the background sweeper, which also yields without ever
// leaving the P idle: the loop's PINGs waited for the monitor, 10 ms at a
// time (runtime/trace of a leader during SCAN's first walk, 2026-11-26).
// So the loop registers a function that checks, without waiting, whether
// its sockets have anything ready and, if so, makes it runnable at once
// (server.eventLoop.nudge); the walk's next yield then lets it run.

type yieldHook struct{ f func() }

var (
	yieldHooksMu sync.Mutex                   // serializes changes
	yieldHooks   atomic.Pointer[[]*yieldHook] // read by a walk's yields
)

// OnWalkYield registers f to run at the yields of every walk in the
// process (at most once a millisecond: parkWalk), until remove is
// called. f must be cheap and must not block.
func OnWalkYield(f func()) (remove func()) {
	h := &yieldHook{f}
	yieldHooksMu.Lock()
	defer yieldHooksMu.Unlock()
	var hooks []*yieldHook
	if p := yieldHooks.Load(); p != nil {
		hooks = slices.Clone(*p)
	}
	hooks = append(hooks, h)
	yieldHooks.Store(&hooks)
	var once sync.Once
	return func() {
		once.Do(func() {
			yieldHooksMu.Lock()
			defer yieldHooksMu.Unlock()
			hooks := slices.DeleteFunc(slices.Clone(*yieldHooks.Load()), func(x *yieldHook) bool { return x == h })
			yieldHooks.Store(&hooks)
		})
	}
}

// runYieldHooks runs the registered functions.
func runYieldHooks() {
	if p := yieldHooks.Load(); p != nil {
		for _, h := range *p {
			h.f()
		}
	}
}

// WalkYieldHooks is how many functions are registered with OnWalkYield
// (for tests: a running loop in the poller has one).
func WalkYieldHooks() int {
	if p := yieldHooks.Load(); p != nil {
		return len(*p)
	}
	return 0
}
