package family

import (
	"context"
	"time"
)

// MultiLockWaitPerLock is how long a MultiLock waits for each of its locks
// when it may wait (Redisson: 1500 ms per lock).
const MultiLockWaitPerLock = 1500 * time.Millisecond

// MultiLock is Redisson's MultiLock (every lock must be granted) and, with
// Quorum set, its RedLock (a majority must be): reentrant locks on
// independent nodes, taken in order; a failed attempt releases what it
// took and starts over until the wait has passed.
type MultiLock struct {
	Locks []*RLock
	// Quorum is how many locks must be granted: len(Locks) if zero
	// (MultiLock); len(Locks)/2+1 for RedLock.
	Quorum int
}

// NewRedLock returns a MultiLock that needs a majority of locks.
func NewRedLock(locks ...*RLock) *MultiLock {
	return &MultiLock{Locks: locks, Quorum: len(locks)/2 + 1}
}

func (m *MultiLock) quorum() int {
	if m.Quorum > 0 {
		return m.Quorum
	}
	return len(m.Locks)
}

// TryLock takes the locks within wait; lease > 0 leases each granted
// lock for that long (after they are all taken, as Redisson does with
// PEXPIRE), lease <= 0 takes them with their watchdogs.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	perLock := wait
	if perLock > MultiLockWaitPerLock {
		perLock = MultiLockWaitPerLock
	}
	// While the locks are taken, lease each for twice the wait (Redisson)
	// so that none runs out before the last is granted.
	takeLease := lease
	if lease > 0 {
		takeLease = 2 * wait
		if takeLease < lease {
			takeLease = lease
		}
	}
	for {
		var got []*RLock
		failed := 0
		allowed := len(m.Locks) - m.quorum()
		for _, l := range m.Locks {
			w := perLock
			if r := time.Until(deadline); r < w {
				w = r
			}
			ok, err := l.TryLock(ctx, max(w, 0), takeLease)
			if err != nil {
				ok = false
			}
			if ok {
				got = append(got, l)
				continue
			}
			failed++
			if failed > allowed {
				break
			}
		}
		if len(got) >= m.quorum() {
			if lease > 0 {
				for _, l := range got {
					l.C.PExpire(ctx, l.Name, lease)
				}
			}
			return true, nil
		}
		m.unlockAll(ctx, got)
		if time.Until(deadline) <= 0 || ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
}

// Unlock releases every lock (errors from unreachable nodes are ignored,
// as Redisson does).
func (m *MultiLock) Unlock(ctx context.Context) {
	m.unlockAll(ctx, m.Locks)
}

func (m *MultiLock) unlockAll(ctx context.Context, locks []*RLock) {
	for _, l := range locks {
		uctx, cancel := context.WithTimeout(ctx, time.Second)
		l.Unlock(uctx)
		cancel()
	}
}
