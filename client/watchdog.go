package client

import (
	"context"
	"sync"
	"time"
)

// The watchdog and the client's record of what its owners hold.
//
// For every (object, owner) that holds a lock through this Client there is
// one holding: how many holds were taken and not yet released, how many of
// them asked for the watchdog (no lease given), and the lease to restore
// when a re-entered hold is released. The record lets Unlock tell
// ErrLockLost (we took it, it is gone) from ErrNotOwner (we never had it),
// and it is shared by every handle of the same owner, as Redisson's
// renewal map is shared by the threads of one client.
//
// While at least one watchdog hold remains, one goroutine renews the lease
// every lease/3. A renewal that finds the lock gone marks the holding lost
// and stops; renewals that fail on errors are retried until a whole lease
// has passed since the last good one, and then the holding is lost too
// (the server may have let the lock expire).

type renewFunc func(ctx context.Context, lease time.Duration) (bool, error)

type renewals struct {
	c  *Client
	mu sync.Mutex
	m  map[string]*holding
}

type holding struct {
	count int           // holds taken through this client, not released
	dogs  int           // of which the watchdog keeps alive
	lease time.Duration // lease of the latest hold
	renew renewFunc
	stop  chan struct{} // non-nil while the watchdog runs
	lost  chan struct{} // closed when the hold is known lost
	gone  bool
}

func newRenewals(c *Client) *renewals {
	return &renewals{c: c, m: make(map[string]*holding)}
}

// acquired records a hold just taken. lease is the lease it was taken
// with; watchdog says whether the watchdog must keep it alive.
func (r *renewals) acquired(key string, lease time.Duration, watchdog bool, renew renewFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.m[key]
	if h == nil || h.gone {
		if h != nil && h.stop != nil {
			close(h.stop)
		}
		h = &holding{lost: make(chan struct{})}
		r.m[key] = h
	}
	h.count++
	h.lease = lease
	h.renew = renew
	if !watchdog {
		return
	}
	h.dogs++
	if h.stop == nil && !r.c.closed() {
		h.stop = make(chan struct{})
		go r.watch(key, h, h.stop, lease)
	}
}

// lease returns the lease to restore on a partial unlock.
func (r *renewals) lease(key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.m[key]; h != nil && h.lease > 0 {
		return h.lease
	}
	return r.c.cfg.watchdog
}

// setLease records the lease a hold was moved to.
func (r *renewals) setLease(key string, lease time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.m[key]; h != nil {
		h.lease = lease
	}
}

// released records an unlock: full says the lock is free now.
func (r *renewals) released(key string, full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.m[key]
	if h == nil {
		return
	}
	if !full && h.count > 1 {
		h.count--
		h.dogs = min(h.dogs, h.count)
		if h.dogs == 0 {
			h.stopDog()
		}
		return
	}
	h.stopDog()
	delete(r.m, key)
}

// missing records that the server says the owner does not hold the lock.
// It reports whether this client had taken it (so it was lost).
func (r *renewals) missing(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.m[key]
	if h == nil {
		return false
	}
	h.stopDog()
	delete(r.m, key)
	return h.count > 0 || h.gone
}

// held returns how many holds this client took for key and not released.
func (r *renewals) held(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.m[key]; h != nil && !h.gone {
		return h.count
	}
	return 0
}

// lostChan returns the channel closed when the current hold is lost, or
// nil when the owner holds nothing through this client.
func (r *renewals) lostChan(key string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.m[key]; h != nil {
		return h.lost
	}
	return nil
}

// dropAll marks every hold whose key starts with prefix lost (a forced
// unlock through this client).
func (r *renewals) dropAll(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, h := range r.m {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			h.markLost()
		}
	}
}

func (r *renewals) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.m {
		h.stopDog()
	}
}

func (h *holding) stopDog() {
	if h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
}

func (h *holding) markLost() {
	h.stopDog()
	if !h.gone {
		h.gone = true
		close(h.lost)
	}
}

// watch renews one holding every lease/3 until stopped or lost.
func (r *renewals) watch(key string, h *holding, stop chan struct{}, lease time.Duration) {
	interval := lease / 3
	lastGood := time.Now()
	retry := 50 * time.Millisecond
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.c.done:
			return
		case <-t.C:
		}
		r.mu.Lock()
		renew := h.renew
		r.mu.Unlock()
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), max(interval, time.Second))
		ok, err := renew(ctx, lease)
		cancel()
		switch {
		case err == nil && ok:
			lastGood = sent
			retry = 50 * time.Millisecond
			t.Reset(interval)
			continue
		case err == nil || time.Since(lastGood) >= lease:
			// Gone, or unknown for longer than the lease: lost.
			r.mu.Lock()
			if r.m[key] == h && h.stop == stop {
				h.markLost()
			}
			r.mu.Unlock()
			return
		default:
			t.Reset(min(retry, interval))
			retry = min(2*retry, time.Second)
		}
	}
}
