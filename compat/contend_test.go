package compat

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Contention settings: workers goroutines each take the lock iters times.
const (
	workers = 8
	iters   = 25
)

// locker takes a distributed lock, waiting for it, and returns the
// function that releases it.
type locker func(ctx context.Context) (unlock func(ctx context.Context) error, err error)

// contend has workers goroutines each lock, update a shared counter
// without atomics inside the critical section, and unlock, iters times.
// It fails if a goroutine ever entered while another was inside, or if an
// update was lost. Each worker gets its own locker from newLocker, as
// separate processes would have. The first error stops every worker.
func contend(t *testing.T, newLocker func(worker int) locker) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	var (
		holders, overlaps atomic.Int32
		counter           int // guarded by the distributed lock only
		wg                sync.WaitGroup
		firstErr          error
		once              sync.Once
	)
	// fail keeps the first error only: the others are mostly the
	// workers stopped by cancel.
	fail := func(err error) {
		once.Do(func() { firstErr = err })
		cancel()
	}
	for w := range workers {
		lock := newLocker(w)
		wg.Go(func() {
			for range iters {
				unlock, err := lock(ctx)
				if err != nil {
					fail(err)
					return
				}
				if holders.Add(1) > 1 {
					overlaps.Add(1)
				}
				v := counter
				runtime.Gosched() // widen the window for a second holder
				counter = v + 1
				holders.Add(-1)
				if err := unlock(ctx); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Error(firstErr)
	}
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d times a goroutine entered while another held the lock", n)
	}
	if want := workers * iters; firstErr == nil && counter != want {
		t.Errorf("counter = %d, want %d (updates lost: mutual exclusion failed)", counter, want)
	}
}
