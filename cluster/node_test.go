package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

func startTestCluster(tb testing.TB, n int) *testCluster {
	tb.Helper()
	c := &testCluster{tb: tb, nw: NewNetwork()}
	var peers []Peer
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i+1)
		node, err := NewNode(Config{
			ID: id, RaftAddr: "127.0.0.1:0", Network: c.nw,
			HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
			LeaderLease: 250 * time.Millisecond, CommandTimeout: 5 * time.Second,
		})
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
	deadline := time.Now().Add(15 * time.Second)
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
	time.Sleep(200 * time.Millisecond)
	c.nw.Isolate(c.ids[li], c.ids...)
	ni := c.leader(li)
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	c.nw.Heal()
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

// A read on the leader of three commits an entry of its own (a tick), so
// that only a quorum's answer to a message sent after the read began lets
// it through (readIndex); the sole voter of a cluster reads without one.
func TestReadGoesThroughTheLog(t *testing.T) {
	c := startTestCluster(t, 3)
	l := c.nodes[c.leader(-1)]
	ctx := context.Background()
	if _, err := l.ApplyLocal(ctx, cmd("SET", "k", "v")); err != nil {
		t.Fatal(err)
	}
	before := l.AppliedIndex()
	res, err := l.ReadLocal(ctx, cmd("GET", "k"))
	if err != nil || string(res.Reply.Str) != "v" {
		t.Fatalf("GET: %v %s", err, res.Reply.String())
	}
	if got := l.AppliedIndex(); got <= before {
		t.Fatalf("applied index %d after the read, %d before: the read committed nothing", got, before)
	}

	one := startTestCluster(t, 1)
	s := one.nodes[one.leader(-1)]
	if _, err := s.ApplyLocal(ctx, cmd("SET", "k", "v")); err != nil {
		t.Fatal(err)
	}
	// (An idle leader's own tick may land in between: try a few times.)
	for try := 0; ; try++ {
		before = s.AppliedIndex()
		if res, err := s.ReadLocal(ctx, cmd("GET", "k")); err != nil || string(res.Reply.Str) != "v" {
			t.Fatalf("sole voter GET: %v %s", err, res.Reply.String())
		}
		got := s.AppliedIndex()
		if got == before {
			break
		}
		if try == 4 {
			t.Fatalf("the sole voter's read committed an entry (%d → %d)", before, got)
		}
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
