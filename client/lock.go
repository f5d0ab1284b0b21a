package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lock is Redisson's RLock: a reentrant lock stored as a hash whose one
// field, the owner id "<uuid>:<thread>", counts the owner's holds. Waiters
// sleep on the channel "redisson_lock__channel:{name}" until an unlock
// publishes "0" there, or the holder's lease runs out.
//
// A Lock handle belongs to one Owner (see NewLock). Calls through it from
// any goroutine act for that owner: a second Lock re-enters and needs a
// second Unlock. Goroutines that must exclude each other use handles of
// their own.
type Lock struct {
	lockBase
}

// NewLock returns a handle on the reentrant lock name for a fresh owner,
// or for the owner given with WithOwner. It does no I/O.
func (c *Client) NewLock(name string, opts ...LockOption) *Lock {
	lc := c.lockConfig(opts)
	return &Lock{lockBase: c.newLockBase("lock", name, lc.owner, lc.owner.String(), prefixName("redisson_lock__channel", name))}
}

// Lock takes the lock, waiting as long as ctx allows. The watchdog keeps
// it alive until Unlock.
func (l *Lock) Lock(ctx context.Context) error {
	_, err := l.TryLock(ctx, -1, 0)
	return err
}

// LockLease takes the lock, waiting as long as ctx allows; it expires
// after lease unless unlocked before (no watchdog).
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) error {
	if lease <= 0 {
		return l.Lock(ctx)
	}
	_, err := l.TryLock(ctx, -1, lease)
	return err
}

// TryLock tries to take the lock within wait (0: one attempt; negative:
// as long as ctx allows). A positive lease makes the lock expire after it;
// lease 0 keeps it alive with the watchdog until Unlock. It reports false
// with a nil error when wait ran out.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.tryLock(ctx, wait, lease, scriptLock, l.Unlock)
}

// Unlock releases one hold. It returns ErrLockLost when this client took
// the lock for the owner but it has since expired or been taken away, and
// ErrNotOwner when the owner does not hold it.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.unlock(ctx, true, func(ctx context.Context, latch string, lease time.Duration) *redis.Cmd {
		return l.c.run(ctx, scriptUnlock, []string{l.name, l.channel, latch},
			"0", ms(lease), l.field, l.c.cfg.publish, ms(l.c.cfg.latchTTL))
	})
}

// ForceUnlock deletes the lock whoever holds it and wakes a waiter. It
// reports whether the lock was held.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	return l.forceUnlock(ctx, func(ctx context.Context) *redis.Cmd {
		return l.c.run(ctx, scriptForceUnlock, []string{l.name, l.channel}, "0", l.c.cfg.publish)
	})
}

// lockBase is what the hash-based locks share: naming, the owner's hash
// field, the wait loop, unlock with its latch, and the queries.
type lockBase struct {
	c       *Client
	kind    string
	name    string
	owner   Owner
	field   string // this owner's field in the lock hash
	channel string // where unlocks are published
	key     string // this owner's holding in the client's record
	// readPrefix is set for read locks, whose renewal also extends the
	// timeout keys "<readPrefix>:<owner>:rwlock_timeout:<n>".
	readPrefix string
}

func (c *Client) newLockBase(kind, name string, owner Owner, field, channel string) lockBase {
	return lockBase{
		c: c, kind: kind, name: name, owner: owner, field: field, channel: channel,
		key: kind + "\x00" + name + "\x00" + field,
	}
}

// Name is the lock's key.
func (l *lockBase) Name() string { return l.name }

// Owner is the owner this handle acts for.
func (l *lockBase) Owner() Owner { return l.owner }

// IsLocked reports whether anyone holds the lock.
func (l *lockBase) IsLocked(ctx context.Context) (bool, error) {
	n, err := l.c.rdb.Exists(ctx, l.name).Result()
	return n == 1, err
}

// IsHeld reports whether this handle's owner holds the lock.
func (l *lockBase) IsHeld(ctx context.Context) (bool, error) {
	return l.c.rdb.HExists(ctx, l.name, l.field).Result()
}

