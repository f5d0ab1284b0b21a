package deadbolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	dbclient "github.com/deadbolt/deadbolt/client"
	"github.com/deadbolt/deadbolt/fsm"
)

// lockInfo is one entry of DEADBOLT LOCKS, read over RESP2.
type lockInfo map[string]any

func (l lockInfo) int(k string) int64  { n, _ := l[k].(int64); return n }
func (l lockInfo) str(k string) string { s, _ := l[k].(string); return s }

// holders renders the holders as "id=count,...".
func (l lockInfo) holders() string {
	var out []string
	for _, h := range l["holders"].([]any) {
		m := flatMap(h.([]any))
		out = append(out, fmt.Sprintf("%s=%d", m["id"], m["count"]))
	}
	return strings.Join(out, ",")
}

func flatMap(kv []any) lockInfo {
	m := lockInfo{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// deadboltLocks runs DEADBOLT LOCKS on rdb (a RESP2 client) and returns
// the locks by name.
func deadboltLocks(tb testing.TB, rdb *redis.Client, opts ...any) map[string]lockInfo {
	tb.Helper()
	r, err := rdb.Do(context.Background(), append([]any{"DEADBOLT", "LOCKS"}, opts...)...).Slice()
	if err != nil {
		tb.Fatalf("DEADBOLT LOCKS: %v", err)
	}
	out := make(map[string]lockInfo)
	for _, e := range r {
		l := flatMap(e.([]any))
		out[l.str("name")] = l
	}
	return out
}

// waitLocks polls DEADBOLT LOCKS until cond holds (a waiter subscribes
// or queues from another goroutine), for at most 10 s.
func waitLocks(tb testing.TB, rdb *redis.Client, what string, cond func(map[string]lockInfo) bool) map[string]lockInfo {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls := deadboltLocks(tb, rdb)
		if cond(ls) {
			return ls
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not seen in DEADBOLT LOCKS: %v", what, ls)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func resp2(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, ReadTimeout: 5 * time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}

// TestDeadboltLocksClients takes locks with the clients deadbolt serves
// (the Redisson family through the project's client, redsync, redislock,
// redis-py, node-redlock, node-redisson) and checks that DEADBOLT LOCKS names each one's kind, holder,
// lease and waiters, and that the lock counters saw them.
func TestDeadboltLocksClients(t *testing.T) {
	n := RunT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := resp2(t, n.Addr())
	start := time.Now().UnixMilli()
	a := dbclient.New(redis.NewClient(&redis.Options{Addr: n.Addr()}))
	b := dbclient.New(redis.NewClient(&redis.Options{Addr: n.Addr()}))
	defer a.Close()
	defer b.Close()
	svcA := func(th int64) dbclient.LockOption { return dbclient.WithOwner(dbclient.OwnerOf("svc-a", th)) }
	svcB := func(th int64) dbclient.LockOption { return dbclient.WithOwner(dbclient.OwnerOf("svc-b", th)) }
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	must("lock", a.NewLock("orders", svcA(1)).Lock(ctx))
	must("fair lock", a.NewFairLock("fair", svcA(2)).Lock(ctx))
	rw := a.NewReadWriteLock("rw", svcA(3))
	must("read lock", rw.ReadLock().Lock(ctx))
	must("second reader", b.NewReadWriteLock("rw", svcB(3)).ReadLock().Lock(ctx))
	_, err := a.NewFencedLock("fence", svcA(4)).LockAndGetToken(ctx)
	must("fenced lock", err)
	sem := a.NewSemaphore("sem")
	_, err = sem.TrySetPermits(ctx, 3)
	must("semaphore", err)
	must("semaphore acquire", sem.Acquire(ctx, 1))
	_, err = a.NewCountDownLatch("latch").TrySetCount(ctx, 2)
	must("latch", err)
	psem := a.NewPermitExpirableSemaphore("psem")
	_, err = psem.TrySetPermits(ctx, 2)
	must("permit semaphore", err)
	permit, err := psem.Acquire(ctx, time.Minute)
	must("permit", err)

	rs := redsync.New(goredis.NewPool(redis.NewClient(&redis.Options{Addr: n.Addr()})))
	mu := rs.NewMutex("rs", redsync.WithExpiry(20*time.Second), redsync.WithTries(1))
	must("redsync", mu.Lock())
	if err := rs.NewMutex("rs", redsync.WithTries(1)).Lock(); err == nil {
		t.Fatal("redsync: a second mutex took a held lock")
	}
	rl, err := redislock.New(redis.NewClient(&redis.Options{Addr: n.Addr()})).Obtain(ctx, "rl", 20*time.Second, nil)
	must("redislock", err)
	pyToken := redisPyLock(t, n.Addr(), "py")
	before := n.LockStats()
	nrlValue, nrsField := nodeLocks(t, n.Addr(), false) // locks_node_test.go
	after := n.LockStats()
	// node-redlock: two locks taken (nrl2 released); node-redisson: two
	// taken (nrs2 released). node-redlock's refused attempt is not
	// counted as contended: its script finds the key with EXISTS and
	// writes nothing, which tells the state machine nothing about a lock
	// (docs/OPERATIONS.md).
	if s0, s1 := before[fsm.LockString], after[fsm.LockString]; s1.Acquired-s0.Acquired != 2 || s1.Released-s0.Released != 1 {
		t.Errorf("node-redlock's string counters moved %+v -> %+v; want 2 acquired, 1 released", s0, s1)
	}
	if s0, s1 := before[fsm.LockReentrant], after[fsm.LockReentrant]; s1.Acquired-s0.Acquired != 2 || s1.Released-s0.Released != 1 {
		t.Errorf("node-redisson's reentrant counters moved %+v -> %+v; want 2 acquired, 1 released", s0, s1)
	}

	// Waiters: b waits for the lock (subscribed to its channel) and queues
	// for the fair lock.
	got := make(chan error, 2)
	go func() {
		ok, err := b.NewLock("orders", svcB(1)).TryLock(ctx, 20*time.Second, 30*time.Second)
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		got <- err
	}()
	go func() {
		ok, err := b.NewFairLock("fair", svcB(2)).TryLock(ctx, 20*time.Second, 30*time.Second)
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		got <- err
	}()
	ls := waitLocks(t, rdb, "waiters", func(ls map[string]lockInfo) bool {
		return ls["orders"].int("waiters") == 1 && ls["fair"].int("waiters") == 1
	})

	want := map[string]struct{ kind, holders string }{
		"orders": {"reentrant", "svc-a:1=1"},
		"fair":   {"fair", "svc-a:2=1"},
		"rw":     {"rwlock", "svc-a:3=1,svc-b:3=1"},
		"fence":  {"fenced", "svc-a:4=1"},
		"sem":    {"semaphore", ""},
		"latch":  {"latch", ""},
		"psem":   {"permit-semaphore", permit + "=1"},
		"rs":     {"string", mu.Value() + "=1"},
		"rl":     {"string", rl.Token() + "=1"},
		"py":     {"string", pyToken + "=1"},
		"nrl":    {"string", nrlValue + "=1"},
		"nrs":    {"reentrant", nrsField + "=1"},
	}
	if len(ls) != len(want) {
		t.Errorf("DEADBOLT LOCKS lists %d locks, want %d: %v", len(ls), len(want), ls)
	}
	now := time.Now().UnixMilli()
	for name, w := range want {
		l := ls[name]
		if l == nil {
			t.Errorf("%s: not listed", name)
			continue
		}
		if l.str("kind") != w.kind || l.holders() != w.holders {
			t.Errorf("%s: kind %q holders %q, want %q %q", name, l.str("kind"), l.holders(), w.kind, w.holders)
		}
		since := l.int("held-since-ms")
		switch w.kind {
		case "semaphore", "permit-semaphore", "latch":
			if since != -1 {
				t.Errorf("%s: held-since-ms %d, want -1 (unknown)", name, since)
			}
		default:
			if since < start || since > now {
				t.Errorf("%s: held-since-ms %d outside [%d, %d]", name, since, start, now)
			}
			if lease := l.int("lease-ms"); lease <= 0 || lease > 30000 {
				t.Errorf("%s: lease-ms %d", name, lease)
			}
		}
	}
	if q := ls["fair"]["queue"].([]any); len(q) != 1 || flatMap(q[0].([]any)).str("id") != "svc-b:2" || flatMap(q[0].([]any)).int("deadline-ms") < now {
		t.Errorf("fair queue: %v", q)
	}
	if ls["fence"].int("token") != 1 || ls["sem"].int("permits") != 2 || ls["latch"].int("count") != 2 || ls["psem"].int("permits") != 1 || ls["rw"].str("mode") != "read" {
		t.Errorf("kind fields: fence token %v, sem permits %v, latch count %v, psem permits %v, rw mode %v",
			ls["fence"]["token"], ls["sem"]["permits"], ls["latch"]["count"], ls["psem"]["permits"], ls["rw"]["mode"])
	}
	if ls["rs"].int("waiters") != -1 {
		t.Errorf("a string lock's waiters: %d, want -1 (its clients poll)", ls["rs"].int("waiters"))
	}
	if f := deadboltLocks(t, rdb, "KIND", "string", "MATCH", "r*"); len(f) != 2 || f["rs"] == nil || f["rl"] == nil {
		t.Errorf("KIND string MATCH r*: %v", f)
	}
	if f := deadboltLocks(t, rdb, "MATCH", "nr*"); len(f) != 2 || f["nrl"].str("kind") != "string" || f["nrs"].str("kind") != "reentrant" {
		t.Errorf("MATCH nr* (the Node clients' locks): %v", f)
	}

	// RESP3: each lock is a map.
	r3 := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 3})
	defer r3.Close()
	if v, err := r3.Do(ctx, "DEADBOLT", "LOCKS", "COUNT", "1").Slice(); err != nil || len(v) != 1 {
		t.Errorf("RESP3: %v %v", v, err)
	} else if m, ok := v[0].(map[any]any); !ok || m["name"] != "fair" {
		t.Errorf("RESP3 entry: %T %v", v[0], v[0])
	}

	// Release: each waiter takes its lock.
	must("unlock", a.NewLock("orders", svcA(1)).Unlock(ctx))
	must("fair unlock", a.NewFairLock("fair", svcA(2)).Unlock(ctx))
	for i := 0; i < 2; i++ {
		must("waiter", <-got)
	}
	ls = deadboltLocks(t, rdb)
	if ls["orders"].holders() != "svc-b:1=1" || ls["fair"].holders() != "svc-b:2=1" || len(ls["fair"]["queue"].([]any)) != 0 {
		t.Errorf("after unlock: orders %v, fair %v", ls["orders"], ls["fair"])
	}

	// Counters: five string locks taken, one contended (redsync's); two
	// Redisson locks released (lock and fair lock) and taken again.
	st := n.LockStats()
	if s := st[fsm.LockString]; s.Acquired != 5 || s.Contended < 1 {
		t.Errorf("string counters: %+v", s)
	}
	if s := st[fsm.LockReentrant]; s.Acquired < 5 || s.Released < 2 || s.HoldCount != s.Released+s.Expired {
		t.Errorf("reentrant counters: %+v", s)
	}
	if s := st[fsm.LockReadWrite]; s.Acquired != 2 {
		t.Errorf("rwlock counters: %+v", s)
	}
	if s := st[fsm.LockSemaphore]; s.Acquired < 1 {
		t.Errorf("semaphore counters: %+v", s)
	}
}

// redisPyLock takes a lock with redis-py's Lock (SET NX PX with a random
// token) from a python3 process and returns its token.
func redisPyLock(t *testing.T, addr, name string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	script := fmt.Sprintf(`import redis
r = redis.Redis(host=%q, port=%s)
l = r.lock(%q, timeout=30)
assert l.acquire(blocking=False)
print(l.local.token.decode())`, host, port, name)
	py := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3" // Debian's, with its python3-redis
	}
	out, err := exec.Command(py, "-c", script).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(string(out), "No module named") {
			t.Skipf("redis-py is not installed: %s", out)
		}
		t.Fatalf("redis-py lock: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestDeadboltLocksThroughFollower: DEADBOLT LOCKS on a follower is a
// linearizable read (forwarded like GET), so a lock taken through the
// leader shows at once; every node counts the acquisition as it applies.
func TestDeadboltLocksThroughFollower(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	leader := c.WaitLeader()
	lc := dbclient.New(redis.NewClient(&redis.Options{Addr: c.Addr(leader)}))
	defer lc.Close()
	if err := lc.NewLock("orders", dbclient.WithOwner(dbclient.OwnerOf("svc-a", 1))).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := resp2(t, c.Addr(leader)).SetNX(ctx, "job", "tok", 10*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX: %v %v", ok, err)
	}
	f := c.Followers()
	ls := deadboltLocks(t, resp2(t, c.Addr(f[0])))
	if ls["orders"].str("kind") != "reentrant" || ls["orders"].holders() != "svc-a:1=1" || ls["job"].holders() != "tok=1" {
		t.Fatalf("through a follower: %v", ls)
	}
	if ls["orders"].int("waiters") != 0 || ls["orders"].int("waiters-nodes") != 3 {
		t.Errorf("waiters before any subscribe: %v", ls["orders"])
	}
	// Waiters subscribed on the leader (plain) and on the other follower
	// (sharded, as Redisson in cluster mode): the follower asked counts
	// both.
	subLeader := resp2(t, c.Addr(leader)).Subscribe(ctx, "redisson_lock__channel:{orders}")
	defer subLeader.Close()
	subOther := resp2(t, c.Addr(f[1])).SSubscribe(ctx, "redisson_lock__channel:{orders}")
	defer subOther.Close()
	for _, s := range []*redis.PubSub{subLeader, subOther} {
		if _, err := s.Receive(ctx); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}
	ls = deadboltLocks(t, resp2(t, c.Addr(f[0])))
	if ls["orders"].int("waiters") != 2 || ls["orders"].int("waiters-nodes") != 3 {
		t.Errorf("waiters on the other members: %v", ls["orders"])
	}
	// A member that is down is left out, and said to be.
	c.Kill(f[1])
	ls = deadboltLocks(t, resp2(t, c.Addr(f[0])))
	if ls["orders"].int("waiters") != 1 || ls["orders"].int("waiters-nodes") != 2 {
		t.Errorf("with a member down: %v", ls["orders"])
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := range c.Nodes {
		if c.Nodes[i] == nil {
			continue // killed above
		}
		for c.Nodes[i].LockStats()[fsm.LockString].Acquired != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d never counted the string lock: %+v", i, c.Nodes[i].LockStats())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestDeadboltLocksErrors: bad input gets an error reply; the command is
// no part of a transaction or a script; COMMAND describes it as a read.
func TestDeadboltLocksErrors(t *testing.T) {
	n := RunT(t)
	ctx := context.Background()
	rdb := resp2(t, n.Addr())
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"DEADBOLT", "LOCKS", "KIND", "mutex"}, "ERR unknown lock kind 'mutex'"},
		{[]any{"DEADBOLT", "LOCKS", "COUNT", "-1"}, "ERR COUNT must be a positive integer"},
		{[]any{"DEADBOLT", "LOCKS", "MATCH"}, "ERR syntax error"},
		{[]any{"DEADBOLT", "NOPE"}, "ERR unknown subcommand 'NOPE'"},
		{[]any{"DEADBOLT"}, "ERR wrong number of arguments for 'deadbolt' command"},
		{[]any{"__locks"}, "ERR unknown command '__locks'"},
		{[]any{"EVAL", "return redis.call('__locks')", "0"}, "ERR Unknown Redis command called from script"},
	} {
		err := rdb.Do(ctx, tc.args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if help, err := rdb.Do(ctx, "DEADBOLT", "HELP").StringSlice(); err != nil || len(help) < 2 || !strings.HasPrefix(help[1], "LOCKS") {
		t.Errorf("DEADBOLT HELP: %q %v", help, err)
	}
	var get *redis.StringCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, "x")
		p.Do(ctx, "DEADBOLT", "LOCKS")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "EXECABORT") || get.Err() == nil {
		t.Errorf("DEADBOLT LOCKS inside MULTI: %v", err)
	}
	info, err := rdb.Do(ctx, "COMMAND", "INFO", "deadbolt").Slice()
	if err != nil || len(info) != 1 {
		t.Fatalf("COMMAND INFO deadbolt: %v %v", info, err)
	}
	if s := fmt.Sprint(info[0]); !strings.Contains(s, "deadbolt|locks -2 [readonly noscript]") || !strings.Contains(s, "[@read @slow]") {
		t.Errorf("COMMAND INFO deadbolt: %s", s)
	}
}

// TestDeadboltLocksLeaseExpired: owners that vanish without unlocking
// (a crashed service) show as leases expired, with the lease as the hold
// time, and their locks leave the list.
func TestDeadboltLocksLeaseExpired(t *testing.T) {
	n := RunT(t)
	ctx := context.Background()
	rdb := resp2(t, n.Addr())
	a := dbclient.New(redis.NewClient(&redis.Options{Addr: n.Addr()}))
	if err := a.NewLock("orders", dbclient.WithOwner(dbclient.OwnerOf("svc-a", 1))).LockLease(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	rs := redsync.New(goredis.NewPool(redis.NewClient(&redis.Options{Addr: n.Addr()})))
	if err := rs.NewMutex("job", redsync.WithExpiry(2*time.Second), redsync.WithTries(1)).Lock(); err != nil {
		t.Fatal(err)
	}
	a.Close() // the service dies holding both
	if ls := deadboltLocks(t, rdb); len(ls) != 2 {
		t.Fatalf("before the leases end: %v", ls)
	}
	n.Advance(3 * time.Second)
	if ls := deadboltLocks(t, rdb); len(ls) != 0 {
		t.Errorf("after the leases ended: %v", ls)
	}
	st := n.LockStats()
	for _, k := range []fsm.LockKind{fsm.LockString, fsm.LockReentrant} {
		s := st[k]
		if s.Expired != 1 || s.Released != 0 || s.HoldCount != 1 || s.HoldSumMs < 1990 || s.HoldSumMs > 2000 {
			t.Errorf("%s: expired %d released %d holds %d, hold sum %d ms (want about the 2000 ms lease)", k, s.Expired, s.Released, s.HoldCount, s.HoldSumMs)
		}
	}
}
