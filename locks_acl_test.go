package deadbolt

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	dbclient "github.com/deadbolt/deadbolt/client"
)

// userResp2 is a RESP2 client authenticated as an ACL user.
func userResp2(tb testing.TB, addr, user, pass string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, Protocol: 2, MaxRetries: -1, ReadTimeout: 5 * time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}

func lockNames(ls map[string]lockInfo) string {
	var names []string
	for name := range ls {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// TestDeadboltLocksACL: DEADBOLT LOCKS shows a restricted ACL user only
// the locks whose keys it may read (the README's lock-service user, with
// ~lock:*), Redisson hash locks and SET NX string locks alike: another
// application's lock tokens and owner ids, which release its locks, stay
// hidden; COUNT counts the locks shown. The default user sees every
// lock; a selector shows its keys only if it also allows the command.
func TestDeadboltLocksACL(t *testing.T) {
	n := RunT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := resp2(t, n.Addr())
	for _, rules := range [][]any{
		append([]any{"locker"}, lockUserRules...),
		{"auditor", "on", ">p", "%R~*", "+deadbolt|locks"},
		{"writer", "on", ">p", "%W~*", "+deadbolt|locks"},
		{"sel", "on", ">p", "~lock:*", "+deadbolt|locks", "(~pay-* +get)", "(%R~billing +@read)"},
		{"nolocks", "on", ">p", "~*", "+@all", "-deadbolt|locks"},
	} {
		if err := admin.Do(ctx, append([]any{"ACL", "SETUSER"}, rules...)...).Err(); err != nil {
			t.Fatalf("ACL SETUSER %v: %v", rules, err)
		}
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The lock service's own locks, taken as its user: a Redisson lock and
	// a redsync (SET NX) lock.
	locker := userClient(t, n.Addr(), "locker", "lockpass")
	lc := dbclient.New(locker)
	defer lc.Close()
	must("locker's lock", lc.NewLock("lock:orders", dbclient.WithOwner(dbclient.OwnerOf("svc-a", 1))).Lock(ctx))
	mu := redsync.New(goredis.NewPool(locker)).NewMutex("lock:job", redsync.WithExpiry(20*time.Second), redsync.WithTries(1))
	must("locker's redsync lock", mu.Lock())
	// Another application's, taken as the default user: a Redisson lock,
	// a redislock (SET NX) lock, and a fenced lock under lock:* whose token
	// counter (redisson_lock_token:{lock:fence}) the lock service may not
	// read.
	ac := dbclient.New(redis.NewClient(&redis.Options{Addr: n.Addr()}))
	defer ac.Close()
	must("other lock", ac.NewLock("billing", dbclient.WithOwner(dbclient.OwnerOf("svc-b", 1))).Lock(ctx))
	rl, err := redislock.New(redis.NewClient(&redis.Options{Addr: n.Addr()})).Obtain(ctx, "pay-job", 20*time.Second, nil)
	must("other redislock lock", err)
	_, err = ac.NewFencedLock("lock:fence", dbclient.WithOwner(dbclient.OwnerOf("svc-b", 2))).LockAndGetToken(ctx)
	must("fenced lock", err)

	const all = "billing,lock:fence,lock:job,lock:orders,pay-job"
	if got := lockNames(deadboltLocks(t, admin)); got != all {
		t.Errorf("the default user sees %s, want %s", got, all)
	}
	lr := userResp2(t, n.Addr(), "locker", "lockpass")
	ls := deadboltLocks(t, lr)
	if got := lockNames(ls); got != "lock:job,lock:orders" {
		t.Errorf("locker sees %s, want lock:job,lock:orders", got)
	}
	if ls["lock:orders"].str("kind") != "reentrant" || ls["lock:orders"].holders() != "svc-a:1=1" ||
		ls["lock:job"].str("kind") != "string" || ls["lock:job"].holders() != mu.Value()+"=1" {
		t.Errorf("locker's own locks: %v", ls)
	}
	raw := func(c *redis.Client, args ...any) string {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		if err != nil {
			return err.Error()
		}
		return strings.Join(strings.Fields(strings.Trim(fmt.Sprint(v), "[]")), " ")
	}
	for _, args := range [][]any{
		{"DEADBOLT", "LOCKS"},
		{"DEADBOLT", "LOCKS", "MATCH", "*"},
		{"DEADBOLT", "LOCKS", "KIND", "string"},
		{"DEADBOLT", "LOCKS", "COUNT", "1000"},
	} {
		if s := raw(lr, args...); strings.Contains(s, rl.Token()) || strings.Contains(s, "svc-b") {
			t.Errorf("locker's %v shows another application's holder: %s", args, s)
		}
	}
	// A pattern that matches none of its keys, a kind, and COUNT, which
	// counts what the user sees ("billing" sorts first).
	if got := lockNames(deadboltLocks(t, lr, "MATCH", "pay*")); got != "" {
		t.Errorf("locker, MATCH pay*: %s", got)
	}
	if got := lockNames(deadboltLocks(t, lr, "KIND", "string")); got != "lock:job" {
		t.Errorf("locker, KIND string: %s", got)
	}
	if got := lockNames(deadboltLocks(t, lr, "COUNT", "1")); got != "lock:job" {
		t.Errorf("locker, COUNT 1: %s, want lock:job", got)
	}
	// Read access on every key shows everything; write access alone
	// nothing; a selector's keys only where it allows DEADBOLT LOCKS.
	for _, tc := range []struct{ user, want string }{
		{"auditor", all},
		{"writer", ""},
		{"sel", "billing,lock:job,lock:orders"},
	} {
		if got := lockNames(deadboltLocks(t, userResp2(t, n.Addr(), tc.user, "p"))); got != tc.want {
			t.Errorf("%s sees %q, want %q", tc.user, got, tc.want)
		}
	}

	// The command can be taken from a user altogether.
	if err := userResp2(t, n.Addr(), "nolocks", "p").Do(ctx, "DEADBOLT", "LOCKS").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("DEADBOLT LOCKS as a user with -deadbolt|locks: %v", err)
	}

	// Neither a transaction nor a script lists locks.
	var get *redis.StringCmd
	_, err = lr.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, "lock:job")
		p.Do(ctx, "DEADBOLT", "LOCKS")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "EXECABORT") || get.Err() == nil {
		t.Errorf("DEADBOLT LOCKS inside MULTI as locker: %v", err)
	}
	for _, script := range []string{"return redis.call('deadbolt', 'locks')", "return redis.call('__locks')"} {
		s := raw(lr, "EVAL", script, "0")
		if !strings.HasPrefix(s, "ERR") || strings.Contains(s, rl.Token()) || strings.Contains(s, "svc-b") {
			t.Errorf("EVAL %q as locker: %s", script, s)
		}
	}
}

