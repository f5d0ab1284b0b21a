package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/compat/matrix/go/family"
)

// familySuite: the rest of Redisson's lock family through the project's
// own client (package family): fair lock, read-write lock, semaphore,
// permit-expirable semaphore, count-down latch and fenced lock on one
// server; MultiLock and RedLock across three independent nodes
// (redlock3).
var familySuite = suite{
	modes:  []string{"single", "sentinel", "direct", "cluster", "redlock3"},
	check:  familyCheck,
	worker: familyWorker,
}

func familyCheck(t *T, e *env) {
	if e.mode == "redlock3" {
		multiLockCheck(t, e)
		return
	}
	c := e.clientProto(t, 2) // Redisson speaks RESP2 without HELLO
	ping(t, c)
	fairLockCheck(t, e, c)
	rwLockCheck(t, e, c)
	semaphoreCheck(t, e, c)
	permitSemaphoreCheck(t, e, c)
	latchCheck(t, e, c)
	fencedLockCheck(t, e, c)
}

// rawStrings runs a command and returns its array reply as strings,
// byte for byte.
func rawStrings(t *T, c redis.UniversalClient, args ...any) []string {
	v, err := c.Do(t.ctx, args...).StringSlice()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func fairLockCheck(t *T, e *env, c redis.UniversalClient) {
	ctx := t.ctx
	t.Step("fair lock: queue, deadlines, per-waiter wake-up")
	now := time.Now().Truncate(time.Millisecond)
	clock := func() time.Time { return now }
	name := e.key("fair")
	mk := func(owner string) *family.FairLock {
		return &family.FairLock{C: c, Name: name, Owner: owner, Now: clock}
	}
	id := family.NewID()
	a, b, cc, d := mk(family.Owner(id, 1)), mk(family.Owner(id, 2)), mk(family.Owner(id, 3)), mk(family.Owner(id, 4))
	const lease = 10 * time.Second
	wait := family.FairLockWait.Milliseconds()

	wantGranted(t, "A locks")(a.TryAcquire(ctx, lease))
	ok, ttlB, err := b.TryAcquire(ctx, lease)
	if err != nil || ok || ttlB <= 0 || ttlB > lease.Milliseconds() {
		t.Fatalf("B behind A = (%v, %d, %v), want queued with A's PTTL", ok, ttlB, err)
	}
	ok, ttlC, err := cc.TryAcquire(ctx, lease)
	deadlineB := now.UnixMilli() + ttlB + wait
	if err != nil || ok || ttlC != deadlineB-now.UnixMilli() {
		t.Fatalf("C behind B = (%v, %d, %v), want queued, %d ms (B's deadline from now)", ok, ttlC, err, deadlineB-now.UnixMilli())
	}
	if got, want := rawStrings(t, c, "LRANGE", a.QueueKey(), 0, -1), []string{b.Owner, cc.Owner}; !slices.Equal(got, want) {
		t.Fatalf("queue = %q, want %q", got, want)
	}
	// Scores are absolute ms deadlines, printed as Redis prints them.
	want := []string{b.Owner, strconv.FormatInt(deadlineB, 10), cc.Owner, strconv.FormatInt(deadlineB+wait, 10)}
	if got := rawStrings(t, c, "ZRANGE", a.TimeoutKey(), 0, -1, "WITHSCORES"); !slices.Equal(got, want) {
		t.Fatalf("ZRANGE timeout WITHSCORES = %q, want %q", got, want)
	}
	if ok, again, err := cc.TryAcquire(ctx, lease); err != nil || ok || again != ttlC {
		t.Fatalf("C again = (%v, %d, %v), want still queued, %d", ok, again, err, ttlC)
	}
	subB, err := family.Subscribe(ctx, c, b.MyChannel())
	t.must(err, "subscribe B")
	defer subB.Close()
	subC, err := family.Subscribe(ctx, c, cc.MyChannel())
	t.must(err, "subscribe C")
	defer subC.Close()

	wantUnlock(t, "A unlocks", family.Released)(a.Unlock(ctx, lease))
	if msg, ok := subB.Next(ctx, 5*time.Second); !ok || msg != "0" {
		t.Fatalf("B's channel after A's unlock = (%q, %v), want \"0\"", msg, ok)
	}
	wantNoMessage(t, subC, cc.MyChannel(), 200*time.Millisecond)
	if ok, _, err := cc.TryAcquire(ctx, lease); err != nil || ok {
		t.Fatalf("C while B is first in line = (%v, %v), want queued (fairness)", ok, err)
	}
	wantGranted(t, "B locks at its turn")(b.TryAcquire(ctx, lease))
	want = []string{cc.Owner, strconv.FormatInt(deadlineB, 10)} // one turn (ZINCRBY -wait) less
	if got := rawStrings(t, c, "ZRANGE", a.TimeoutKey(), 0, -1, "WITHSCORES"); !slices.Equal(got, want) {
		t.Fatalf("timeouts after B's grant = %q, want %q", got, want)
	}
	wantGranted(t, "B re-enters")(b.TryAcquire(ctx, lease))
	wantUnlock(t, "B unlocks once", family.StillHeld)(b.Unlock(ctx, lease))

	t.Step("fair lock: a waiter past its deadline is dropped; a waiter gives up")
	now = time.UnixMilli(deadlineB + 1)
	ok, _, err = d.TryAcquire(ctx, lease)
	if err != nil || ok {
		t.Fatalf("D = (%v, %v), want queued", ok, err)
	}
	if got := rawStrings(t, c, "LRANGE", a.QueueKey(), 0, -1); !slices.Equal(got, []string{d.Owner}) {
		t.Fatalf("queue after C's deadline passed = %q, want only D", got)
	}
	e2 := mk(family.Owner(id, 5))
	if ok, _, err := e2.TryAcquire(ctx, lease); err != nil || ok {
		t.Fatalf("E = (%v, %v), want queued", ok, err)
	}
	if n, err := d.Cancel(ctx); err != nil || n != 1 {
		t.Fatalf("D gives up = (%d, %v), want 1 waiter moved up", n, err)
	}
	if got := rawStrings(t, c, "LRANGE", a.QueueKey(), 0, -1); !slices.Equal(got, []string{e2.Owner}) {
		t.Fatalf("queue after D gave up = %q, want only E", got)
	}
	if n, err := e2.Cancel(ctx); err != nil || n != 0 {
		t.Fatalf("E gives up = (%d, %v), want 0", n, err)
	}
	wantUnlock(t, "B unlocks", family.Released)(b.Unlock(ctx, lease))
	wantExists(t, c, a.QueueKey(), 0)
	wantExists(t, c, a.TimeoutKey(), 0)
	wantExists(t, c, name, 0)
}

func rwLockCheck(t *T, e *env, c redis.UniversalClient) {
	ctx := t.ctx
	t.Step("read-write lock: readers share, per-reader timeout keys")
	name := e.key("rw")
	id := family.NewID()
	r1 := &family.RWLock{C: c, Name: name, Owner: family.Owner(id, 1)}
	r2 := &family.RWLock{C: c, Name: name, Owner: family.Owner(id, 2)}
	w := &family.RWLock{C: c, Name: name, Owner: family.Owner(id, 3)}
	const lease = 10 * time.Second
	watch, err := family.Subscribe(ctx, c, r1.Channel())
	t.must(err, "subscribe")
	defer watch.Close()

	wantGranted(t, "reader 1")(r1.ReadLock(ctx, lease))
	wantGranted(t, "reader 1 again")(r1.ReadLock(ctx, lease))
	wantGranted(t, "reader 2")(r2.ReadLock(ctx, 2*time.Second))
	wantString(t, c, "HGET mode", "read", "HGET", name, "mode")
	wantString(t, c, "HGET reader 1", "2", "HGET", name, r1.Owner)
	if n := wantIntCmd(t, c, "EXISTS", r1.TimeoutKey(1), r1.TimeoutKey(2), r2.TimeoutKey(1)); n != 3 {
		t.Fatalf("EXISTS of the three timeout keys = %d, want 3", n)
	}
	if ok, ttl, err := w.WriteLock(ctx, lease); err != nil || ok || ttl <= 0 {
		t.Fatalf("writer while read-locked = (%v, %d, %v), want the PTTL", ok, ttl, err)
	}
	if ok, err := r1.ReadRenew(ctx, 20*time.Second); err != nil || !ok {
		t.Fatalf("reader 1 renews = (%v, %v)", ok, err)
	}
	if pttl := wantIntCmd(t, c, "PTTL", r1.TimeoutKey(2)); pttl <= 15000 {
		t.Fatalf("PTTL of reader 1's second hold after renewal = %d, want about 20000", pttl)
	}
	wantUnlock(t, "reader 2 unlocks", family.StillHeld)(r2.ReadUnlock(ctx))
	if pttl := wantIntCmd(t, c, "PTTL", name); pttl <= 15000 {
		t.Fatalf("PTTL of the lock after reader 2 left = %d, want reader 1's longest hold (about 20000)", pttl)
	}
	wantNoMessage(t, watch, r1.Channel(), 100*time.Millisecond)
	wantUnlock(t, "reader 1 unlocks once", family.StillHeld)(r1.ReadUnlock(ctx))
	wantExists(t, c, r1.TimeoutKey(2), 0)
	wantUnlock(t, "reader 1 unlocks again", family.Released)(r1.ReadUnlock(ctx))
	if msg, ok := watch.Next(ctx, 5*time.Second); !ok || msg != "0" {
		t.Fatalf("message after the last read unlock = (%q, %v), want \"0\"", msg, ok)
	}
	wantExists(t, c, name, 0)

	t.Step("read-write lock: writer re-entry, reading under a write lock")
	wantGranted(t, "writer")(w.WriteLock(ctx, 5*time.Second))
	wantString(t, c, "HGET mode", "write", "HGET", name, "mode")
	wantGranted(t, "writer again")(w.WriteLock(ctx, 5*time.Second))
	if pttl := wantIntCmd(t, c, "PTTL", name); pttl <= 6000 {
		t.Fatalf("PTTL after write re-entry = %d, want the lease added to what was left (about 10000)", pttl)
	}
	if ok, _, err := r1.ReadLock(ctx, lease); err != nil || ok {
		t.Fatalf("reader while write-locked = (%v, %v), want refused", ok, err)
	}
	wantGranted(t, "writer reads")(w.ReadLock(ctx, lease))
	wantUnlock(t, "writer unlocks once", family.StillHeld)(w.WriteUnlock(ctx, 5*time.Second))
	wantUnlock(t, "writer unlocks", family.Released)(w.WriteUnlock(ctx, 5*time.Second))
	wantString(t, c, "HGET mode (the writer still reads)", "read", "HGET", name, "mode")
	wantNoMessage(t, watch, r1.Channel(), 100*time.Millisecond)
	wantGranted(t, "reader 1 joins")(r1.ReadLock(ctx, lease))
	wantUnlock(t, "writer's read unlock", family.StillHeld)(w.ReadUnlock(ctx))
	wantUnlock(t, "reader 1 unlocks", family.Released)(r1.ReadUnlock(ctx))
	if msg, ok := watch.Next(ctx, 5*time.Second); !ok || msg != "0" {
		t.Fatalf("message = (%q, %v), want \"0\"", msg, ok)
	}
	wantGranted(t, "writer")(w.WriteLock(ctx, 5*time.Second))
	wantUnlock(t, "non-owner write unlock", family.NotOwner)(r2.WriteUnlock(ctx, 5*time.Second))
	wantUnlock(t, "writer unlocks", family.Released)(w.WriteUnlock(ctx, 5*time.Second))
	if msg, ok := watch.Next(ctx, 5*time.Second); !ok || msg != "1" {
		t.Fatalf("message after a write unlock = (%q, %v), want \"1\"", msg, ok)
	}
	wantExists(t, c, name, 0)
}

func semaphoreCheck(t *T, e *env, c redis.UniversalClient) {
	ctx := t.ctx
	t.Step("semaphore")
	s := &family.Semaphore{C: c, Name: e.key("sem")}
	watch, err := family.Subscribe(ctx, c, s.Channel())
	t.must(err, "subscribe")
	defer watch.Close()
	wantBool(t, "trySetPermits(2)", true)(s.TrySetPermits(ctx, 2, 0))
	wantMessage(t, watch, s.Channel(), "2")
	wantBool(t, "trySetPermits again", false)(s.TrySetPermits(ctx, 5, 0))
	wantBool(t, "acquire", true)(s.TryAcquire(ctx, 1))
	wantBool(t, "acquire", true)(s.TryAcquire(ctx, 1))
	wantBool(t, "acquire with none left", false)(s.TryAcquire(ctx, 1))
	wantString(t, c, "GET", "0", "GET", s.Name)
	t.must(s.Release(ctx, 1), "release")
	wantMessage(t, watch, s.Channel(), "1")
	wantBool(t, "acquire after release", true)(s.TryAcquire(ctx, 1))
	if n, err := s.AddPermits(ctx, 3); err != nil || n != 3 {
		t.Fatalf("addPermits(3) = (%d, %v), want 3", n, err)
	}
	wantMessage(t, watch, s.Channel(), "3")
	if n, err := s.AddPermits(ctx, 2); err != nil || n != 5 {
		t.Fatalf("addPermits(2) = (%d, %v), want 5", n, err)
	}
	// The sum of two strings in Lua, passed to SET: stored as 5, not 5.0.
	wantString(t, c, "GET after string arithmetic", "5", "GET", s.Name)
	wantMessage(t, watch, s.Channel(), "5")
	if n, err := s.Drain(ctx); err != nil || n != 5 {
		t.Fatalf("drain = (%d, %v), want 5", n, err)
	}
	wantString(t, c, "GET after drain", "0", "GET", s.Name)
	leased := &family.Semaphore{C: c, Name: e.key("sem:px")}
	wantBool(t, "trySetPermits with a lifetime", true)(leased.TrySetPermits(ctx, 1, 5*time.Second))
	if pttl := wantIntCmd(t, c, "PTTL", leased.Name); pttl <= 0 || pttl > 5000 {
		t.Fatalf("PTTL = %d, want within 5000", pttl)
	}
}

func permitSemaphoreCheck(t *T, e *env, c redis.UniversalClient) {
	ctx := t.ctx
	t.Step("permit-expirable semaphore: binary ids, scores compared as strings")
	now := time.Now().Truncate(time.Millisecond)
	s := &family.PermitSemaphore{C: c, Name: e.key("pes"), Now: func() time.Time { return now }}
	watch, err := family.Subscribe(ctx, c, s.Channel())
	t.must(err, "subscribe")
	defer watch.Close()
	wantBool(t, "trySetPermits(2)", true)(s.TrySetPermits(ctx, 2))
	wantMessage(t, watch, s.Channel(), "2")
	wantBool(t, "trySetPermits again", false)(s.TrySetPermits(ctx, 2))

	// Ids that a text protocol would mangle: NUL, CR LF, bytes >= 0x80.
	id1 := "\x00\xff\x80\r\n" + family.NewPermitID()[:11]
	id2 := family.NewPermitID()[:15] + "\x00"
	deadline1 := now.Add(time.Minute)
	acquire := func(id string, deadline time.Time) family.Acquire {
		r, err := s.TryAcquire(ctx, id, deadline)
		t.must(err, "acquire")
		return r
	}
	if r := acquire(id1, deadline1); !r.Granted || r.ID != id1 {
		t.Fatalf("acquire id1 = %+v, want granted with the same 16 bytes", r)
	}
	if r := acquire(id2, time.Time{}); !r.Granted || r.ID != id2 {
		t.Fatalf("acquire id2 without a lease = %+v, want granted", r)
	}
	want := []string{id1, strconv.FormatInt(deadline1.UnixMilli(), 10), id2, family.NoExpiry}
	if got := rawStrings(t, c, "ZRANGE", s.TimeoutKey(), 0, -1, "WITHSCORES"); !slices.Equal(got, want) {
		t.Fatalf("ZRANGE WITHSCORES = %q, want %q", got, want)
	}
	id3 := family.NewPermitID()
	if r := acquire(id3, now.Add(time.Minute)); r.Granted || r.Wait != time.Minute.Milliseconds() {
		t.Fatalf("acquire with none free = %+v, want the ms until id1's lease ends (60000)", r)
	}
	if got, ok, err := s.Lease(ctx, id1); err != nil || !ok || got != strconv.FormatInt(deadline1.UnixMilli(), 10) {
		t.Fatalf("id1's lease = (%q, %v, %v), want %d", got, ok, err, deadline1.UnixMilli())
	}
	deadline1 = now.Add(time.Second)
	wantBool(t, "update id1's lease", true)(s.UpdateLease(ctx, id1, deadline1))
	if got, _, _ := s.Lease(ctx, id1); got != strconv.FormatInt(deadline1.UnixMilli(), 10) {
		t.Fatalf("id1's lease after update = %q, want %d", got, deadline1.UnixMilli())
	}
	if free, held, err := s.Counts(ctx); err != nil || free != 0 || held != 2 {
		t.Fatalf("counts = (%d, %d, %v), want (0, 2)", free, held, err)
	}

	now = now.Add(2 * time.Second) // id1's lease has run out
	if r := acquire(id3, now.Add(time.Minute)); !r.Granted || r.ID != id3 {
		t.Fatalf("acquire after id1's lease ran out = %+v, want granted", r)
	}
	wantMessage(t, watch, s.Channel(), "1")
	if _, ok, _ := s.Lease(ctx, id1); ok {
		t.Fatalf("id1 is still held after its lease ran out")
	}
	wantBool(t, "update an expired permit's lease", false)(s.UpdateLease(ctx, id1, now.Add(time.Minute)))
	if n, err := s.Release(ctx, id3); err != nil || n != 1 {
		t.Fatalf("release id3 = (%d, %v), want 1", n, err)
	}
	wantMessage(t, watch, s.Channel(), "1")
	id4 := family.NewPermitID()
	if r := acquire(id4, time.Time{}); !r.Granted {
		t.Fatalf("acquire id4 = %+v, want granted", r)
	}
	// Every held permit is lease-free: the script finds the "no expiry"
	// score by comparing strings, and answers nil.
	if r := acquire(family.NewPermitID(), time.Time{}); r.Granted || r.Wait != -1 {
		t.Fatalf("acquire with only lease-free permits held = %+v, want nil", r)
	}
	if n, err := s.Release(ctx, id2, id4, id1); err != nil || n != 2 {
		t.Fatalf("release id2, id4, id1 = (%d, %v), want 2 (id1 is gone)", n, err)
	}
	wantMessage(t, watch, s.Channel(), "2")
	if free, held, err := s.Counts(ctx); err != nil || free != 2 || held != 0 {
		t.Fatalf("counts = (%d, %d, %v), want (2, 0)", free, held, err)
	}
}

func latchCheck(t *T, e *env, c redis.UniversalClient) {
	ctx := t.ctx
	t.Step("count-down latch")
	l := &family.CountDownLatch{C: c, Name: e.key("latch")}
	watch, err := family.Subscribe(ctx, c, l.Channel())
	t.must(err, "subscribe")
	defer watch.Close()
	wantBool(t, "trySetCount(2)", true)(l.TrySetCount(ctx, 2))
	wantMessage(t, watch, l.Channel(), "1")
	wantBool(t, "trySetCount again", false)(l.TrySetCount(ctx, 2))
	t.must(l.CountDown(ctx), "countDown")
	wantString(t, c, "GET", "1", "GET", l.Name)
	wantNoMessage(t, watch, l.Channel(), 100*time.Millisecond)
	t.must(l.CountDown(ctx), "countDown to zero")
	wantMessage(t, watch, l.Channel(), "0")
	wantExists(t, c, l.Name, 0)
	t.must(l.CountDown(ctx), "countDown of an open latch")
	wantExists(t, c, l.Name, 0)
	wantNoMessage(t, watch, l.Channel(), 100*time.Millisecond)
	wantBool(t, "delete an open latch", false)(l.Delete(ctx))
	wantBool(t, "trySetCount(1)", true)(l.TrySetCount(ctx, 1))
	wantMessage(t, watch, l.Channel(), "1")
	wantBool(t, "delete", true)(l.Delete(ctx))
	wantMessage(t, watch, l.Channel(), "0")
}

func fencedLockCheck(t *T, e *env, c redis.UniversalClient) {
	ctx := t.ctx
	t.Step("fenced lock: tokens, array replies, the unlock latch")
	id := family.NewID()
	a := &family.FencedLock{C: c, Name: e.key("fenced"), Owner: family.Owner(id, 1), LatchLife: 400 * time.Millisecond}
	b := &family.FencedLock{C: c, Name: a.Name, Owner: family.Owner(id, 2)}
	const lease = 10 * time.Second
	ok, t1, _, err := a.TryLock(ctx, lease)
	if err != nil || !ok || t1 < 1 {
		t.Fatalf("A locks = (%v, token %d, %v)", ok, t1, err)
	}
	ok, t2, _, err := a.TryLock(ctx, lease)
	if err != nil || !ok || t2 != t1+1 {
		t.Fatalf("A re-enters = (%v, token %d, %v), want token %d", ok, t2, err, t1+1)
	}
	if ok, tok, ttl, err := b.TryLock(ctx, lease); err != nil || ok || tok != -1 || ttl <= 0 {
		t.Fatalf("B = (%v, token %d, ttl %d, %v), want {pttl, -1}", ok, tok, ttl, err)
	}
	wantString(t, c, "GET token", strconv.FormatInt(t2, 10), "GET", a.TokenKey())
	wantUnlock(t, "A unlocks once", family.StillHeld)(a.Unlock(ctx))

	req := family.NewID()
	wantUnlock(t, "A unlocks", family.Released)(a.UnlockRequest(ctx, req))
	wantUnlock(t, "A's unlock retried", family.Released)(a.UnlockRequest(ctx, req))
	if pttl := wantIntCmd(t, c, "PTTL", a.LatchKey(req)); pttl <= 0 || pttl > 400 {
		t.Fatalf("PTTL of the unlock latch = %d, want within its 400 ms", pttl)
	}
	deadline := time.Now().Add(3 * time.Second)
	for wantIntCmd(t, c, "EXISTS", a.LatchKey(req)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the unlock latch key outlived its PX by seconds")
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantUnlock(t, "A's unlock retried after the latch expired", family.NotOwner)(a.UnlockRequest(ctx, req))
	ok, t3, _, err := b.TryLock(ctx, lease)
	if err != nil || !ok || t3 <= t2 {
		t.Fatalf("B locks = (%v, token %d, %v), want a token above %d", ok, t3, err, t2)
	}
	wantUnlock(t, "B unlocks", family.Released)(b.Unlock(ctx))
	if n := wantIntCmd(t, c, "EXISTS", a.Name); n != 0 {
		t.Fatalf("lock still exists")
	}
}

func multiLockCheck(t *T, e *env) {
	ctx := t.ctx
	nodes := e.nodes(t)
	for _, n := range nodes {
		ping(t, n)
	}
	if len(nodes) != 3 {
		t.Fatalf("redlock3 wants three nodes, got %d", len(nodes))
	}
	name := e.key("multi")
	locks := func(owner string, cs ...redis.UniversalClient) []*family.RLock {
		var ls []*family.RLock
		for _, c := range cs {
			ls = append(ls, family.NewRLock(c, name, owner))
		}
		return ls
	}
	id := family.NewID()
	a, b, x := family.Owner(id, 1), family.Owner(id, 2), family.Owner(id, 3)
	hexists := func(i int, owner string) bool {
		n, err := nodes[i].HExists(ctx, name, owner).Result()
		t.must(err, "HEXISTS")
		return n
	}

	t.Step("MultiLock: every node")
	ma := &family.MultiLock{Locks: locks(a, nodes...)}
	wantBool(t, "A's MultiLock", true)(ma.TryLock(ctx, time.Second, 10*time.Second))
	for i := range nodes {
		if !hexists(i, a) {
			t.Fatalf("node %d has no hold of A", i+1)
		}
		if pttl := nodes[i].PTTL(ctx, name).Val(); pttl <= 0 || pttl > 10*time.Second {
			t.Fatalf("node %d: PTTL %v, want the 10 s lease", i+1, pttl)
		}
	}
	mb := &family.MultiLock{Locks: locks(b, nodes...)}
	wantBool(t, "B's MultiLock while A holds", false)(mb.TryLock(ctx, 300*time.Millisecond, 10*time.Second))
	ma.Unlock(ctx)
	for i := range nodes {
		wantExists(t, nodes[i], name, 0)
	}

	t.Step("MultiLock: one node held by someone else; nothing is left behind")
	hx := family.NewRLock(nodes[2], name, x)
	wantGranted(t, "X on node 3")(hx.TryAcquire(ctx, 10*time.Second))
	wantBool(t, "A's MultiLock", false)(ma.TryLock(ctx, 300*time.Millisecond, 10*time.Second))
	for i := range 2 {
		if hexists(i, a) {
			t.Fatalf("node %d keeps A's hold after a failed MultiLock", i+1)
		}
	}

	t.Step("RedLock: a majority is enough")
	ra := family.NewRedLock(locks(a, nodes...)...)
	wantBool(t, "A's RedLock with node 3 held", true)(ra.TryLock(ctx, time.Second, 5*time.Second))
	if !hexists(0, a) || !hexists(1, a) || hexists(2, a) {
		t.Fatalf("A's holds = %v %v %v, want nodes 1 and 2", hexists(0, a), hexists(1, a), hexists(2, a))
	}
	rb := family.NewRedLock(locks(b, nodes...)...)
	wantBool(t, "B's RedLock", false)(rb.TryLock(ctx, 300*time.Millisecond, 5*time.Second))
	ra.Unlock(ctx)
	wantUnlock(t, "X unlocks", family.Released)(hx.Unlock(ctx))

	t.Step("RedLock and MultiLock with a node down")
	dead := e.deadNode(t)
	downLocks := locks(a, nodes[0], nodes[1], dead)
	rd := family.NewRedLock(downLocks...)
	wantBool(t, "RedLock with 2 of 3 nodes up", true)(rd.TryLock(ctx, time.Second, 5*time.Second))
	rd.Unlock(ctx)
	md := &family.MultiLock{Locks: downLocks}
	wantBool(t, "MultiLock with a node down", false)(md.TryLock(ctx, 300*time.Millisecond, 5*time.Second))
	for i := range 2 {
		wantExists(t, nodes[i], name, 0)
	}

	t.Step("MultiLock with the watchdog")
	mw := &family.MultiLock{Locks: locks(a, nodes...)}
	for _, l := range mw.Locks {
		l.Watchdog = 900 * time.Millisecond
	}
	wantBool(t, "MultiLock without a lease", true)(mw.TryLock(ctx, time.Second, 0))
	time.Sleep(2 * time.Second)
	for i := range nodes {
		if !hexists(i, a) {
			t.Fatalf("node %d lost A's hold: the watchdog did not renew it", i+1)
		}
	}
	mw.Unlock(ctx)
	for i := range nodes {
		wantExists(t, nodes[i], name, 0)
	}
}

// familyWorker contends for a fenced lock: tokens must keep rising across
// the leader kill (a lost write would hand out a token again).
func familyWorker(t *T, e *env, w int) cycle {
	c := e.clientProto(t, 2)
	id := family.NewID()
	thread := 0
	return func(ctx context.Context, hold func()) (bool, error) {
		thread++ // a new thread per cycle (see rlockWorker)
		l := &family.FencedLock{C: c, Name: e.key("fenced:failover"), Owner: family.Owner(id, thread)}
		deadline := time.Now().Add(failoverLockWait)
		for {
			ok, token, _, err := l.TryLock(ctx, failoverLockTTL)
			if err != nil {
				return false, err
			}
			if ok {
				var bad error
				if prev := lastToken.Load(); token <= prev {
					bad = fmt.Errorf("token %d granted after token %d", token, prev)
				}
				lastToken.Store(token)
				hold()
				_, err := l.Unlock(ctx)
				if bad != nil {
					t.Errorf("fencing broken: %v", bad)
				}
				return true, err
			}
			if time.Now().After(deadline) {
				return false, nil
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

var lastToken atomic.Int64

func wantBool(t *T, what string, want bool) func(bool, error) {
	return func(got bool, err error) {
		if err != nil || got != want {
			t.Fatalf("%s = (%v, %v), want %v", what, got, err, want)
		}
	}
}

func wantMessage(t *T, s *family.Sub, channel, want string) {
	if msg, ok := s.Next(t.ctx, 5*time.Second); !ok || msg != want {
		t.Fatalf("message on %s = (%q, %v), want %q", channel, msg, ok, want)
	}
}
