package deadbolt

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// RAFT MEMBERS says how each member is as the node asked sees it: the
// leader hears from every voter, so a dead one turns "unreachable"; a
// follower hears only from the leader and says "unknown" of the others.
func TestRaftMembersHealth(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	l := c.WaitLeader()
	health := func(i int) map[string]string {
		rows, err := client(t, c.Addr(i)).Do(ctx, "RAFT", "MEMBERS").Slice()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, r := range rows {
			f := r.([]any)
			if len(f) != 6 {
				t.Fatalf("RAFT MEMBERS row %v: want id, raft address, client address, role, health, last contact", f)
			}
			out[fmt.Sprint(f[0])] = fmt.Sprint(f[3], " ", f[4])
		}
		return out
	}
	ids := c.IDs()
	f := c.Followers()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h := health(l)
		if h[ids[f[0]]] == "follower ok" && h[ids[f[1]]] == "follower ok" && h[ids[l]] == "leader ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader's view with everyone up: %v", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h := health(f[0]); h[ids[l]] != "leader ok" || h[ids[f[0]]] != "follower ok" || h[ids[f[1]]] != "follower unknown" {
		t.Fatalf("a follower's view: %v", h)
	}
	c.Kill(f[1])
	deadline = time.Now().Add(10 * time.Second)
	for {
		h := health(l)
		if h[ids[f[1]]] == "follower unreachable" && h[ids[f[0]]] == "follower ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader's view after a follower died: %v", h)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
