package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bsm/redislock"
)

// TestRedislock drives bsm/redislock (Lua obtain, refresh, release and
// TTL scripts through go-redis's EVALSHA-then-EVAL).
func TestRedislock(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *server) {
		ctx := testContext(t)
		c := newClient(t, s.addr)
		rl := redislock.New(c)

		t.Run("obtain refresh release", func(t *testing.T) {
			const key, ttl = "redislock:1", 2 * time.Second
			lock, err := rl.Obtain(ctx, key, ttl, nil)
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			if _, err := rl.Obtain(ctx, key, ttl, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Obtain of a held lock: %v, want ErrNotObtained", err)
			}
			s.elapse(t, 500*time.Millisecond)
			before, err := lock.TTL(ctx)
			if err != nil || before <= 0 || before > ttl-500*time.Millisecond {
				t.Fatalf("TTL = (%v, %v), want in (0, %v]", before, err, ttl-500*time.Millisecond)
			}
			if err := lock.Refresh(ctx, ttl, nil); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			after, err := lock.TTL(ctx)
			if err != nil || after <= before || after > ttl {
				t.Fatalf("TTL after Refresh = (%v, %v), want in (%v, %v]", after, err, before, ttl)
			}
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Fatalf("second Release: %v, want ErrLockNotHeld", err)
			}
			if ttl, err := lock.TTL(ctx); err != nil || ttl != 0 {
				t.Fatalf("TTL of a released lock = (%v, %v), want 0", ttl, err)
			}
		})

		t.Run("release by a non-owner", func(t *testing.T) {
			const key, ttl = "redislock:2", 300 * time.Millisecond
			stale, err := rl.Obtain(ctx, key, ttl, nil)
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			s.elapse(t, ttl)
			owner, err := rl.Obtain(ctx, key, time.Minute, nil)
			if err != nil {
				t.Fatalf("Obtain after expiry: %v", err)
			}
			if err := stale.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Fatalf("Release by the expired holder: %v, want ErrLockNotHeld", err)
			}
			if err := stale.Refresh(ctx, ttl, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Refresh by the expired holder: %v, want ErrNotObtained", err)
			}
			if got, err := c.Get(ctx, key).Result(); err != nil || got != owner.Token() {
				t.Fatalf("GET %s = (%q, %v), want the new owner's token", key, got, err)
			}
			if err := owner.Release(ctx); err != nil {
				t.Fatalf("Release by the owner: %v", err)
			}
		})

		t.Run("obtain again with the same token", func(t *testing.T) {
			// The obtain script's second branch: GETRANGE and string.sub.
			const key = "redislock:3"
			first, err := rl.Obtain(ctx, key, time.Minute, &redislock.Options{Token: "tok", Metadata: "one"})
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			second, err := rl.Obtain(ctx, key, time.Minute, &redislock.Options{Token: "tok", Metadata: "two"})
			if err != nil {
				t.Fatalf("Obtain with the same token: %v", err)
			}
			if got, _ := c.Get(ctx, key).Result(); got != "toktwo" {
				t.Fatalf("GET %s = %q, want toktwo", key, got)
			}
			if _, err := rl.Obtain(ctx, key, time.Minute, &redislock.Options{Token: "tol"}); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Obtain with another token: %v, want ErrNotObtained", err)
			}
			if err := first.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Fatalf("Release with the old metadata: %v, want ErrLockNotHeld", err)
			}
			if err := second.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
		})

		t.Run("contention", func(t *testing.T) {
			contend(t, func(int) locker {
				return func(ctx context.Context) (func(context.Context) error, error) {
					lock, err := rl.Obtain(ctx, "redislock:contended", 10*time.Second,
						&redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)})
					if err != nil {
						return nil, err
					}
					return lock.Release, nil
				}
			})
		})
	})
}
