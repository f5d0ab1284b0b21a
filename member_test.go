package deadbolt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func withSecret(_ int, c *Config) { c.ClusterSecret = []byte("the members' secret of this test") }

func withPass(p string) ClusterOption { return func(_ int, c *Config) { c.RequirePass = p } }

func authedClient(tb testing.TB, addr, pass string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: pass, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}

// Followers forward as members, on the Raft address, not with the client
// password, and the password is the cluster's (the default ACL user's,
// replicated): changed through the leader, it is in force on every node,
// and a follower restarted after the change, started with the old
// --requirepass, still forwards (its forwarding used to AUTH with its own
// password and get NOAUTH from then on).
func TestPasswordChangeStrandsNoMember(t *testing.T) {
	for _, secure := range []bool{false, true} {
		name := "insecure"
		opts := []ClusterOption{withPass("old")}
		if secure {
			name = "secret"
			opts = append(opts, withSecret)
		}
		t.Run(name, func(t *testing.T) {
			c := RunClusterT(t, 3, opts...)
			ctx := context.Background()
			l := c.Leader()
			if err := authedClient(t, c.Addr(l), "old").ConfigSet(ctx, "requirepass", "new").Err(); err != nil {
				t.Fatal(err)
			}
			f := c.Followers()[0]
			c.Kill(f)
			c.Restart(f)
			c.WaitLeader()
			fc := authedClient(t, c.Addr(f), "new")
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := fc.Set(ctx, "k", "through the follower", 0).Err()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a write through the restarted follower: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// The old password is refused there too, once the follower has
			// replayed the change (it had it before the write above went
			// through).
			if err := authedClient(t, c.Addr(f), "old").Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Fatalf("the old password on the restarted follower: %v", err)
			}
			// Through the node whose password changed (it may no longer lead).
			if v, err := authedClient(t, c.Addr(l), "new").Get(ctx, "k").Result(); err != nil || v != "through the follower" {
				t.Fatalf("GET on the first leader: %q %v", v, err)
			}
			// WAIT from the follower is counted by the leader, asked as a member.
			if n, err := fc.Wait(ctx, 2, 5*time.Second).Result(); err != nil || n < 1 {
				t.Fatalf("WAIT 2 through the follower: %d %v", n, err)
			}
		})
	}
}

// A client of the RESP port cannot pass for a member where the members
// authenticate each other: DEADBOLT.FORWARD, DEADBOLT.APPLIED and RAFT
// REMOVED are refused.
func TestMembersOnlyCommandsRefusedToClients(t *testing.T) {
	c := RunClusterT(t, 3, withSecret)
	ctx := context.Background()
	l := c.Leader()
	cl := client(t, c.Addr(l))
	for _, args := range [][]any{
		{"DEADBOLT.FORWARD", "w", "\x01\x02\x00\x03\x03SET\x01k\x01v\x00\x00"},
		{"DEADBOLT.APPLIED"},
		{"RAFT", "REMOVED", "n1"},
	} {
		err := cl.Do(ctx, args...).Err()
		if err == nil || !strings.Contains(err.Error(), "only cluster members") {
			t.Errorf("%v from a client: %v", args, err)
		}
	}
	if v, err := cl.Exists(ctx, "k").Result(); err != nil || v != 0 {
		t.Fatalf("EXISTS k: %d %v", v, err)
	}
	if c.Leader() != l {
		t.Fatal("leadership moved")
	}
}

// An operator may send RAFT REMOVE to any node: a follower passes it to
// the leader as a member (it used to answer TRYAGAIN with the leader's
// address).
func TestRaftRemoveThroughFollower(t *testing.T) {
	c := RunClusterT(t, 3, withSecret)
	ctx := context.Background()
	l := c.Leader()
	fs := c.Followers()
	victim := fs[1]
	if err := client(t, c.Addr(fs[0])).Do(ctx, "RAFT", "REMOVE", c.IDs()[victim]).Err(); err != nil {
		t.Fatalf("RAFT REMOVE through a follower: %v", err)
	}
	members, err := client(t, c.Addr(l)).Do(ctx, "RAFT", "MEMBERS").Slice()
	if err != nil || len(members) != 2 {
		t.Fatalf("RAFT MEMBERS after the removal: %v %v", members, err)
	}
	if err := client(t, c.Addr(fs[0])).Do(ctx, "RAFT", "REMOVE", "nobody").Err(); err == nil || !strings.Contains(err.Error(), "no member") {
		t.Fatalf("removing an unknown id through a follower: %v", err)
	}
}

// PUBLISH through a follower counts the leader's subscribers and the
// follower's own (it used to count the leader's alone, while the
// follower's subscribers did get the message); through the leader, the
// leader's own.
func TestPublishCountThroughFollower(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	l := c.Leader()
	f := c.Followers()[0]
	subscribe := func(node int, ch string) *redis.PubSub {
		ps := client(t, c.Addr(node)).Subscribe(ctx, ch)
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		return ps
	}
	fsub := subscribe(f, "ch")
	if n, err := client(t, c.Addr(f)).Publish(ctx, "ch", "one").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH through the follower with one subscriber there: %d %v", n, err)
	}
	if m, err := fsub.ReceiveMessage(ctx); err != nil || m.Payload != "one" {
		t.Fatalf("the follower's subscriber: %v %v", m, err)
	}
	subscribe(l, "ch")
	if n, err := client(t, c.Addr(f)).Publish(ctx, "ch", "two").Result(); err != nil || n != 2 {
		t.Fatalf("PUBLISH through the follower, one subscriber there and one on the leader: %d %v", n, err)
	}
	if n, err := client(t, c.Addr(l)).Publish(ctx, "ch", "three").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH through the leader counts the leader's own: %d %v", n, err)
	}
}
