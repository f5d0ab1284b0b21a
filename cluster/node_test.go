package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// testCluster is n in-memory nodes on one Network.
type testCluster struct {
	tb    testing.TB
	nodes []*Node
	ids   []string
	nw    *Network
}

// electAnotherUnderLoad lets the load that wg's goroutines put on leader
// li run for a while, cuts li off until another node leads, lets the load
// meet that for a while, then stops the load (stop), waits for it and
// heals the network. It returns the new leader.
func (c *testCluster) electAnotherUnderLoad(li int, stop *atomic.Bool, wg *sync.WaitGroup) int {
	time.Sleep(200 * time.Millisecond)
	c.nw.Isolate(c.ids[li], c.ids...)
	ni := c.leader(li)
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	c.nw.Heal()
	return ni
}

func startTestCluster(tb testing.TB, n int) *testCluster {
	return startTestClusterWith(tb, n, nil)
}

// startTestClusterWith is startTestCluster with each node's Config changed
// by edit first.
func startTestClusterWith(tb testing.TB, n int, edit func(i int, cfg *Config)) *testCluster {
	tb.Helper()
	c := &testCluster{tb: tb, nw: NewNetwork()}
	var peers []Peer
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i+1)
		cfg := Config{
			ID: id, RaftAddr: "127.0.0.1:0", Network: c.nw,
			HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
			LeaderLease: 250 * time.Millisecond, CommandTimeout: 5 * time.Second,
		}
		if edit != nil {
			edit(i, &cfg)
		}
		node, err := NewNode(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { node.Close() })
		c.nodes = append(c.nodes, node)
		c.ids = append(c.ids, id)
		peers = append(peers, Peer{ID: id, RaftAddr: node.RaftAddr()})
	}
	if err := c.nodes[0].Bootstrap(peers); err != nil {
		tb.Fatal(err)
	}
	c.leader(-1)
	return c
}

