package compat

import (
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

// contend has workers goroutines each lock, update a shared counter
// without atomics inside the critical section, and unlock, iters times.
// It fails if two goroutines were ever inside at once (holders > 1) or
// if an update was lost. lock returns the unlock function; each worker
// gets its own locker from newLocker, as separate processes would.
func contend(t *testing.T, newLocker func(worker int) func() (unlock func() error, err error)) {
	t.Helper()
	var (
		holders, overlaps atomic.Int32
		counter           int // guarded by the distributed lock only
		wg                sync.WaitGroup
		errs              = make(chan error, workers)
	)
	for w := range workers {
		lock := newLocker(w)
		wg.Go(func() {
			for range iters {
				unlock, err := lock()
				if err != nil {
					errs <- err
					return
				}
				if holders.Add(1) > 1 {
					overlaps.Add(1)
				}
				v := counter
				runtime.Gosched() // widen the window for a second holder
				counter = v + 1
				holders.Add(-1)
				if err := unlock(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d times a goroutine entered while another held the lock", n)
	}
	if want := workers * iters; counter != want {
		t.Errorf("counter = %d, want %d (updates lost: mutual exclusion failed)", counter, want)
	}
}
