package client

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// SpinLock is Redisson's RSpinLock: the reentrant lock's hash and field,
// without pub/sub. Waiters poll with exponential back-off (1 ms doubling
// to 128 ms, jittered), which suits short critical sections and setups
// where pub/sub is unavailable or too costly. Its unlock publishes
// nothing.
type SpinLock struct {
	lockBase
}

// NewSpinLock returns a handle on the spin lock name for a fresh owner,
// or for the owner given with WithOwner.
func (c *Client) NewSpinLock(name string, opts ...LockOption) *SpinLock {
	lc := c.lockConfig(opts)
	return &SpinLock{lockBase: c.newLockBase("spin", name, lc.owner, lc.owner.String(), "")}
}

// Lock takes the lock, polling as long as ctx allows, with the watchdog.
func (l *SpinLock) Lock(ctx context.Context) error {
	_, err := l.TryLock(ctx, -1, 0)
	return err
}

// TryLock tries to take the lock within wait (0: one attempt; negative:
// as long as ctx allows); lease 0 means the watchdog.
func (l *SpinLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.tryLock(ctx, wait, lease, scriptLock, l.Unlock)
}

// Unlock releases one hold; see Lock.Unlock for the errors.
func (l *SpinLock) Unlock(ctx context.Context) error {
	return l.unlock(ctx, false, func(ctx context.Context, _ string, lease time.Duration) *redis.Cmd {
		return l.c.run(ctx, scriptSpinUnlock, []string{l.name}, ms(lease), l.field)
	})
}

// ForceUnlock deletes the lock whoever holds it.
func (l *SpinLock) ForceUnlock(ctx context.Context) (bool, error) {
	l.c.renew.dropAll(l.kind + "\x00" + l.name + "\x00")
	n, err := l.c.rdb.Del(ctx, l.name).Result()
	return n == 1, err
}