// leader waits for a ready leader other than not and returns its index.
func (c *testCluster) leader(not int) int {
	c.tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if i != not && n.IsLeader() {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.tb.Fatalf("no leader other than %d within 15s", not)
	return -1
}

// converged waits until every node has applied the same index and their
// state machines are byte for byte the same.
func (c *testCluster) converged() {
	c.tb.Helper()
	// A node cut off for a while (an old leader, say) may wait long for
	// its entries once healed: hashicorp/raft backs off its replication to
	// a peer by 10 ms doubling with each failed or refused AppendEntries,
	// up to 10.24 s a try, and a healed old leader's log must first be cut
	// back to the new leader's, a refusal or more. CI saw one 57 entries
	// behind after 15 s, under the whole suite's load.
	deadline := time.Now().Add(45 * time.Second)
	for {
		var (
			snaps   [][]byte
			applied []uint64
		)
		for _, n := range c.nodes {
			var b bytes.Buffer
			n.fsm.mu.Lock()
			err := n.state.Snapshot(&b)
			applied = append(applied, n.fsm.applied)
			n.fsm.mu.Unlock()
			if err != nil {
				c.tb.Fatal(err)
			}
			snaps = append(snaps, b.Bytes())
		}
		same := true
		for i := range snaps[1:] {
			same = same && applied[i+1] == applied[0] && bytes.Equal(snaps[i+1], snaps[0])
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("the nodes' state machines did not converge (applied %v)", applied)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cmd(ss ...string) fsm.Command { return fsm.Command{Args: args(ss...)} }

// TestApplyLocalConcurrent: many callers at once on a three-node cluster
// share log entries, and each gets its own command's result.
func TestApplyLocalConcurrent(t *testing.T) {
	c := startTestCluster(t, 3)
	l := c.nodes[c.leader(-1)]
	before := l.AppliedIndex()
	const n = 300
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]int{}
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx := context.Background()
			res, err := l.ApplyLocal(ctx, cmd("INCR", "counter"))
			if err != nil || res.Reply.Type != resp.Int {
				t.Errorf("INCR: %v %s", err, res.Reply.String())
				return
			}
			mu.Lock()
			seen[res.Reply.Int] = i
			mu.Unlock()
			key, val := fmt.Sprint("k", i), fmt.Sprint("v", i)
			if res, err := l.ApplyLocal(ctx, cmd("SET", key, val)); err != nil || res.Reply.String() != "OK" {
				t.Errorf("SET: %v %s", err, res.Reply.String())
			}
			res, err = l.ApplyLocal(ctx, cmd("GETDEL", key))
			if err != nil || string(res.Reply.Str) != val {
				t.Errorf("GETDEL %s: %v %s", key, err, res.Reply.String())
			}
		}(i)
	}
	wg.Wait()
	// Every INCR got a different value: no caller got another's result.
	for v := int64(1); v <= n; v++ {
		if _, ok := seen[v]; !ok {
			t.Fatalf("no caller got INCR result %d (got %d distinct)", v, len(seen))
		}
	}
	entries := l.AppliedIndex() - before
	t.Logf("%d commands in at most %d log entries", 3*n, entries)
	if entries >= 3*n {
		t.Errorf("%d commands took %d entries: nothing was batched", 3*n, entries)
	}
	c.converged()
}

// TestApplyLocalLeadershipLoss: the leader is cut off while many commands
// are queued and in flight. Every command answered OK is in the state of
// the surviving cluster, none answered TRYAGAIN is, and the nodes agree
// once the old leader is back.
func TestApplyLocalLeadershipLoss(t *testing.T) {
	c := startTestCluster(t, 3)
	li := c.leader(-1)
	l := c.nodes[li]
	const workers = 32
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		mu      sync.Mutex
		outcome = map[string]error{}
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := l.ApplyLocal(ctx, cmd("SET", key, "1"))
				cancel()
				mu.Lock()
				outcome[key] = err
				mu.Unlock()
				if err != nil {
					time.Sleep(2 * time.Millisecond)
				}
			}
		}(w)
	}
	ni := c.electAnotherUnderLoad(li, &stop, &wg)
	c.converged()

	nl := c.nodes[ni]
	var ok, notLeader, unknown int
	for key, err := range outcome {
		nl.fsm.mu.Lock()
		res := nl.state.Read(0, cmd("EXISTS", key))
		nl.fsm.mu.Unlock()
		exists := res.Reply.Int == 1
		switch {
		case err == nil:
			ok++
			if !exists {
				t.Errorf("%s was acknowledged but is missing", key)
			}
		case errors.Is(err, ErrNotLeader):
			notLeader++
			if exists {
				t.Errorf("%s got TRYAGAIN but was applied", key)
			}
		case errors.Is(err, ErrUnknownOutcome):
			unknown++
		default:
			t.Errorf("%s: unexpected error %v", key, err)
		}
	}
	t.Logf("%d acknowledged, %d TRYAGAIN, %d outcome unknown", ok, notLeader, unknown)
	if ok == 0 || notLeader+unknown == 0 {
		t.Fatalf("the test did not exercise a leadership loss under load")
	}
}

// leaderEvents: a channel that the next leadership event closes, and a
// fresh one after it; an event with nobody waiting is not remembered.
func TestLeaderEvents(t *testing.T) {
	n := &Node{}
	ch := n.leaderEvents()
	if n.leaderEvents() != ch {
		t.Fatal("two channels for one wait")
	}
	select {
	case <-ch:
		t.Fatal("closed before any event")
	default:
	}
	n.leaderEvent()
	select {
	case <-ch:
	default:
		t.Fatal("an event did not close the channel")
	}
	next := n.leaderEvents()
	if next == ch {
		t.Fatal("the closed channel was handed out again")
	}
	select {
	case <-next:
		t.Fatal("the next channel is closed already")
	default:
	}
	n.leaderEvent()
	n.leaderEvent() // nobody waiting: nothing to close
	select {
	case <-n.leaderEvents():
		t.Fatal("an event before the wait was remembered")
	default:
	}
}

