package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/compat/matrix/go/family"
)

// rlockSuite: go-redis v9 (Client, FailoverClient, ClusterClient) running
// the seed articles' Redisson lock scripts: lock, re-entry, tryLock with
// wait and lease, the watchdog, unlock with a pub/sub wake-up, forceUnlock.
var rlockSuite = suite{
	modes:  []string{"single", "sentinel", "direct", "cluster"},
	check:  rlockCheck,
	worker: rlockWorker,
}

func rlockCheck(t *T, e *env) {
	ctx := t.ctx
	c := e.client(t)
	ping(t, c)
	mustRESP3(t, c)
	a := family.NewID()
	owner := func(thread int) string { return family.Owner(a, thread) }

	if e.stage == "after" {
		// The scripts were loaded through the old leader, before the kill:
		// the script cache is replicated state, so no NOSCRIPT now.
		t.Step("EVALSHA of a script loaded before the leader kill")
		err := c.EvalSha(ctx, family.Seed("lock").SHA, []string{e.key("rlock:sha")}, 1000, owner(0)).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("EVALSHA of the lock script loaded before the kill: %v", err)
		}
	}

	t.Step("lock, re-entry, unlock")
	l := family.NewRLock(c, e.key("rlock:basic"), owner(1))
	wantGranted(t, "lock")(l.TryAcquire(ctx, 30*time.Second))
	wantString(t, c, "HGET", "1", "HGET", l.Name, l.Owner)
	if pttl := wantIntCmd(t, c, "PTTL", l.Name); pttl <= 29000 || pttl > 30000 {
		t.Fatalf("PTTL after lock = %d, want about 30000", pttl)
	}
	wantGranted(t, "re-entry")(l.TryAcquire(ctx, 30*time.Second))
	wantString(t, c, "HGET", "2", "HGET", l.Name, l.Owner)
	other := family.NewRLock(c, l.Name, family.Owner(family.NewID(), 1))
	if ok, ttl, err := other.TryAcquire(ctx, 30*time.Second); err != nil || ok || ttl <= 0 || ttl > 30000 {
		t.Fatalf("lock by another owner = (%v, %d, %v), want the holder's PTTL", ok, ttl, err)
	}
	wantUnlock(t, "unlock by another owner", family.NotOwner)(other.Unlock(ctx))
	wantUnlock(t, "first unlock", family.StillHeld)(l.Unlock(ctx))
	wantString(t, c, "HGET", "1", "HGET", l.Name, l.Owner)
	wantUnlock(t, "second unlock", family.Released)(l.Unlock(ctx))
	wantExists(t, c, l.Name, 0)

	t.Step("plain EVAL (Redisson 3.18) and EVALSHA after SCRIPT LOAD")
	eval := family.Seed("lock")
	if err := eval.Eval(ctx, c, []string{l.Name}, 30000, l.Owner).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("EVAL lock script: %v, want nil (acquired)", err)
	}
	if sha, err := c.ScriptLoad(ctx, eval.Src).Result(); err != nil || sha != eval.SHA {
		t.Fatalf("SCRIPT LOAD = (%q, %v), want %s", sha, err, eval.SHA)
	}
	wantUnlock(t, "unlock", family.Released)(l.Unlock(ctx))

	t.Step("tryLock waits for a lease to run out")
	held := family.NewRLock(c, e.key("rlock:lease"), owner(2))
	wantGranted(t, "lock with a 700 ms lease")(held.TryAcquire(ctx, 700*time.Millisecond))
	waiter := family.NewRLock(c, held.Name, owner(3))
	start := time.Now()
	ok, err := waiter.TryLock(ctx, 5*time.Second, 2*time.Second)
	took := time.Since(start)
	if err != nil || !ok {
		t.Fatalf("tryLock(wait 5s) behind a 700 ms lease = (%v, %v)", ok, err)
	}
	if took < 400*time.Millisecond || took > 3*time.Second {
		t.Fatalf("tryLock was granted after %v, want about 700 ms (the holder's lease)", took)
	}
	if pttl := wantIntCmd(t, c, "PTTL", held.Name); pttl <= 0 || pttl > 2000 {
		t.Fatalf("PTTL of the waiter's lock = %d, want its 2000 ms lease", pttl)
	}

	t.Step("tryLock gives up after its wait")
	late := family.NewRLock(c, held.Name, owner(4))
	start = time.Now()
	if ok, err := late.TryLock(ctx, 400*time.Millisecond, time.Second); err != nil || ok {
		t.Fatalf("tryLock(wait 400ms) of a held lock = (%v, %v), want (false, nil)", ok, err)
	}
	if took := time.Since(start); took < 350*time.Millisecond || took > 3*time.Second {
		t.Fatalf("tryLock gave up after %v, want about 400 ms", took)
	}
	wantUnlock(t, "unlock", family.Released)(waiter.Unlock(ctx))

	t.Step("the watchdog keeps a lock without a lease")
	wd := family.NewRLock(c, e.key("rlock:watchdog"), owner(5))
	wd.Watchdog = 1200 * time.Millisecond
	wantGranted(t, "lock without a lease")(wd.TryAcquire(ctx, 0))
	time.Sleep(2500 * time.Millisecond)
	wantString(t, c, "HGET after 2.5 s (twice the 1.2 s lease)", "1", "HGET", wd.Name, wd.Owner)
	if ok, err := family.NewRLock(c, wd.Name, owner(6)).Renew(ctx); err != nil || ok {
		t.Fatalf("renew by another owner = (%v, %v), want (false, nil)", ok, err)
	}
	wantUnlock(t, "unlock", family.Released)(wd.Unlock(ctx))
	if ok, err := wd.Renew(ctx); err != nil || ok {
		t.Fatalf("renew after unlock = (%v, %v), want (false, nil)", ok, err)
	}

	t.Step("unlock wakes a waiter through pub/sub")
	holder := family.NewRLock(c, e.key("rlock:wake"), owner(7))
	wantGranted(t, "lock")(holder.TryAcquire(ctx, 30*time.Second))
	watch, err := family.Subscribe(ctx, c, holder.Channel())
	t.must(err, "subscribe")
	defer watch.Close()
	type result struct {
		ok   bool
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	waiter = family.NewRLock(c, holder.Name, owner(8))
	go func() {
		start := time.Now()
		ok, err := waiter.TryLock(ctx, 10*time.Second, 30*time.Second)
		done <- result{ok, err, time.Since(start)}
	}()
	time.Sleep(500 * time.Millisecond)
	wantUnlock(t, "unlock", family.Released)(holder.Unlock(ctx))
	if msg, ok := watch.Next(ctx, 5*time.Second); !ok || msg != "0" {
		t.Fatalf("message on %s = (%q, %v), want \"0\"", holder.Channel(), msg, ok)
	}
	r := <-done
	if r.err != nil || !r.ok || r.took > 5*time.Second {
		t.Fatalf("waiter tryLock = (%v, %v) after %v, want granted soon after the unlock (not after the 30 s lease)", r.ok, r.err, r.took)
	}
	if waiter.Wakeups == 0 {
		t.Fatalf("the waiter was granted without an unlock message")
	}

	t.Step("forceUnlock")
	if ok, err := holder.ForceUnlock(ctx); err != nil || !ok {
		t.Fatalf("forceUnlock of a held lock = (%v, %v), want true", ok, err)
	}
	if msg, ok := watch.Next(ctx, 5*time.Second); !ok || msg != "0" {
		t.Fatalf("message after forceUnlock = (%q, %v), want \"0\"", msg, ok)
	}
	wantExists(t, c, holder.Name, 0)
	if ok, err := holder.ForceUnlock(ctx); err != nil || ok {
		t.Fatalf("forceUnlock of no lock = (%v, %v), want false", ok, err)
	}

	t.Step("the older unlock publishes for a lock that is gone")
	wantUnlock(t, "older unlock of no lock", family.Released)(holder.UnlockOld(ctx))
	if msg, ok := watch.Next(ctx, 5*time.Second); !ok || msg != "0" {
		t.Fatalf("message after the older unlock = (%q, %v), want \"0\"", msg, ok)
	}
}

