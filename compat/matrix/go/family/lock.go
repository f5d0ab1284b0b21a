package family

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLease is Redisson's lockWatchdogTimeout default: the lease of a
// lock taken without one, renewed every third of it while held.
const DefaultLease = 30 * time.Second

// Unlock results, as Redisson's unlock script answers: nil (not the
// owner), 0 (still held: re-entered), 1 (released).
const (
	NotOwner  = -1
	StillHeld = 0
	Released  = 1
)

var (
	seedLock         = Seed("lock")
	seedUnlock       = Seed("unlock")
	seedUnlockExists = Seed("unlock_exists")
	seedRenew        = Seed("renew")
	seedForceUnlock  = Seed("forceunlock")
)

// NewID returns a client id as Redisson makes one (a random UUID).
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Owner returns Redisson's lock owner name: <client id>:<thread id>.
func Owner(clientID string, thread int) string { return fmt.Sprintf("%s:%d", clientID, thread) }

// RLock is Redisson's reentrant lock, running the seed articles' scripts:
// a hash Name whose field Owner counts re-entries, with a lease.
type RLock struct {
	C     redis.UniversalClient
	Name  string
	Owner string
	// Watchdog is the lease of a lock taken with lease <= 0, renewed every
	// third of it (Redisson's lockWatchdogTimeout); DefaultLease if zero.
	Watchdog time.Duration
	// Wakeups counts unlock messages received while waiting in TryLock.
	Wakeups int

	lease time.Duration // of the last grant, for unlock's pexpire
	mu    sync.Mutex
	stop  chan struct{}
	done  chan struct{}
}

// NewRLock returns the lock name for owner on c.
func NewRLock(c redis.UniversalClient, name, owner string) *RLock {
	return &RLock{C: c, Name: name, Owner: owner}
}

// Channel is where unlocks are published: redisson_lock__channel:{name}.
func (l *RLock) Channel() string { return channelName("redisson_lock__channel", l.Name) }

// channelName is Redisson's prefixName: prefix:{name}, or prefix:name
// when name already carries a hash tag.
func channelName(prefix, name string) string {
	for _, r := range name {
		if r == '{' {
			return prefix + ":" + name
		}
	}
	return prefix + ":{" + name + "}"
}

func (l *RLock) watchdogLease() time.Duration {
	if l.Watchdog > 0 {
		return l.Watchdog
	}
	return DefaultLease
}

// TryAcquire runs the lock script once. acquired is true on a nil reply;
// otherwise ttl is the holder's PTTL in ms.
func (l *RLock) TryAcquire(ctx context.Context, lease time.Duration) (acquired bool, ttl int64, err error) {
	watchdog := lease <= 0
	if watchdog {
		lease = l.watchdogLease()
	}
	v, err := seedLock.Run(ctx, l.C, []string{l.Name}, lease.Milliseconds(), l.Owner).Result()
	if errors.Is(err, redis.Nil) {
		l.lease = lease
		if watchdog {
			l.startWatchdog()
		}
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

// TryLock is Redisson's tryLock(wait, lease): try; if held, subscribe to
// the lock's channel and retry on each unlock message or when the
// holder's TTL runs out, until wait has passed. lease <= 0 takes the lock
// with the watchdog.
func (l *RLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	ok, ttl, err := l.TryAcquire(ctx, lease)
	if ok || err != nil {
		return ok, err
	}
	if time.Until(deadline) <= 0 {
		return false, nil
	}
	sub, err := Subscribe(ctx, l.C, l.Channel())
	if err != nil {
		return false, err
	}
	defer sub.Close()
	for {
		ok, ttl, err = l.TryAcquire(ctx, lease)
		if ok || err != nil {
			return ok, err
		}
		remain := time.Until(deadline)
		if remain <= 0 {
			return false, nil
		}
		d := remain
		if ttl >= 0 && time.Duration(ttl)*time.Millisecond < remain {
			d = time.Duration(ttl) * time.Millisecond
		}
		if _, got := sub.Next(ctx, d); got {
			l.Wakeups++
		}
	}
}

// Unlock runs the unlock script: NotOwner, StillHeld or Released.
func (l *RLock) Unlock(ctx context.Context) (int, error) {
	return l.unlock(ctx, seedUnlock)
}

// UnlockOld runs the older unlock script, which also publishes (and
// answers Released) when the lock is gone.
func (l *RLock) UnlockOld(ctx context.Context) (int, error) {
	return l.unlock(ctx, seedUnlockExists)
}

func (l *RLock) unlock(ctx context.Context, s *Script) (int, error) {
	lease := l.lease
	if lease <= 0 {
		lease = l.watchdogLease()
	}
	v, err := s.Run(ctx, l.C, []string{l.Name, l.Channel()}, "0", lease.Milliseconds(), l.Owner).Result()
	r, err := unlockResult(v, err)
	if r != StillHeld {
		l.stopWatchdog()
	}
	return r, err
}

func unlockResult(v any, err error) (int, error) {
	if errors.Is(err, redis.Nil) {
		return NotOwner, nil
	}
	if err != nil {
		return 0, err
	}
	switch v {
	case int64(0):
		return StillHeld, nil
	case int64(1):
		return Released, nil
	}
	return 0, fmt.Errorf("unlock script answered %T %#v, want nil, 0 or 1", v, v)
}

// Renew runs the watchdog's script once: true if Owner still holds the
// lock (its lease is then reset to the watchdog lease).
func (l *RLock) Renew(ctx context.Context) (bool, error) {
	n, err := seedRenew.Run(ctx, l.C, []string{l.Name}, l.watchdogLease().Milliseconds(), l.Owner).Int64()
	return n == 1, err
}

// ForceUnlock deletes the lock whoever holds it and publishes the unlock
// message: true if there was a lock.
func (l *RLock) ForceUnlock(ctx context.Context) (bool, error) {
	l.stopWatchdog()
	n, err := seedForceUnlock.Run(ctx, l.C, []string{l.Name, l.Channel()}, "0").Int64()
	return n == 1, err
}

// startWatchdog renews the lock every third of the watchdog lease until
// Unlock, ForceUnlock or a failed renewal.
func (l *RLock) startWatchdog() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	l.stop, l.done = stop, done
	every := l.watchdogLease() / 3
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), every)
				ok, err := l.Renew(ctx)
				cancel()
				if err == nil && !ok {
					return
				}
			}
		}
	}()
}

func (l *RLock) stopWatchdog() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop, l.done = nil, nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Sub is a subscription to one channel, as a waiter holds one.
type Sub struct {
	ps *redis.PubSub
	ch <-chan *redis.Message
}

// Subscribe subscribes to channel and waits for the confirmation.
func Subscribe(ctx context.Context, c redis.UniversalClient, channel string) (*Sub, error) {
	ps := c.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, fmt.Errorf("SUBSCRIBE %s: %w", channel, err)
	}
	return &Sub{ps: ps, ch: ps.Channel()}, nil
}

// Next waits at most d for a message and returns its payload.
func (s *Sub) Next(ctx context.Context, d time.Duration) (string, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case m, ok := <-s.ch:
		if !ok {
			return "", false
		}
		return m.Payload, true
	case <-t.C:
	case <-ctx.Done():
	}
	return "", false
}

// Close unsubscribes.
func (s *Sub) Close() error { return s.ps.Close() }
