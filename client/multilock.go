package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Locker is a lock that MultiLock and RedLock can combine: every lock
// handle of this package (Lock, FairLock, FencedLock, SpinLock, ReadLock,
// WriteLock), a MultiLock or RedLock itself, or a type of your own.
type Locker interface {
	// TryLock tries to take the lock within wait (0: one attempt;
	// negative: as long as ctx allows); lease 0 means "keep it alive
	// until Unlock".
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	// Unlock releases one hold.
	Unlock(ctx context.Context) error
	// Name names the lock.
	Name() string
}

// Every lock of the family is a Locker.
var (
	_ Locker = (*Lock)(nil)
	_ Locker = (*FairLock)(nil)
	_ Locker = (*FencedLock)(nil)
	_ Locker = (*SpinLock)(nil)
	_ Locker = (*ReadLock)(nil)
	_ Locker = (*WriteLock)(nil)
	_ Locker = (*MultiLock)(nil)
	_ Locker = (*RedLock)(nil)
)

// leaseSetter is implemented by the locks of this package: a held lock
// gets a new lease.
type leaseSetter interface {
	setLease(ctx context.Context, lease time.Duration) (bool, error)
}

// MultiLock is Redisson's RedissonMultiLock: several locks, possibly on
// different servers, taken as one. TryLock takes them in order and
// succeeds only when it holds every one; when one cannot be had it
// releases those it took and, while wait lasts, starts over. Each lock
// keeps its own owner, lease and watchdog.
type MultiLock struct {
	locks  []Locker
	quorum int
	// lockWait is how long one lock may be waited for, given what is
	// left of the whole wait.
	lockWait func(remain time.Duration) time.Duration
	red      bool
}

// NewMultiLock combines locks into one that is held when all are.
func NewMultiLock(locks ...Locker) *MultiLock {
	return &MultiLock{
		locks:    locks,
		quorum:   len(locks),
		lockWait: func(remain time.Duration) time.Duration { return remain },
	}
}

// Name lists the names of the locks, separated by commas.
func (m *MultiLock) Name() string {
	names := make([]string, len(m.locks))
	for i, l := range m.locks {
		names[i] = l.Name()
	}
	return strings.Join(names, ",")
}

// Locks returns the combined locks.
func (m *MultiLock) Locks() []Locker { return append([]Locker(nil), m.locks...) }

// Lock takes the locks, trying again as long as ctx allows; they are kept
// alive by their watchdogs.
func (m *MultiLock) Lock(ctx context.Context) error { return m.LockLease(ctx, 0) }

// LockLease takes the locks, trying again as long as ctx allows; with
// lease > 0 they expire after lease.
func (m *MultiLock) LockLease(ctx context.Context, lease time.Duration) error {
	if len(m.locks) == 0 {
		return ErrNoLocks
	}
	base := time.Duration(len(m.locks)) * 1500 * time.Millisecond
	for {
		wait := base
		if lease > 0 {
			if lease <= base {
				wait = lease/2 + rand.N(lease/2+1)
			} else {
				wait = base + rand.N(lease-base+1)
			}
		}
		ok, err := m.TryLock(ctx, wait, lease)
		if ok || err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// TryLock tries to take the locks within wait (0: one attempt on each;
// negative: as long as ctx allows). With lease > 0 each lock is taken
// with a lease of twice the wait (so that the first ones do not expire
// while the last ones are awaited) and set to lease once all are held;
// lease 0 means each lock's watchdog.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if len(m.locks) == 0 {
		return false, ErrNoLocks
	}
	if wait < 0 {
		err := m.LockLease(ctx, lease)
		return err == nil, err
	}
	start := time.Now()
	lockLease := lease
	if lease > 0 && wait > 0 {
		lockLease = 2 * wait
	}
	failures := len(m.locks) - m.quorum
	var held []Locker
	for i := 0; i < len(m.locks); i++ {
		l := m.locks[i]
		lockWait := time.Duration(0)
		if wait > 0 {
			lockWait = max(min(m.lockWait(wait-time.Since(start)), wait-time.Since(start)), 0)
		}
		ok, err := l.TryLock(ctx, lockWait, lockLease)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				m.release(held)
				return false, cerr
			}
			if errors.Is(err, ErrClosed) {
				m.release(held)
				return false, err
			}
			// The server may have taken it before failing to answer;
			// clean up without holding up the others.
			go m.release([]Locker{l})
			ok = false
		}
		if ok {
			held = append(held, l)
		} else {
			if len(m.locks)-len(held) == failures {
				break // a quorum is held already
			}
			if failures == 0 {
				m.release(held)
				held = nil
				if wait <= 0 || time.Since(start) >= wait {
					return false, nil
				}
				failures = len(m.locks) - m.quorum
				i = -1
				continue
			}
			failures--
		}
		if wait > 0 && time.Since(start) >= wait {
			m.release(held)
			return false, nil
		}
	}
	if m.red && lease > 0 && time.Since(start) >= lease {
		// Taking them took longer than the lease: none can be trusted.
		m.release(held)
		return false, nil
	}
	if lease > 0 {
		for _, l := range held {
			if s, ok := l.(leaseSetter); ok {
				s.setLease(ctx, lease)
			}
		}
	}
	return true, nil
}

// release unlocks locks on a best-effort basis, in parallel, each with
// its own short deadline, and ignores the answers.
func (m *MultiLock) release(locks []Locker) {
	var wg sync.WaitGroup
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = l.Unlock(ctx)
		}()
	}
	wg.Wait()
}

// Unlock releases every lock, in parallel. A MultiLock waits for all and
// returns every error (joined). A RedLock returns as soon as a quorum of
// its locks unlocked (the others finish in the background), or with the
// errors when a quorum cannot be reached.
func (m *MultiLock) Unlock(ctx context.Context) error {
	if len(m.locks) == 0 {
		return ErrNoLocks
	}
	results := make(chan error, len(m.locks))
	for _, l := range m.locks {
		go func() { results <- l.Unlock(ctx) }()
	}
	var errs []error
	done := 0
	for range m.locks {
		err := <-results
		if err != nil {
			errs = append(errs, err)
		} else {
			done++
		}
		if m.red && done >= m.quorum {
			return nil
		}
		if m.red && len(errs) > len(m.locks)-m.quorum {
			break
		}
	}
	return errors.Join(errs...)
}