// HoldCount is how many times this handle's owner holds the lock (0 when
// it does not).
func (l *lockBase) HoldCount(ctx context.Context) (int, error) {
	n, err := l.c.rdb.HGet(ctx, l.name, l.field).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// RemainTTL is how long the lock's current lease has left; 0 when the
// lock is free, -1 when it has no expiry.
func (l *lockBase) RemainTTL(ctx context.Context) (time.Duration, error) {
	n, err := l.c.rdb.Do(ctx, "PTTL", l.name).Int64()
	if err != nil {
		return 0, err
	}
	switch {
	case n == -2:
		return 0, nil
	case n < 0:
		return -1, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// Lost returns a channel that is closed when this client finds that the
// owner's current hold was lost: the watchdog found the lock gone or
// could not renew it within a lease, or ForceUnlock ran through this
// client. It is nil when the owner holds nothing through this client, and
// it is not closed by a normal Unlock.
func (l *lockBase) Lost() <-chan struct{} { return l.c.renew.lostChan(l.key) }

// renewLease sets the lease of a lock the owner holds to lease, and
// reports whether the owner holds it: the watchdog's renewal.
func (l *lockBase) renewLease(ctx context.Context, lease time.Duration) (bool, error) {
	if l.readPrefix != "" {
		n, err := l.c.run(ctx, scriptReadRenew, []string{l.name, l.readPrefix}, ms(lease), l.field).Int64()
		return n == 1, err
	}
	n, err := l.c.run(ctx, scriptRenew, []string{l.name}, ms(lease), l.field).Int64()
	return n == 1, err
}

// setLease gives a held lock a new lease (MultiLock and RedLock use it
// once all their locks are taken).
func (l *lockBase) setLease(ctx context.Context, lease time.Duration) (bool, error) {
	ok, err := l.renewLease(ctx, lease)
	if ok {
		l.c.renew.setLease(l.key, lease)
	}
	return ok, err
}

// heldAfterUnknown is the check after an attempt with an unknown outcome:
// when this client holds nothing for the owner yet, the field's presence
// says the attempt took the lock.
func (l *lockBase) heldAfterUnknown(ctx context.Context) (bool, error) {
	if l.c.renew.held(l.key) > 0 {
		return false, nil
	}
	return l.c.rdb.HExists(ctx, l.name, l.field).Result()
}

// tryLock runs the wait loop around a script with Redisson's lock replies
// (nil: acquired; integer: the holder's PTTL).
// undo is the handle's Unlock, used to release a hold that an attempt cut
// short by the caller's context took after all.
func (l *lockBase) tryLock(ctx context.Context, wait, lease time.Duration, script *redis.Script, undo func(context.Context) error) (bool, error) {
	watchdog := lease <= 0
	if watchdog {
		lease = l.c.cfg.watchdog
	}
	a := &acquirer{
		channel: l.channel,
		policy:  wakeLock,
		check:   l.heldAfterUnknown,
		undo:    func(ctx context.Context) { _ = undo(ctx) },
		attempt: func(ctx context.Context) (bool, time.Duration, error) {
			return pttlReply(l.c.run(ctx, script, []string{l.name}, ms(lease), l.field))
		},
	}
	ok, err := l.c.acquire(ctx, wait, a)
	if ok {
		l.c.renew.acquired(l.key, lease, watchdog, l.renewLease)
	}
	return ok, err
}

// pttlReply reads a lock script's reply: nil means acquired, an integer
// is the holder's remaining lease (negative: none known).
func pttlReply(cmd *redis.Cmd) (bool, time.Duration, error) {
	v, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, 0, fmt.Errorf("%w: lock script answered %T %v", ErrBadReply, v, v)
	}
	if n < 0 {
		return false, -1, nil
	}
	return false, time.Duration(n) * time.Millisecond, nil
}

// unlock runs an unlock script. With latched set the script gets a fresh
// latch key, is retried with the same latch on transient errors, and the
// latch is deleted after; without, only errors that prove the script did
// not run are retried.
func (l *lockBase) unlock(ctx context.Context, latched bool, run func(ctx context.Context, latch string, lease time.Duration) *redis.Cmd) error {
	var latch string
	if latched {
		latch = prefixName("redisson_unlock_latch", l.name) + ":" + newUUID()
	}
	lease := l.c.renew.lease(l.key)
	var v any
	err := l.c.retryIdempotent(ctx, l.c.cfg.latchTTL/2, latched, func(ctx context.Context) error {
		var err error
		v, err = run(ctx, latch, lease).Result()
		return err
	})
	if errors.Is(err, redis.Nil) {
		if l.c.renew.missing(l.key) {
			return ErrLockLost
		}
		return ErrNotOwner
	}
	if err != nil {
		return err
	}
	if latched {
		l.c.rdb.Del(ctx, latch)
	}
	n, ok := v.(int64)
	if !ok {
		return fmt.Errorf("%w: unlock script answered %T %v", ErrBadReply, v, v)
	}
	l.c.renew.released(l.key, n == 1)
	return nil
}

// forceUnlock runs a force-unlock script and marks every hold of this
// lock taken through this client lost.
func (l *lockBase) forceUnlock(ctx context.Context, run func(ctx context.Context) *redis.Cmd) (bool, error) {
	l.c.renew.dropAll(l.kind + "\x00" + l.name + "\x00")
	n, err := run(ctx).Int64()
	return n == 1, err
}
