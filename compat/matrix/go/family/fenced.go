package family

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	fencedLockScript  = load("fenced_lock")
	unlockLatchScript = load("unlock_latch")
)

// UnlockLatchLife is how long an unlock latch key lives (Redisson uses
// about 13 to 20 s).
const UnlockLatchLife = 15 * time.Second

// FencedLock is Redisson's fenced lock: the reentrant lock plus a token
// counter redisson_lock_token:{name} that every grant increments. Its
// script answers integer arrays: {-1, token} or {pttl, -1}.
type FencedLock struct {
	C     redis.UniversalClient
	Name  string
	Owner string
	// LatchLife is the unlock latch's lifetime; UnlockLatchLife if zero.
	LatchLife time.Duration

	lease time.Duration
}

// TokenKey is redisson_lock_token:{name}.
func (l *FencedLock) TokenKey() string { return channelName("redisson_lock_token", l.Name) }

// Channel is redisson_lock__channel:{name}.
func (l *FencedLock) Channel() string { return channelName("redisson_lock__channel", l.Name) }

// LatchKey is the unlock latch of one unlock request.
func (l *FencedLock) LatchKey(requestID string) string {
	return channelName("redisson_unlock_latch", l.Name) + ":" + requestID
}

// TryLock takes the lock: its token if granted, else the holder's PTTL.
func (l *FencedLock) TryLock(ctx context.Context, lease time.Duration) (granted bool, token, ttl int64, err error) {
	v, err := fencedLockScript.Run(ctx, l.C, []string{l.Name, l.TokenKey()}, lease.Milliseconds(), l.Owner).Int64Slice()
	if err != nil {
		return false, 0, 0, err
	}
	if len(v) != 2 {
		return false, 0, 0, fmt.Errorf("fenced lock answered %v, want two integers", v)
	}
	if v[0] == -1 {
		l.lease = lease
		return true, v[1], 0, nil
	}
	if v[1] != -1 {
		return false, 0, 0, fmt.Errorf("fenced lock answered %v, want {pttl, -1} when not granted", v)
	}
	return false, -1, v[0], nil
}

// UnlockRequest runs the unlock script under the latch of requestID; a
// retried request answers what the first did. The caller deletes the
// latch afterwards (Unlock does).
func (l *FencedLock) UnlockRequest(ctx context.Context, requestID string) (int, error) {
	life := l.LatchLife
	if life <= 0 {
		life = UnlockLatchLife
	}
	return unlockResult(unlockLatchScript.Run(ctx, l.C, []string{l.Name, l.Channel(), l.LatchKey(requestID)},
		"0", l.lease.Milliseconds(), l.Owner, life.Milliseconds()).Result())
}

// Unlock releases one hold the way Redisson 3.24+ does: the latched
// script, then a DEL of the latch key.
func (l *FencedLock) Unlock(ctx context.Context) (int, error) {
	req := NewID()
	r, err := l.UnlockRequest(ctx, req)
	if err != nil {
		return r, err
	}
	return r, l.C.Del(ctx, l.LatchKey(req)).Err()
}