func rlockWorker(t *T, e *env, w int) cycle {
	c := e.client(t)
	name := e.key("rlock:failover")
	id := family.NewID()
	thread := 0
	return func(ctx context.Context, hold func()) (bool, error) {
		// A new thread id per cycle: a grant whose reply was lost in the
		// failover stays a hold of its own until its lease runs out,
		// instead of turning later grants into re-entries.
		thread++
		l := family.NewRLock(c, name, family.Owner(id, thread))
		ok, err := l.TryLock(ctx, failoverLockWait, failoverLockTTL)
		if err != nil || !ok {
			return false, err
		}
		hold()
		r, err := l.Unlock(ctx)
		if err == nil && r != family.Released {
			err = fmt.Errorf("unlock answered %d, want 1", r)
		}
		return true, err
	}
}

// Small checks shared by the suites.

func wantGranted(t *T, what string) func(ok bool, ttl int64, err error) {
	return func(ok bool, ttl int64, err error) {
		if err != nil || !ok {
			t.Fatalf("%s = (granted %v, ttl %d, %v), want granted", what, ok, ttl, err)
		}
	}
}

func wantUnlock(t *T, what string, want int) func(int, error) {
	return func(got int, err error) {
		if err != nil || got != want {
			t.Fatalf("%s = (%d, %v), want %d", what, got, err, want)
		}
	}
}

func wantString(t *T, c redis.UniversalClient, what, want string, args ...any) {
	got, err := c.Do(t.ctx, args...).Text()
	if err != nil || got != want {
		t.Fatalf("%s %v = (%q, %v), want %q", what, args, got, err, want)
	}
}

func wantIntCmd(t *T, c redis.UniversalClient, what string, args ...any) int64 {
	full := append([]any{what}, args...)
	n, err := c.Do(t.ctx, full...).Int64()
	if err != nil {
		t.Fatalf("%v: %v", full, err)
	}
	return n
}

func wantExists(t *T, c redis.UniversalClient, key string, want int64) {
	if n := wantIntCmd(t, c, "EXISTS", key); n != want {
		t.Fatalf("EXISTS %s = %d, want %d", key, n, want)
	}
}

func wantNoMessage(t *T, s *family.Sub, channel string, d time.Duration) {
	if msg, ok := s.Next(t.ctx, d); ok {
		t.Fatalf("unexpected message %q on %s", msg, channel)
	}
}
