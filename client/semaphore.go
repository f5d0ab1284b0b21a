package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Semaphore is Redisson's RSemaphore: a string key name holding the
// number of available permits. Permits have no owner: any caller may
// release them. Every change that adds permits publishes the new count on
// "redisson_sc:{name}", which wakes the waiters.
//
// A semaphore starts without permits: set them once with TrySetPermits
// (or add them with AddPermits).
type Semaphore struct {
	c       *Client
	name    string
	channel string
}

// NewSemaphore returns a handle on the semaphore name. It does no I/O.
func (c *Client) NewSemaphore(name string) *Semaphore {
	return &Semaphore{c: c, name: name, channel: prefixName("redisson_sc", name)}
}

// Name is the semaphore's key.
func (s *Semaphore) Name() string { return s.name }

// TrySetPermits sets the number of permits if the semaphore has none set
// yet, and reports whether it did.
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	return trySetPermits(ctx, s.c, s.name, s.channel, permits, 0)
}

// TrySetPermitsLease is TrySetPermits for a semaphore that disappears
// after lease.
func (s *Semaphore) TrySetPermitsLease(ctx context.Context, permits int, lease time.Duration) (bool, error) {
	return trySetPermits(ctx, s.c, s.name, s.channel, permits, lease)
}

func trySetPermits(ctx context.Context, c *Client, name, channel string, permits int, lease time.Duration) (bool, error) {
	var px int64
	if lease > 0 {
		px = ms(lease)
	}
	n, err := c.run(ctx, scriptSemTrySetPermits, []string{name, channel}, permits, c.cfg.publish, px).Int64()
	return n == 1, err
}

// AddPermits adds n permits (n may be negative to take some away).
func (s *Semaphore) AddPermits(ctx context.Context, n int) error {
	return s.c.run(ctx, scriptSemRelease, []string{s.name, s.channel}, n, s.c.cfg.publish).Err()
}

// Acquire takes permits, waiting as long as ctx allows.
func (s *Semaphore) Acquire(ctx context.Context, permits int) error {
	_, err := s.TryAcquire(ctx, permits, -1)
	return err
}

// TryAcquire takes permits within wait (0: one attempt; negative: as
// long as ctx allows) and reports whether it did.
func (s *Semaphore) TryAcquire(ctx context.Context, permits int, wait time.Duration) (bool, error) {
	if permits < 0 {
		return false, fmt.Errorf("client: negative permits %d", permits)
	}
	a := &acquirer{
		channel: s.channel,
		policy:  wakeAll,
		attempt: func(ctx context.Context) (bool, time.Duration, error) {
			n, err := s.c.run(ctx, scriptSemAcquire, []string{s.name}, permits).Int64()
			return n == 1, -1, err
		},
	}
	return s.c.acquire(ctx, wait, a)
}

// Release gives permits back (any caller may) and wakes waiters.
func (s *Semaphore) Release(ctx context.Context, permits int) error {
	if permits < 0 {
		return fmt.Errorf("client: negative permits %d", permits)
	}
	return s.AddPermits(ctx, permits)
}

// AvailablePermits is how many permits are free now.
func (s *Semaphore) AvailablePermits(ctx context.Context) (int64, error) {
	return getCount(ctx, s.c, s.name)
}

// DrainPermits takes every free permit and returns how many it took.
func (s *Semaphore) DrainPermits(ctx context.Context) (int64, error) {
	return s.c.run(ctx, scriptSemDrain, []string{s.name}).Int64()
}

// Delete removes the semaphore and reports whether it existed.
func (s *Semaphore) Delete(ctx context.Context) (bool, error) {
	n, err := s.c.rdb.Del(ctx, s.name).Result()
	return n == 1, err
}

// getCount reads a counter key; a missing key counts 0.
func getCount(ctx context.Context, c *Client, key string) (int64, error) {
	n, err := c.rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}
