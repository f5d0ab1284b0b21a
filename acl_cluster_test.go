package deadbolt

import (
	"context"
	"strings"
	"testing"
	"time"

	lockclient "github.com/deadbolt/deadbolt/client"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// lockUserRules are a lock service's user: its lock keys and their
// channels, no administration.
// Redisson passes its channel and its unlock latch among a script's keys.
var lockUserRules = []any{"on", ">lockpass", "~lock:*", "~redisson_lock__channel:*", "~redisson_unlock_latch:*", "&redisson_lock__channel:*", "+@all", "-@admin", "-@dangerous"}

func userClient(tb testing.TB, addr, user, pass string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}

// A user created through a follower is in force on every node from the
// same log index: every node lets it lock and refuses it the rest, and a
// script run through a follower is checked where it is applied.
func TestClusterACLUserEverywhere(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	c.WaitLeader()
	f := c.Followers()
	args := append([]any{"ACL", "SETUSER", "locker"}, lockUserRules...)
	if err := client(t, c.Addr(f[0])).Do(ctx, args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER through a follower: %v", err)
	}
	// Applied through the log: every node has it once it applied the entry
	// (a write afterwards through each node is a barrier).
	for i := range 3 {
		admin := client(t, c.Addr(i))
		if err := admin.Set(ctx, "barrier", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := admin.Do(ctx, "ACL", "USERS").StringSlice()
		if err != nil || strings.Join(got, ",") != "default,locker" {
			t.Fatalf("node %d: ACL USERS = %v, %v", i, got, err)
		}
		u := userClient(t, c.Addr(i), "locker", "lockpass")
		if ok, err := u.SetNX(ctx, "lock:n"+string(rune('0'+i)), "me", 10*time.Second).Result(); err != nil || !ok {
			t.Fatalf("node %d: SET NX of a lock key: %v %v", i, ok, err)
		}
		for _, cmd := range [][]any{
			{"SET", "other", "1"},
			{"FLUSHALL"},
			{"CONFIG", "SET", "maxmemory", "1"},
			{"RAFT", "REMOVE", c.IDs()[(i+1)%3]},
			{"SHUTDOWN"},
			{"ACL", "SETUSER", "locker", "+@all"},
			{"EVAL", "return redis.call('del', 'other')", "0"},
		} {
			err := u.Do(ctx, cmd...).Err()
			if err == nil || !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "The user executing the script") {
				t.Errorf("node %d: %v as locker = %v, want a permission error", i, cmd, err)
			}
		}
	}
	// No node lost a member, and nothing was flushed.
	if n, err := client(t, c.Addr(c.Leader())).Exists(ctx, "barrier").Result(); err != nil || n != 1 {
		t.Fatalf("barrier after the refused FLUSHALL: %v %v", n, err)
	}

	// The lock clients work as that user, through a follower: the
	// project's Redisson-family client (reentrant lock, pub/sub wake-up)
	// and redsync.
	u := userClient(t, c.Addr(f[1]), "locker", "lockpass")
	cl := lockclient.New(u)
	l := cl.NewLock("lock:r")
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("Redisson-family lock as locker: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("unlock as locker: %v", err)
	}
	m := redsync.New(goredis.NewPool(u)).NewMutex("lock:rs")
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("redsync as locker: %v", err)
	}
	if ok, err := m.UnlockContext(ctx); err != nil || !ok {
		t.Fatalf("redsync unlock as locker: %v %v", ok, err)
	}

	// Deleted through another node: the user's connections close and it
	// can no longer log in anywhere.
	if err := client(t, c.Addr(f[0])).Do(ctx, "ACL", "DELUSER", "locker").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := u.Ping(ctx).Err()
		if err != nil && (strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "NOPERM")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted user's client still works: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CONFIG SET requirepass on one node is the default user's password on
// every node, and a follower's forwarding keeps working: members do not
// log in as clients.
func TestClusterRequirePassEverywhere(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	c.WaitLeader()
	f := c.Followers()
	if err := client(t, c.Addr(f[0])).ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := client(t, c.Addr(i)).Ping(ctx).Err()
			if err != nil && strings.Contains(err.Error(), "NOAUTH") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: PING without the password = %v, want NOAUTH", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		pc := userClient(t, c.Addr(i), "", "s3cret")
		if err := pc.Incr(ctx, "n").Err(); err != nil {
			t.Fatalf("node %d: a write with the password: %v", i, err)
		}
	}
	// Cleared again, everywhere.
	if err := userClient(t, c.Addr(f[1]), "", "s3cret").ConfigSet(ctx, "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		deadline := time.Now().Add(5 * time.Second)
		for client(t, c.Addr(i)).Incr(ctx, "n").Err() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("node %d still wants a password", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
