package family

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	fairLockScript   = load("fair_lock")
	fairUnlockScript = load("fair_unlock")
	fairCancelScript = load("fair_cancel")
)

// FairLockWait is Redisson's default threadWaitTime: how long each waiter
// ahead in the queue may take its turn.
const FairLockWait = 5 * time.Second

// FairLock is Redisson's fair lock: the lock hash, a queue list of waiting
// owners and a zset of their absolute deadlines (ms). Each waiter is woken
// on a channel of its own, built inside Lua: <Channel()>:<owner>. Scripts
// take the client's clock (Now) and apply it as given.
type FairLock struct {
	C     redis.UniversalClient
	Name  string
	Owner string
	Wait  time.Duration    // FairLockWait if zero
	Now   func() time.Time // the client's clock; time.Now if nil
}

func (l *FairLock) wait() time.Duration {
	if l.Wait > 0 {
		return l.Wait
	}
	return FairLockWait
}

func (l *FairLock) now() int64 {
	if l.Now != nil {
		return l.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// QueueKey is redisson_lock_queue:{name}.
func (l *FairLock) QueueKey() string { return channelName("redisson_lock_queue", l.Name) }

// TimeoutKey is redisson_lock_timeout:{name}.
func (l *FairLock) TimeoutKey() string { return channelName("redisson_lock_timeout", l.Name) }

// Channel is the prefix of the waiters' channels: redisson_lock__channel:{name}.
func (l *FairLock) Channel() string { return channelName("redisson_lock__channel", l.Name) }

// MyChannel is where this owner is woken.
func (l *FairLock) MyChannel() string { return l.Channel() + ":" + l.Owner }

// TryAcquire takes the lock or joins the queue: acquired, or the ms
// until this owner's turn at most.
func (l *FairLock) TryAcquire(ctx context.Context, lease time.Duration) (acquired bool, ttl int64, err error) {
	v, err := fairLockScript.Run(ctx, l.C, []string{l.Name, l.QueueKey(), l.TimeoutKey()},
		lease.Milliseconds(), l.Owner, l.wait().Milliseconds(), l.now()).Result()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, 0, fmt.Errorf("fair lock script answered %T %#v", v, v)
	}
	return false, n, nil
}

// Unlock releases one hold and wakes the first waiter.
func (l *FairLock) Unlock(ctx context.Context, lease time.Duration) (int, error) {
	v, err := fairUnlockScript.Run(ctx, l.C, []string{l.Name, l.QueueKey(), l.TimeoutKey(), l.Channel()},
		"0", lease.Milliseconds(), l.Owner, l.now()).Result()
	return unlockResult(v, err)
}

// Cancel leaves the queue (a tryLock that gave up): how many waiters
// behind moved up.
func (l *FairLock) Cancel(ctx context.Context) (int64, error) {
	return fairCancelScript.Run(ctx, l.C, []string{l.QueueKey(), l.TimeoutKey()}, l.Owner, l.wait().Milliseconds()).Int64()
}
