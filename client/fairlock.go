package client

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// FairLock is Redisson's fair RLock: the reentrant lock's hash, plus a
// FIFO queue of waiting owners "redisson_lock_queue:{name}" and a sorted
// set "redisson_lock_timeout:{name}" of their deadlines. The lock goes to
// the waiter at the head of the queue; unlock wakes that waiter alone, on
// its own channel "redisson_lock__channel:{name}:<owner>". A waiter that
// stops asking (its process died) is evicted once its deadline passes:
// the deadline of the waiter before it plus the fair lock wait timeout
// (WithFairLockWaitTimeout, 5 minutes by default).
//
// Deadlines are computed from the client's wall clock, as Redisson does,
// so the clocks of processes sharing a fair lock should agree to well
// within the wait timeout.
type FairLock struct {
	lockBase
	queue    string
	timeouts string
	prefix   string // channel prefix; the waiter's channel adds ":<owner>"
}

// NewFairLock returns a handle on the fair lock name for a fresh owner, or
// for the owner given with WithOwner.
func (c *Client) NewFairLock(name string, opts ...LockOption) *FairLock {
	lc := c.lockConfig(opts)
	prefix := prefixName("redisson_lock__channel", name)
	return &FairLock{
		lockBase: c.newLockBase("fair", name, lc.owner, lc.owner.String(), prefix+":"+lc.owner.String()),
		queue:    prefixName("redisson_lock_queue", name),
		timeouts: prefixName("redisson_lock_timeout", name),
		prefix:   prefix,
	}
}

// Lock takes the lock in turn, waiting as long as ctx allows, with the
// watchdog.
func (l *FairLock) Lock(ctx context.Context) error {
	_, err := l.TryLock(ctx, -1, 0)
	return err
}

// TryLock tries to take the lock within wait (0: one attempt that does
// not queue; negative: as long as ctx allows); lease 0 means the
// watchdog. A waiter that gives up leaves the queue.
func (l *FairLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	watchdog := lease <= 0
	if watchdog {
		lease = l.c.cfg.watchdog
	}
	keys := []string{l.name, l.queue, l.timeouts}
	waitMS := ms(l.c.cfg.fairWait)
	script := scriptFairLock
	if wait == 0 {
		script = scriptFairTryLock
	}
	a := &acquirer{
		channel: l.channel,
		policy:  wakeLock,
		check:   l.heldAfterUnknown,
		undo:    func(ctx context.Context) { _ = l.Unlock(ctx) },
		attempt: func(ctx context.Context) (bool, time.Duration, error) {
			ok, ttl, err := pttlReply(l.c.run(ctx, script, keys, ms(lease), l.field, waitMS, nowMillis()))
			if script == scriptFairTryLock && !ok {
				ttl = -1
			}
			return ok, ttl, err
		},
	}
	if wait != 0 {
		a.giveUp = func(ctx context.Context) {
			l.c.run(ctx, scriptFairCancel, []string{l.name, l.queue, l.timeouts, l.prefix},
				l.field, waitMS, "0", l.c.cfg.publish)
		}
	}
	ok, err := l.c.acquire(ctx, wait, a)
	if ok {
		l.c.renew.acquired(l.key, lease, watchdog, l.renewLease)
	}
	return ok, err
}

// Unlock releases one hold; the last one wakes the next waiter in line.
// See Lock.Unlock for the errors.
func (l *FairLock) Unlock(ctx context.Context) error {
	return l.unlock(ctx, true, func(ctx context.Context, latch string, lease time.Duration) *redis.Cmd {
		return l.c.run(ctx, scriptFairUnlock, []string{l.name, l.queue, l.timeouts, l.prefix, latch},
			"0", ms(lease), l.field, nowMillis(), l.c.cfg.publish, ms(l.c.cfg.latchTTL))
	})
}

// ForceUnlock deletes the lock whoever holds it and wakes the next
// waiter. It reports whether the lock was held.
func (l *FairLock) ForceUnlock(ctx context.Context) (bool, error) {
	return l.forceUnlock(ctx, func(ctx context.Context) *redis.Cmd {
		return l.c.run(ctx, scriptFairForceUnlock, []string{l.name, l.queue, l.timeouts, l.prefix},
			"0", "", "", nowMillis(), l.c.cfg.publish)
	})
}

// QueueLength is how many owners wait in line (stale ones included until
// someone evicts them).
func (l *FairLock) QueueLength(ctx context.Context) (int64, error) {
	return l.c.rdb.LLen(ctx, l.queue).Result()
}