// TestDeadboltLocksACLThroughFollower: a follower serves DEADBOLT LOCKS
// from its own state for the user that asked, so a restricted user sees
// its own locks there and no others, and the default user all of them.
func TestDeadboltLocksACLThroughFollower(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	leader := c.WaitLeader()
	admin := resp2(t, c.Addr(leader))
	if err := admin.Do(ctx, append([]any{"ACL", "SETUSER", "locker"}, lockUserRules...)...).Err(); err != nil {
		t.Fatal(err)
	}
	lc := dbclient.New(userClient(t, c.Addr(leader), "locker", "lockpass"))
	defer lc.Close()
	if err := lc.NewLock("lock:orders", dbclient.WithOwner(dbclient.OwnerOf("svc-a", 1))).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := admin.SetNX(ctx, "job", "secret-token", 10*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX: %v %v", ok, err)
	}
	f := c.Followers()[0]
	// A write through the follower returns once the follower applied it,
	// and with it the user.
	if err := resp2(t, c.Addr(f)).Set(ctx, "barrier", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := lockNames(deadboltLocks(t, userResp2(t, c.Addr(f), "locker", "lockpass"))); got != "lock:orders" {
		t.Errorf("locker through a follower sees %s, want lock:orders", got)
	}
	if got := lockNames(deadboltLocks(t, resp2(t, c.Addr(f)))); got != "job,lock:orders" {
		t.Errorf("the default user through a follower sees %s", got)
	}
}