// TestMembershipObserve: removal is being out of the newest configuration
// after having been in one, and it ends when the node is added back (as a
// node catching up from an old snapshot sees its removal, then its return).
func TestMembershipObserve(t *testing.T) {
	cfg := func(ids ...string) []raft.Server {
		var s []raft.Server
		for _, id := range ids {
			s = append(s, raft.Server{ID: raft.ServerID(id)})
		}
		return s
	}
	var m membership
	steps := []struct {
		servers []raft.Server
		in, rem bool
	}{
		{nil, false, false},                        // a fresh joining node has no configuration
		{cfg("n1", "n2"), false, false},            // nor is it in the first one it gets
		{cfg("n1", "n2", "n3"), true, false},       // added
		{cfg("n1", "n2"), false, true},             // removed
		{nil, false, true},                         // (an empty one says nothing new)
		{cfg("n1", "n2", "n3", "n4"), true, false}, // added back
		{cfg("n1", "n2", "n4"), false, true},       // removed again
	}
	for i, s := range steps {
		in, rem := m.observe("n3", s.servers)
		if in != s.in || rem != s.rem {
			t.Fatalf("step %d %v: in=%v removed=%v, want %v %v", i, s.servers, in, rem, s.in, s.rem)
		}
	}
}

// TestRemovedNodeAddedBackServes: a follower taken out of the
// configuration refuses commands; added back with its log, it no longer
// does, and converges with the others.
func TestRemovedNodeAddedBackServes(t *testing.T) {
	c := startTestCluster(t, 3)
	ctx := context.Background()
	li := c.leader(-1)
	l := c.nodes[li]
	vi := (li + 1) % len(c.nodes)
	v := c.nodes[vi]
	if _, err := l.Apply(ctx, cmd("SET", "before", "1")); err != nil {
		t.Fatal(err)
	}
	// (A node that never saw itself in a configuration is joining, not
	// removed.)
	within(t, 5*time.Second, "the follower to see itself a member", func() bool { return v.inConfig.Load() })
	if err := l.RemoveServer(c.ids[vi]); err != nil {
		t.Fatal(err)
	}
	// The leader replicates up to the configuration that drops the
	// follower, so it learns of its removal.
	within(t, 5*time.Second, "the removed node to know it", func() bool { return v.removed() })
	if _, err := v.Apply(ctx, cmd("SET", "during", "1")); !errors.Is(err, ErrRemoved) {
		t.Fatalf("a removed node's SET: %v, want %v", err, ErrRemoved)
	}
	if err := l.AddVoter(c.ids[vi], v.RaftAddr()); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the node added back to count as a member", func() bool { return !v.removed() })
	// (These nodes have no client addresses, so a follower cannot forward
	// a command: the leader takes it, and the node must apply it.)
	if _, err := l.Apply(ctx, cmd("SET", "after", "1")); err != nil {
		t.Fatal(err)
	}
	c.converged()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := v.Apply(short, cmd("SET", "after", "2")); errors.Is(err, ErrRemoved) {
		t.Fatalf("the node added back still refuses commands: %v", err)
	}
}

// within fails the test unless cond holds within d.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A configuration change that lost its leader after being appended may
// still be committed by the next one, and the error says so; others are
// passed on as they are.
func TestMembershipErr(t *testing.T) {
	err := membershipErr(raft.ErrLeadershipLost)
	if !errors.Is(err, raft.ErrLeadershipLost) || !strings.Contains(err.Error(), "may still take effect") {
		t.Fatalf("leadership lost: %v", err)
	}
	if err := membershipErr(raft.ErrNotLeader); err != raft.ErrNotLeader {
		t.Fatalf("not leader: %v", err)
	}
}

