package client

import (
	"context"
	"strings"
	"time"
)

// CountDownLatch is Redisson's RCountDownLatch: a string key name holding
// the count. Counting down to zero deletes the key and publishes "0" on
// "redisson_countdownlatch__channel__{name}", which opens the latch for
// every waiter; arming it with a new count publishes "1". A latch that
// does not exist is open.
type CountDownLatch struct {
	c       *Client
	name    string
	channel string
}

// NewCountDownLatch returns a handle on the latch name. It does no I/O.
func (c *Client) NewCountDownLatch(name string) *CountDownLatch {
	ch := "redisson_countdownlatch__channel__{" + name + "}"
	if strings.Contains(name, "{") {
		ch = "redisson_countdownlatch__channel__" + name
	}
	return &CountDownLatch{c: c, name: name, channel: ch}
}

// Name is the latch's key.
func (l *CountDownLatch) Name() string { return l.name }

// TrySetCount arms the latch with count if it is open, and reports
// whether it did.
func (l *CountDownLatch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	n, err := l.c.run(ctx, scriptLatchTrySetCount, []string{l.name, l.channel}, "1", count, l.c.cfg.publish).Int64()
	return n == 1, err
}

// CountDown counts down once; the count that reaches zero opens the
// latch. Counting down an open latch does nothing.
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	err := l.c.run(ctx, scriptLatchCountDown, []string{l.name, l.channel}, "0", l.c.cfg.publish).Err()
	if isNil(err) {
		return nil
	}
	return err
}

// Count is the current count (0 when open).
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	return getCount(ctx, l.c, l.name)
}

// Await waits until the latch is open, as long as ctx allows.
func (l *CountDownLatch) Await(ctx context.Context) error {
	_, err := l.AwaitTimeout(ctx, -1)
	return err
}

// AwaitTimeout waits up to wait (negative: as long as ctx allows) for the
// latch to open, and reports whether it did.
func (l *CountDownLatch) AwaitTimeout(ctx context.Context, wait time.Duration) (bool, error) {
	a := &acquirer{
		channel: l.channel,
		policy:  wakeAll,
		attempt: func(ctx context.Context) (bool, time.Duration, error) {
			n, err := l.Count(ctx)
			return err == nil && n <= 0, -1, err
		},
	}
	return l.c.acquire(ctx, wait, a)
}

// Delete removes the latch, opening it for every waiter, and reports
// whether it existed.
func (l *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	n, err := l.c.run(ctx, scriptLatchDelete, []string{l.name, l.channel}, "0", l.c.cfg.publish).Int64()
	return n == 1, err
}
