package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
)

// TestRedsync drives redsync v4 over go-redis v9 (one pool, quorum 1).
func TestRedsync(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *server) {
		ctx := testContext(t)
		c := newClient(t, s.addr)
		rs := redsync.New(goredis.NewPool(c))

		t.Run("acquire extend release", func(t *testing.T) {
			const name, expiry = "redsync:1", 2 * time.Second
			m := rs.NewMutex(name, redsync.WithExpiry(expiry), redsync.WithTries(1))
			if err := m.Lock(); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if got, err := c.Get(ctx, name).Result(); err != nil || got != m.Value() {
				t.Fatalf("GET %s = (%q, %v), want the mutex's value %q", name, got, err, m.Value())
			}
			s.elapse(t, 500*time.Millisecond)
			before, _ := c.PTTL(ctx, name).Result()
			if ok, err := m.Extend(); !ok || err != nil {
				t.Fatalf("Extend = (%v, %v), want (true, nil)", ok, err)
			}
			after, _ := c.PTTL(ctx, name).Result()
			if after <= before || after > expiry {
				t.Fatalf("PTTL %v before Extend, %v after; want it back near %v", before, after, expiry)
			}

			other := rs.NewMutex(name, redsync.WithExpiry(expiry), redsync.WithTries(1))
			var taken *redsync.ErrTaken
			if err := other.Lock(); !errors.As(err, &taken) {
				t.Fatalf("Lock of a held mutex: %v, want ErrTaken", err)
			}

			if ok, err := m.Unlock(); !ok || err != nil {
				t.Fatalf("Unlock = (%v, %v), want (true, nil)", ok, err)
			}
			if n, err := c.Exists(ctx, name).Result(); err != nil || n != 0 {
				t.Fatalf("EXISTS %s after Unlock = (%d, %v), want 0", name, n, err)
			}
			if err := other.Lock(); err != nil {
				t.Fatalf("Lock after release: %v", err)
			}
		})

		t.Run("release by a non-owner", func(t *testing.T) {
			const name = "redsync:2"
			m := rs.NewMutex(name, redsync.WithTries(1))
			if err := m.Lock(); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			intruder := rs.NewMutex(name, redsync.WithValue("not-the-owner"))
			var taken *redsync.ErrTaken
			if ok, err := intruder.Unlock(); ok || !errors.As(err, &taken) {
				t.Fatalf("Unlock by a non-owner = (%v, %v), want (false, ErrTaken)", ok, err)
			}
			if ok, err := intruder.Extend(); ok || err == nil {
				t.Fatalf("Extend by a non-owner = (%v, %v), want (false, an error)", ok, err)
			}
			if got, err := c.Get(ctx, name).Result(); err != nil || got != m.Value() {
				t.Fatalf("GET %s = (%q, %v), want the owner's value still", name, got, err)
			}
			if ok, err := m.Unlock(); !ok || err != nil {
				t.Fatalf("Unlock by the owner = (%v, %v)", ok, err)
			}
		})

		t.Run("expired", func(t *testing.T) {
			const name, expiry = "redsync:3", 300 * time.Millisecond
			m := rs.NewMutex(name, redsync.WithExpiry(expiry), redsync.WithTries(1))
			if err := m.Lock(); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			s.elapse(t, expiry)
			if ok, err := m.Extend(); ok {
				t.Fatalf("Extend after expiry = (%v, %v), want false", ok, err)
			}
			if ok, err := m.Unlock(); ok || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
				t.Fatalf("Unlock after expiry = (%v, %v), want (false, ErrLockAlreadyExpired)", ok, err)
			}
			next := rs.NewMutex(name, redsync.WithTries(1))
			if err := next.Lock(); err != nil {
				t.Fatalf("Lock after expiry: %v", err)
			}
		})

		t.Run("contention", func(t *testing.T) {
			contend(t, func(int) locker {
				m := rs.NewMutex("redsync:contended",
					redsync.WithExpiry(10*time.Second),
					redsync.WithTries(100000),
					redsync.WithRetryDelay(time.Millisecond),
				)
				return func(ctx context.Context) (func(context.Context) error, error) {
					if err := m.LockContext(ctx); err != nil {
						return nil, err
					}
					return func(ctx context.Context) error {
						ok, err := m.UnlockContext(ctx)
						if !ok && err == nil {
							err = errors.New("redsync: Unlock returned false")
						}
						return err
					}, nil
				}
			})
		})
	})
}
