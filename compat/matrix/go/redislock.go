package main

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
)

// redislockSuite: bsm/redislock over go-redis v9.
var redislockSuite = suite{
	modes:  []string{"single", "sentinel", "direct", "cluster"},
	check:  redislockCheck,
	worker: redislockWorker,
}

func redislockCheck(t *T, e *env) {
	ctx := t.ctx
	c := e.client(t)
	ping(t, c)
	mustRESP3(t, c)
	locker := redislock.New(c)

	t.Step("obtain, TTL, refresh, contention, release")
	key := e.key("redislock:1")
	l, err := locker.Obtain(ctx, key, 2*time.Second, &redislock.Options{Metadata: "meta"})
	t.must(err, "Obtain")
	if got := c.Get(ctx, key).Val(); got != l.Token()+"meta" {
		t.Fatalf("GET %s = %q, want token+metadata", key, got)
	}
	ttl, err := l.TTL(ctx)
	if err != nil || ttl <= 0 || ttl > 2*time.Second {
		t.Fatalf("TTL = (%v, %v), want within 2s", ttl, err)
	}
	t.must(l.Refresh(ctx, 5*time.Second, nil), "Refresh")
	if ttl, err := l.TTL(ctx); err != nil || ttl <= 2*time.Second {
		t.Fatalf("TTL after Refresh(5s) = (%v, %v)", ttl, err)
	}
	if _, err := locker.Obtain(ctx, key, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("Obtain of a held key: %v, want ErrNotObtained", err)
	}
	t.must(l.Release(ctx), "Release")
	if err := l.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("second Release: %v, want ErrLockNotHeld", err)
	}
	wantExists(t, c, key, 0)

	t.Step("expiry; the old holder can neither refresh nor release")
	short, err := locker.Obtain(ctx, e.key("redislock:2"), 300*time.Millisecond, nil)
	t.must(err, "Obtain")
	time.Sleep(600 * time.Millisecond)
	if ttl, err := short.TTL(ctx); err != nil || ttl != 0 {
		t.Fatalf("TTL of an expired lock = (%v, %v), want 0", ttl, err)
	}
	next, err := locker.Obtain(ctx, short.Key(), time.Second, nil)
	t.must(err, "Obtain after expiry")
	if err := short.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("Refresh by the old holder: %v, want ErrNotObtained", err)
	}
	if err := short.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("Release by the old holder: %v, want ErrLockNotHeld", err)
	}
	t.must(next.Release(ctx), "Release")

	t.Step("linear backoff until the holder lets go")
	holder, err := locker.Obtain(ctx, e.key("redislock:3"), 10*time.Second, nil)
	t.must(err, "Obtain")
	go func() {
		time.Sleep(400 * time.Millisecond)
		holder.Release(context.Background())
	}()
	start := time.Now()
	retry := redislock.LimitRetry(redislock.LinearBackoff(50*time.Millisecond), 60)
	waited, err := locker.Obtain(ctx, holder.Key(), time.Second, &redislock.Options{RetryStrategy: retry})
	t.must(err, "Obtain with retries")
	if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
		t.Fatalf("obtained after %v, want soon after the release at 400 ms", took)
	}
	t.must(waited.Release(ctx), "Release")
}

func redislockWorker(t *T, e *env, w int) cycle {
	locker := redislock.New(e.client(t))
	key := e.key("redislock:failover")
	return func(ctx context.Context, hold func()) (bool, error) {
		retry := redislock.LimitRetry(redislock.LinearBackoff(failoverLockWait/4), 4)
		l, err := locker.Obtain(ctx, key, failoverLockTTL, &redislock.Options{RetryStrategy: retry})
		if errors.Is(err, redislock.ErrNotObtained) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		hold()
		return true, l.Release(ctx)
	}
}
