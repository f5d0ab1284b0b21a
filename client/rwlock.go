package client

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadWriteLock is Redisson's RReadWriteLock: one hash name with a field
// "mode" ("read" or "write"). Any number of owners may read at once; one
// owner writes, alone. The writer may also take the read lock
// (downgrade); a reader cannot take the write lock while it reads (it
// would wait for itself, as in Redisson).
//
//   - a reader holds field "<owner>" → count, and for its n-th hold a key
//     "{name}:<owner>:rwlock_timeout:<n>" that carries that hold's lease;
//     the hash lives as long as the longest-lived hold;
//   - the writer holds field "<owner>:write" → count;
//   - waiters sleep on "redisson_rwlock:{name}": a read unlock publishes
//     "0" (wakes one waiter), a write unlock "1" (wakes them all).
type ReadWriteLock struct {
	c     *Client
	name  string
	owner Owner
}

// NewReadWriteLock returns the read-write lock name for a fresh owner, or
// for the owner given with WithOwner; its ReadLock and WriteLock act for
// that owner.
func (c *Client) NewReadWriteLock(name string, opts ...LockOption) *ReadWriteLock {
	lc := c.lockConfig(opts)
	return &ReadWriteLock{c: c, name: name, owner: lc.owner}
}

// Name is the lock's key.
func (rw *ReadWriteLock) Name() string { return rw.name }

// Owner is the owner both halves act for.
func (rw *ReadWriteLock) Owner() Owner { return rw.owner }

// ReadLock returns the shared half.
func (rw *ReadWriteLock) ReadLock() *ReadLock {
	channel := prefixName("redisson_rwlock", rw.name)
	field := rw.owner.String()
	l := &ReadLock{
		lockBase:      rw.c.newLockBase("read", rw.name, rw.owner, field, channel),
		writeField:    field + ":write",
		timeoutPrefix: suffixName(rw.name, field) + ":rwlock_timeout",
	}
	l.readPrefix = tagged(rw.name)
	return l
}

// WriteLock returns the exclusive half.
func (rw *ReadWriteLock) WriteLock() *WriteLock {
	channel := prefixName("redisson_rwlock", rw.name)
	return &WriteLock{lockBase: rw.c.newLockBase("write", rw.name, rw.owner, rw.owner.String()+":write", channel)}
}

// tagged is the name with a hash tag: "{name}", or name itself when it
// has one.
func tagged(name string) string {
	s := suffixName(name, "")
	return s[:len(s)-1]
}

// ReadLock is the shared half of a ReadWriteLock.
type ReadLock struct {
	lockBase
	writeField    string
	timeoutPrefix string
}

// Lock takes a read hold, waiting as long as ctx allows, with the
// watchdog.
func (l *ReadLock) Lock(ctx context.Context) error {
	_, err := l.TryLock(ctx, -1, 0)
	return err
}

// TryLock tries to take a read hold within wait (0: one attempt;
// negative: as long as ctx allows); lease 0 means the watchdog.
func (l *ReadLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	watchdog := lease <= 0
	if watchdog {
		lease = l.c.cfg.watchdog
	}
	keys := []string{l.name, l.timeoutPrefix}
	a := &acquirer{
		channel: l.channel,
		policy:  wakeLock,
		check:   l.heldAfterUnknown,
		undo:    func(ctx context.Context) { _ = l.Unlock(ctx) },
		attempt: func(ctx context.Context) (bool, time.Duration, error) {
			return pttlReply(l.c.run(ctx, scriptReadLock, keys, ms(lease), l.field, l.writeField))
		},
	}
	ok, err := l.c.acquire(ctx, wait, a)
	if ok {
		l.c.renew.acquired(l.key, lease, watchdog, l.renewLease)
	}
	return ok, err
}

// Unlock releases one read hold; see Lock.Unlock for the errors.
func (l *ReadLock) Unlock(ctx context.Context) error {
	return l.unlock(ctx, true, func(ctx context.Context, latch string, _ time.Duration) *redis.Cmd {
		return l.c.run(ctx, scriptReadUnlock, []string{l.name, l.channel, l.timeoutPrefix, l.readPrefix, latch},
			"0", l.field, l.c.cfg.publish, ms(l.c.cfg.latchTTL))
	})
}

// ForceUnlock deletes the lock when it is in read mode, whoever reads.
func (l *ReadLock) ForceUnlock(ctx context.Context) (bool, error) {
	return l.forceUnlock(ctx, func(ctx context.Context) *redis.Cmd {
		return l.c.run(ctx, scriptRWForceUnlock, []string{l.name, l.channel}, "0", l.c.cfg.publish, "read")
	})
}

// IsLocked reports whether the lock is in read mode.
func (l *ReadLock) IsLocked(ctx context.Context) (bool, error) {
	return modeIs(ctx, l.c, l.name, "read")
}

// WriteLock is the exclusive half of a ReadWriteLock.
type WriteLock struct {
	lockBase
}

// Lock takes the write lock, waiting as long as ctx allows, with the
// watchdog.
func (l *WriteLock) Lock(ctx context.Context) error {
	_, err := l.TryLock(ctx, -1, 0)
	return err
}

// TryLock tries to take the write lock within wait (0: one attempt;
// negative: as long as ctx allows); lease 0 means the watchdog.
func (l *WriteLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.tryLock(ctx, wait, lease, scriptWriteLock, l.Unlock)
}

// Unlock releases one write hold; the last one wakes every waiter. See
// Lock.Unlock for the errors.
func (l *WriteLock) Unlock(ctx context.Context) error {
	return l.unlock(ctx, true, func(ctx context.Context, latch string, lease time.Duration) *redis.Cmd {
		return l.c.run(ctx, scriptWriteUnlock, []string{l.name, l.channel, latch},
			"1", ms(lease), l.field, l.c.cfg.publish, ms(l.c.cfg.latchTTL))
	})
}

// ForceUnlock deletes the lock when it is in write mode.
func (l *WriteLock) ForceUnlock(ctx context.Context) (bool, error) {
	return l.forceUnlock(ctx, func(ctx context.Context) *redis.Cmd {
		return l.c.run(ctx, scriptRWForceUnlock, []string{l.name, l.channel}, "1", l.c.cfg.publish, "write")
	})
}

// IsLocked reports whether the lock is in write mode.
func (l *WriteLock) IsLocked(ctx context.Context) (bool, error) {
	return modeIs(ctx, l.c, l.name, "write")
}

func modeIs(ctx context.Context, c *Client, name, mode string) (bool, error) {
	m, err := c.rdb.HGet(ctx, name, "mode").Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return m == mode, err
}