// TestLeaderDiskStallFailsOver: the leader's disk stops answering syncs.
// Without more, its heartbeats would keep the followers from electing
// another leader for as long as the stall lasts; with the stall limit its
// transport goes quiet, a follower takes over and serves, and when the
// disk comes back the old leader steps down and catches up.
func TestLeaderDiskStallFailsOver(t *testing.T) {
	const n = 3
	var stalls [n]atomic.Bool
	gate := make(chan struct{})
	c := startTestClusterWith(t, n, func(i int, cfg *Config) {
		cfg.DataDir = t.TempDir()
		cfg.DiskStall = 300 * time.Millisecond
		cfg.BeforeSync = func() error {
			if stalls[i].Load() {
				<-gate
			}
			return nil
		}
	})
	t.Cleanup(func() { // before the nodes close (cleanups run last first)
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	nodes := c.nodes
	ctx := context.Background()
	li := c.leader(-1)
	if _, err := nodes[li].Apply(ctx, cmd("SET", "before", "1")); err != nil {
		t.Fatal(err)
	}

	stalls[li].Store(true)
	stuck := make(chan error, 1)
	go func() {
		_, err := nodes[li].Apply(ctx, cmd("SET", "during", "1")) // its sync never ends
		stuck <- err
	}()
	start := time.Now()
	ni := c.leader(li)
	t.Logf("%s took over %v after the stall of %s's disk", c.ids[ni], time.Since(start).Round(time.Millisecond), c.ids[li])
	if res, err := nodes[ni].Apply(ctx, cmd("SET", "after", "1")); err != nil || res.Reply.String() != "OK" {
		t.Fatalf("SET through the new leader: %v %s", err, res.Reply.String())
	}

	close(gate)
	within(t, 10*time.Second, "the old leader to step down", func() bool { return !nodes[li].IsLeader() })
	select {
	case <-stuck: // whatever its outcome, the command ends
	case <-time.After(10 * time.Second):
		t.Fatal("the command on the stalled leader never ended")
	}
	c.converged()
}

// A leader asked to remove itself does, says so, and another node leads.
// An id that is no member is an error, not a silent success.
func TestRaftRemoveSelfAndUnknown(t *testing.T) {
	c := startTestCluster(t, 3)
	li := c.leader(-1)
	l := c.nodes[li]
	if err := l.RemoveServer("n9"); err == nil || !strings.Contains(err.Error(), "no member has that id") {
		t.Fatalf("RAFT REMOVE of an unknown id: %v", err)
	}
	if err := l.RemoveServer(c.ids[li]); err != nil {
		t.Fatalf("RAFT REMOVE of the leader itself: %v", err)
	}
	ni := c.leader(li)
	members, err := c.nodes[ni].Members()
	if err != nil || len(members) != 2 {
		t.Fatalf("members after the removal: %v %v", members, err)
	}
	for _, m := range members {
		if m.ID == c.ids[li] {
			t.Fatalf("%s still a member: %v", m.ID, members)
		}
	}
	within(t, 5*time.Second, "the old leader to know it was removed", l.removed)
}

// membership.changes names what was added and removed since the last
// configuration seen, and nothing for the first.
func TestMembershipChanges(t *testing.T) {
	var m membership
	s := func(ids ...string) []raft.Server {
		var out []raft.Server
		for _, id := range ids {
			out = append(out, raft.Server{ID: raft.ServerID(id)})
		}
		return out
	}
	if a, r := m.changes(s("n1", "n2")); a != nil || r != nil {
		t.Fatalf("first: %v %v", a, r)
	}
	if a, r := m.changes(s("n1", "n2", "n3")); !slices.Equal(a, []string{"n3"}) || r != nil {
		t.Fatalf("add: %v %v", a, r)
	}
	if a, r := m.changes(nil); a != nil || r != nil {
		t.Fatalf("an empty configuration says nothing: %v %v", a, r)
	}
	if a, r := m.changes(s("n1", "n3")); a != nil || !slices.Equal(r, []string{"n2"}) {
		t.Fatalf("remove: %v %v", a, r)
	}
}
