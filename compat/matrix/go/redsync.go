package main

import (
	"context"
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncSuite: redsync v4 over go-redis v9 — one pool in the single,
// sentinel, direct and cluster modes, the Redlock algorithm over three
// independent nodes in redlock3.
var redsyncSuite = suite{
	modes:  []string{"single", "sentinel", "direct", "cluster", "redlock3"},
	check:  redsyncCheck,
	worker: redsyncWorker,
}

func redsyncPools(t *T, e *env) ([]redsyncredis.Pool, []redis.UniversalClient) {
	if e.mode == "redlock3" {
		cs := e.nodes(t)
		var pools []redsyncredis.Pool
		for _, c := range cs {
			pools = append(pools, goredis.NewPool(c))
		}
		return pools, cs
	}
	c := e.client(t)
	return []redsyncredis.Pool{goredis.NewPool(c)}, []redis.UniversalClient{c}
}

func redsyncCheck(t *T, e *env) {
	ctx := t.ctx
	pools, cs := redsyncPools(t, e)
	for _, c := range cs {
		ping(t, c)
	}
	rs := redsync.New(pools...)

	t.Step("lock, extend, contention, unlock")
	name := e.key("redsync:1")
	m := rs.NewMutex(name, redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	t.must(m.LockContext(ctx), "Lock")
	for i, c := range cs {
		if got, err := c.Get(ctx, name).Result(); err != nil || got != m.Value() {
			t.Fatalf("node %d: GET %s = (%q, %v), want the mutex's value", i, name, got, err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if ok, err := m.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("Extend = (%v, %v)", ok, err)
	}
	if pttl := cs[0].PTTL(ctx, name).Val(); pttl < 1800*time.Millisecond || pttl > 2*time.Second {
		t.Fatalf("PTTL after Extend = %v, want back near 2s", pttl)
	}
	if ok, err := m.ValidContext(ctx); !ok || err != nil {
		t.Fatalf("Valid = (%v, %v)", ok, err)
	}
	other := rs.NewMutex(name, redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	var taken *redsync.ErrTaken
	if err := other.LockContext(ctx); !errors.As(err, &taken) {
		t.Fatalf("Lock of a held mutex: %v, want ErrTaken", err)
	}
	intruder := rs.NewMutex(name, redsync.WithValue("not-the-owner"))
	if ok, err := intruder.UnlockContext(ctx); ok || err == nil {
		t.Fatalf("Unlock by a non-owner = (%v, %v), want (false, an error)", ok, err)
	}
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("Unlock = (%v, %v)", ok, err)
	}
	t.must(other.LockContext(ctx), "Lock after Unlock")
	if _, err := other.UnlockContext(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}

	t.Step("a lock expires; its owner's unlock then fails")
	short := rs.NewMutex(e.key("redsync:2"), redsync.WithExpiry(300*time.Millisecond), redsync.WithTries(1))
	t.must(short.LockContext(ctx), "Lock")
	time.Sleep(600 * time.Millisecond)
	next := rs.NewMutex(short.Name(), redsync.WithTries(1))
	t.must(next.LockContext(ctx), "Lock after expiry")
	if ok, err := short.UnlockContext(ctx); ok || err == nil {
		t.Fatalf("Unlock of an expired lock taken since = (%v, %v), want (false, an error)", ok, err)
	}
	if ok, err := next.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("Unlock = (%v, %v)", ok, err)
	}

	t.Step("retries until the holder lets go")
	holder := rs.NewMutex(e.key("redsync:3"), redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	t.must(holder.LockContext(ctx), "Lock")
	go func() {
		time.Sleep(400 * time.Millisecond)
		holder.UnlockContext(context.Background())
	}()
	patient := rs.NewMutex(holder.Name(), redsync.WithTries(40), redsync.WithRetryDelay(50*time.Millisecond))
	start := time.Now()
	t.must(patient.LockContext(ctx), "Lock with retries")
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("granted after %v, want soon after the holder's unlock at 400 ms", took)
	}
	patient.UnlockContext(ctx)

	if e.mode != "redlock3" {
		return
	}
	t.Step("Redlock: a minority of nodes held by someone else")
	name = e.key("redsync:quorum")
	t.must(cs[2].Set(ctx, name, "someone-else", 10*time.Second).Err(), "SET on node 3")
	q := rs.NewMutex(name, redsync.WithTries(1))
	t.must(q.LockContext(ctx), "Lock with 2 of 3 nodes free")
	if ok, err := q.UnlockContext(ctx); !ok {
		t.Fatalf("Unlock = (%v, %v), want true (a quorum released)", ok, err)
	}
	if got := cs[2].Get(ctx, name).Val(); got != "someone-else" {
		t.Fatalf("node 3's key after Unlock = %q, want the other owner's value untouched", got)
	}
	t.Step("Redlock: a majority held by someone else")
	t.must(cs[1].Set(ctx, name, "someone-else", 10*time.Second).Err(), "SET on node 2")
	if err := rs.NewMutex(name, redsync.WithTries(1)).LockContext(ctx); err == nil {
		t.Fatalf("Lock with 1 of 3 nodes free succeeded")
	}
	if n := cs[0].Exists(ctx, name).Val(); n != 0 {
		t.Fatalf("node 1 keeps the failed attempt's key (EXISTS = %d); redsync releases it", n)
	}
	t.Step("Redlock: one node down")
	dead := e.deadNode(t)
	rs2 := redsync.New(goredis.NewPool(cs[0]), goredis.NewPool(cs[1]), goredis.NewPool(dead))
	d := rs2.NewMutex(e.key("redsync:down"), redsync.WithTries(1))
	t.must(d.LockContext(ctx), "Lock with 2 of 3 nodes up")
	if ok, err := d.UnlockContext(ctx); !ok {
		t.Fatalf("Unlock = (%v, %v), want true", ok, err)
	}
}

func redsyncWorker(t *T, e *env, w int) cycle {
	pools, _ := redsyncPools(t, e)
	rs := redsync.New(pools...)
	name := e.key("redsync:failover")
	return func(ctx context.Context, hold func()) (bool, error) {
		m := rs.NewMutex(name, redsync.WithExpiry(failoverLockTTL), redsync.WithTries(4), redsync.WithRetryDelay(failoverLockWait/4))
		if err := m.LockContext(ctx); err != nil {
			var taken *redsync.ErrTaken
			if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
				return false, nil
			}
			return false, err
		}
		hold()
		_, err := m.UnlockContext(ctx)
		return true, err
	}
}
