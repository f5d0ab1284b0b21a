package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// longTimeouts gives every node of c heartbeat and election timeouts of d
// once it has a leader (raft's first election waits them out too).
func longTimeouts(t *testing.T, c *testCluster, d time.Duration) {
	t.Helper()
	for _, n := range c.nodes {
		rc := n.raft.ReloadableConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = d, d
		if err := n.raft.ReloadConfig(rc); err != nil {
			t.Fatal(err)
		}
	}
}

// A leader whose process is gone (its Raft address refuses connections)
// is replaced long before the heartbeat timeout: here 20 s, so that only
// the refused connection can explain a new leader within 10 s. With
// watchLeaderGone off, this test fails.
func TestLeaderGoneElectsWithoutWaitingTheTimeout(t *testing.T) {
	const long = 20 * time.Second
	c := startTestCluster(t, 3)
	longTimeouts(t, c, long)
	li := c.leader(-1)
	ctx := context.Background()
	if _, err := c.nodes[li].Apply(ctx, cmd("SET", "before", "1")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.nodes[li].Close()
	ni := -1
	deadline := time.Now().Add(10 * time.Second) // half the heartbeat timeout
	for ni < 0 {
		for i, n := range c.nodes {
			if i != li && n.IsLeader() {
				ni = i
			}
		}
		if ni < 0 && time.Now().After(deadline) {
			var what []string
			for i, n := range c.nodes {
				if i != li {
					what = append(what, fmt.Sprintf("%s: %v, term %d, silent %v, elections for a leader gone %d",
						c.ids[i], n.raft.State(), n.raft.CurrentTerm(), time.Since(n.raft.LastContact()).Round(time.Millisecond), n.LeaderGoneElections()))
				}
			}
			t.Fatalf("no new leader 10 s after the old one's process ended (its address refused: %v): %s",
				refused(c.nodes[li].RaftAddr()), strings.Join(what, "; "))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%s leads %v after %s's process ended", c.ids[ni], time.Since(start).Round(time.Millisecond), c.ids[li])
	res, err := c.nodes[ni].Apply(ctx, cmd("GET", "before"))
	if err != nil || res.Reply.String() != "1" {
		t.Fatalf("GET through the new leader: %v %q", err, res.Reply.String())
	}
	if got := c.nodes[ni].LeaderGoneElections() + c.nodes[3-li-ni].LeaderGoneElections(); got == 0 {
		t.Errorf("no survivor counted an election for a leader gone")
	}
	// Once a leader is known again, the survivors wait the full timeouts.
	within(t, 5*time.Second, "the timeouts restored", func() bool {
		for i, n := range c.nodes {
			if i != li && n.raft.ReloadableConfig().HeartbeatTimeout != long {
				return false
			}
		}
		return true
	})
}

// A leader that is only silent (cut off, paused, slow) still accepts
// connections on its Raft address, or cannot be asked: its followers
// wait out their timeouts rather than stand at once.
func TestSilentLeaderKeepsTheTimeout(t *testing.T) {
	const long = 20 * time.Second
	c := startTestCluster(t, 3)
	longTimeouts(t, c, long)
	li := c.leader(-1)
	term := c.nodes[li].raft.CurrentTerm()
	// Every follower has heard from this leader first: one that had not
	// (it voted for no one and no heartbeat had reached it yet) was still
	// in term 0 when the leader was cut off (seen in CI).
	within(t, 5*time.Second, "every follower to follow the leader in its term", func() bool {
		for i, n := range c.nodes {
			if i == li {
				continue
			}
			addr, _ := n.raft.LeaderWithID()
			if n.raft.State() != raft.Follower || n.raft.CurrentTerm() != term || addr != raft.ServerAddress(c.nodes[li].RaftAddr()) {
				return false
			}
		}
		return true
	})
	var others []string
	for i, id := range c.ids {
		if i != li {
			others = append(others, id)
		}
	}
	c.nw.Isolate(c.ids[li], others...)
	// Three seconds is twelve leader leases of silence and many probes.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if i == li {
				continue
			}
			if n.raft.State() != raft.Follower || n.raft.CurrentTerm() != term {
				t.Fatalf("%s is %v in term %d (was %d) although the leader's address accepts connections",
					c.ids[i], n.raft.State(), n.raft.CurrentTerm(), term)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With --read-mode lease the followers wait out their timeouts even for
// a leader whose address refuses connections: the leader's lease counts
// on them not electing another before then.
func TestLeaseModeKeepsTheTimeout(t *testing.T) {
	const long = 20 * time.Second
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) { cfg.ReadMode = ReadModeLease })
	longTimeouts(t, c, long)
	li := c.leader(-1)
	term := c.nodes[li].raft.CurrentTerm()
	c.nodes[li].Close()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if i != li && n.raft.CurrentTerm() != term {
				t.Fatalf("%s moved to term %d (was %d) before its heartbeat timeout, in lease mode", c.ids[i], n.raft.CurrentTerm(), term)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
