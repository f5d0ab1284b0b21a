package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// FencedLock is Redisson's RFencedLock: the reentrant lock (same hash,
// field and channel) plus a counter "redisson_lock_token:{name}" that is
// incremented by every acquisition, re-entries included. The token a
// holder gets is larger than every token handed out before, so a storage
// service that remembers the largest token it has seen can refuse writes
// from a holder whose lease ran out while it was paused (Kleppmann's
// fencing).
type FencedLock struct {
	lockBase
	tokenKey string
}

// NewFencedLock returns a handle on the fenced lock name for a fresh
// owner, or for the owner given with WithOwner.
func (c *Client) NewFencedLock(name string, opts ...LockOption) *FencedLock {
	lc := c.lockConfig(opts)
	return &FencedLock{
		lockBase: c.newLockBase("lock", name, lc.owner, lc.owner.String(), prefixName("redisson_lock__channel", name)),
		tokenKey: prefixName("redisson_lock_token", name),
	}
}

// LockAndGetToken takes the lock, waiting as long as ctx allows, keeps it
// alive with the watchdog, and returns this acquisition's token.
func (l *FencedLock) LockAndGetToken(ctx context.Context) (int64, error) {
	token, _, err := l.TryLockAndGetToken(ctx, -1, 0)
	return token, err
}

// TryLockAndGetToken is TryLock that also returns the token of the
// acquisition (0 when not acquired).
func (l *FencedLock) TryLockAndGetToken(ctx context.Context, wait, lease time.Duration) (int64, bool, error) {
	watchdog := lease <= 0
	if watchdog {
		lease = l.c.cfg.watchdog
	}
	var token int64
	a := &acquirer{
		channel: l.channel,
		policy:  wakeLock,
		check: func(ctx context.Context) (bool, error) {
			held, err := l.heldAfterUnknown(ctx)
			if err != nil || !held {
				return held, err
			}
			// Only the holder increments the counter, so its value now
			// is the lost reply's token.
			token, err = l.Token(ctx)
			return err == nil, err
		},
		undo: func(ctx context.Context) { _ = l.Unlock(ctx) },
		attempt: func(ctx context.Context) (bool, time.Duration, error) {
			v, err := l.c.run(ctx, scriptFencedLock, []string{l.name, l.tokenKey}, ms(lease), l.field).Int64Slice()
			if err != nil {
				return false, 0, err
			}
			if len(v) != 2 {
				return false, 0, fmt.Errorf("%w: fenced lock script answered %v", ErrBadReply, v)
			}
			if v[0] == -1 {
				token = v[1]
				return true, 0, nil
			}
			if v[0] < 0 {
				return false, -1, nil
			}
			return false, time.Duration(v[0]) * time.Millisecond, nil
		},
	}
	ok, err := l.c.acquire(ctx, wait, a)
	if !ok {
		return 0, false, err
	}
	l.c.renew.acquired(l.key, lease, watchdog, l.renewLease)
	return token, true, err
}

// Lock takes the lock, waiting as long as ctx allows, with the watchdog.
func (l *FencedLock) Lock(ctx context.Context) error {
	_, err := l.LockAndGetToken(ctx)
	return err
}

// TryLock is TryLockAndGetToken without the token.
func (l *FencedLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, ok, err := l.TryLockAndGetToken(ctx, wait, lease)
	return ok, err
}

// Token returns the latest token handed out (0 before the first).
func (l *FencedLock) Token(ctx context.Context) (int64, error) {
	n, err := l.c.rdb.Get(ctx, l.tokenKey).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// Unlock releases one hold, as Lock.Unlock.
func (l *FencedLock) Unlock(ctx context.Context) error {
	return l.unlock(ctx, true, func(ctx context.Context, latch string, lease time.Duration) *redis.Cmd {
		return l.c.run(ctx, scriptUnlock, []string{l.name, l.channel, latch},
			"0", ms(lease), l.field, l.c.cfg.publish, ms(l.c.cfg.latchTTL))
	})
}

// ForceUnlock deletes the lock whoever holds it; the token counter stays.
func (l *FencedLock) ForceUnlock(ctx context.Context) (bool, error) {
	return l.forceUnlock(ctx, func(ctx context.Context) *redis.Cmd {
		return l.c.run(ctx, scriptForceUnlock, []string{l.name, l.channel}, "0", l.c.cfg.publish)
	})
}
