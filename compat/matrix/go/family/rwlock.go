package family

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	readLockScript    = load("rw_read_lock")
	readUnlockScript  = load("rw_read_unlock")
	readRenewScript   = load("rw_read_renew")
	writeLockScript   = load("rw_write_lock")
	writeUnlockScript = load("rw_write_unlock")
)

// RWLock is Redisson's read-write lock: one hash Name with a mode field
// (read or write) and a field per holder; each read hold has a timeout key
// {name}:<owner>:rwlock_timeout:<n> that the scripts name themselves.
// Unlocks publish on redisson_rwlock:{name}: 0 after a read unlock, 1
// after a write unlock.
type RWLock struct {
	C     redis.UniversalClient
	Name  string
	Owner string
}

// Channel is redisson_rwlock:{name}.
func (l *RWLock) Channel() string { return channelName("redisson_rwlock", l.Name) }

// prefix is {name}: the hash-tagged prefix of the timeout keys.
func (l *RWLock) prefix() string {
	for _, r := range l.Name {
		if r == '{' {
			return l.Name
		}
	}
	return "{" + l.Name + "}"
}

// TimeoutKey is the timeout key of this owner's n-th read hold.
func (l *RWLock) TimeoutKey(n int) string { return fmt.Sprintf("%s:%d", l.timeoutPrefix(), n) }

func (l *RWLock) timeoutPrefix() string { return l.prefix() + ":" + l.Owner + ":rwlock_timeout" }

func (l *RWLock) writeOwner() string { return l.Owner + ":write" }

// ReadLock takes a read hold: acquired, or the lock's PTTL.
func (l *RWLock) ReadLock(ctx context.Context, lease time.Duration) (bool, int64, error) {
	return grantResult(readLockScript.Run(ctx, l.C, []string{l.Name, l.timeoutPrefix()},
		lease.Milliseconds(), l.Owner, l.writeOwner()).Result())
}

// ReadUnlock releases one read hold.
func (l *RWLock) ReadUnlock(ctx context.Context) (int, error) {
	return unlockResult(readUnlockScript.Run(ctx, l.C, []string{l.Name, l.Channel(), l.timeoutPrefix(), l.prefix()},
		"0", l.Owner).Result())
}

// ReadRenew is the read lock's watchdog: true if this owner holds it.
func (l *RWLock) ReadRenew(ctx context.Context, lease time.Duration) (bool, error) {
	n, err := readRenewScript.Run(ctx, l.C, []string{l.Name, l.timeoutPrefix()}, lease.Milliseconds(), l.Owner).Int64()
	return n == 1, err
}

// WriteLock takes a write hold: acquired, or the lock's PTTL.
func (l *RWLock) WriteLock(ctx context.Context, lease time.Duration) (bool, int64, error) {
	return grantResult(writeLockScript.Run(ctx, l.C, []string{l.Name}, lease.Milliseconds(), l.writeOwner()).Result())
}

// WriteUnlock releases one write hold.
func (l *RWLock) WriteUnlock(ctx context.Context, lease time.Duration) (int, error) {
	return unlockResult(writeUnlockScript.Run(ctx, l.C, []string{l.Name, l.Channel()},
		"1", lease.Milliseconds(), l.writeOwner()).Result())
}

// grantResult reads a lock script's reply: nil = acquired, else a TTL.
func grantResult(v any, err error) (bool, int64, error) {
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, 0, fmt.Errorf("lock script answered %T %#v, want nil or an integer", v, v)
	}
	return false, n, nil
}
