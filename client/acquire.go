package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// acquirer describes how to take one object, for the shared wait loop.
type acquirer struct {
	// attempt makes one try. ttl is when to look again without a message
	// (the holder's remaining lease); negative when unknown.
	attempt func(ctx context.Context) (ok bool, ttl time.Duration, err error)
	// check, when set, tells after an attempt with an unknown outcome
	// whether that attempt took the object.
	check func(ctx context.Context) (bool, error)
	// giveUp, when set, runs when the caller stops waiting (fair lock:
	// leave the queue). It gets a fresh context.
	giveUp func(ctx context.Context)
	// undo, when set with check, releases what an attempt cut short by
	// the caller's context may have taken after all.
	undo func(ctx context.Context)
	// channel and policy: where wake-ups come from. Empty channel: spin
	// (exponential back-off, no pub/sub).
	channel string
	policy  wakePolicy
}

// acquire runs Redisson's tryLock loop. wait < 0 waits until ctx is done;
// wait == 0 makes one attempt. It returns false, nil when wait ran out.
func (c *Client) acquire(ctx context.Context, wait time.Duration, a *acquirer) (ok bool, err error) {
	if c.closed() {
		return false, ErrClosed
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	timedOut := func(err error) bool {
		return wait > 0 && errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(deadline)
	}
	defer func() {
		if ok {
			return
		}
		if a.giveUp != nil || (a.undo != nil && ctx.Err() != nil) {
			fresh, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if a.giveUp != nil {
				a.giveUp(fresh)
			}
			// The last attempt may have been cut off after the server
			// ran it: do not leave a lock behind that nobody renews.
			if a.undo != nil && ctx.Err() != nil {
				if held, err := a.check(fresh); err == nil && held {
					a.undo(fresh)
				}
			}
			cancel()
		}
		if timedOut(err) {
			ok, err = false, nil
		}
	}()

	ok, _, err = c.try(ctx, wait != 0, a)
	if err != nil || ok || wait == 0 {
		return ok, err
	}

	var sub *subscription
	if a.channel != "" {
		sub, err = c.sub.subscribe(ctx, a.channel, a.policy)
		if err != nil {
			return false, err
		}
		defer sub.close()
	}
	spin := time.Millisecond
	for {
		var ttl time.Duration
		ok, ttl, err = c.try(ctx, true, a)
		if err != nil || ok {
			return ok, err
		}
		// Sleep until a message, the holder's TTL, or the fallback
		// interval, which bounds what a lost message can cost.
		d := c.cfg.fallback
		if ttl >= 0 {
			d = min(max(ttl, time.Millisecond), d)
		}
		if sub == nil {
			// Spin: exponential back-off with jitter, 1 ms to 128 ms.
			d = min(d, spin/2+rand.N(spin/2+1))
			spin = min(2*spin, 128*time.Millisecond)
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return false, ctx.Err()
			case <-c.done:
				t.Stop()
				return false, ErrClosed
			}
			continue
		}
		if err := sub.wait(ctx, d); err != nil {
			return false, err
		}
	}
}

// try makes one attempt. With retry set it rides out transient errors (no
// leader for a moment, a connection reset) with back-off until ctx ends;
// after an attempt whose outcome is unknown it asks check whether the
// object was taken before trying again.
func (c *Client) try(ctx context.Context, retry bool, a *acquirer) (bool, time.Duration, error) {
	backoff := 20 * time.Millisecond
	for {
		ok, ttl, err := a.attempt(ctx)
		if err == nil {
			return ok, ttl, nil
		}
		if unknownOutcome(err) {
			// Trying again is safe only once we know the attempt did
			// not take the object.
			if a.check == nil {
				return false, 0, err
			}
			held, cerr := a.check(ctx)
			for cerr != nil && retry && transient(cerr) {
				if !c.pause(ctx, &backoff) {
					return false, 0, err
				}
				held, cerr = a.check(ctx)
			}
			if cerr != nil {
				return false, 0, err
			}
			if held {
				return true, 0, nil
			}
		}
		if !retry || !transient(err) {
			return false, 0, err
		}
		if !c.pause(ctx, &backoff) {
			if c.closed() {
				return false, 0, ErrClosed
			}
			return false, 0, ctx.Err()
		}
	}
}

// pause sleeps for *backoff and doubles it (up to a second). It reports
// false when ctx ended or the client closed first.
func (c *Client) pause(ctx context.Context, backoff *time.Duration) bool {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	*backoff = min(2**backoff, time.Second)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-c.done:
		return false
	}
}

// retryIdempotent runs op until it succeeds, fails for good, ctx ends or
// limit has passed; op must be safe to repeat within limit (an unlock is,
// while its latch key lives).
// With idempotent false, only errors that prove op was not applied are
// retried.
func (c *Client) retryIdempotent(ctx context.Context, limit time.Duration, idempotent bool, op func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		err := op(ctx)
		if err == nil || !transient(err) || (!idempotent && unknownOutcome(err)) {
			return err
		}
		if !c.pause(ctx, &backoff) {
			return err
		}
	}
}
