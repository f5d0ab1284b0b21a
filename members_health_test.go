package deadbolt

import (
	"context"
	"fmt"
	"strings"
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

// SAVE on a cluster node takes a Raft snapshot (and says so only once it
// is written); on a single node in memory it says nothing is saved.
func TestSaveTakesSnapshot(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	l := c.WaitLeader()
	cl := client(t, c.Addr(l))
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := c.Nodes[l].raft.RaftMetrics().SnapshotsTaken
	if err := cl.Save(ctx).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	if after := c.Nodes[l].raft.RaftMetrics().SnapshotsTaken; after != before+1 {
		t.Fatalf("snapshots taken %d → %d, want one more", before, after)
	}
	if err := cl.Save(ctx).Err(); err != nil {
		t.Fatalf("SAVE with nothing new: %v", err)
	}
	single := RunT(t)
	if err := client(t, single.Addr()).Save(ctx).Err(); err == nil || !strings.Contains(err.Error(), "nothing is saved") {
		t.Fatalf("SAVE on a node in memory: %v", err)
	}
}
