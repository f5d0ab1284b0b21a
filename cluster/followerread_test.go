package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// follower returns the index of a node that is not the leader li.
func (c *testCluster) follower(li int) int { return (li + 1) % len(c.nodes) }

// A follower serves reads from its own state: these cluster tests run no
// server, so a read forwarded to the leader would find no one to answer
// it. Concurrent reads share read-point requests, and no read commits an
// entry.
func TestFollowerReadServedLocally(t *testing.T) {
	c := startTestCluster(t, 3)
	li := c.leader(-1)
	l, f := c.nodes[li], c.nodes[c.follower(li)]
	ctx := context.Background()
	if _, err := l.ApplyLocal(ctx, cmd("SET", "k", "v")); err != nil {
		t.Fatal(err)
	}
	// Written on the leader, read at once on the follower: the read
	// waits for the follower to apply the write.
	if res, err := f.Read(ctx, cmd("GET", "k")); err != nil || string(res.Reply.Str) != "v" {
		t.Fatalf("GET on the follower: %v %s", err, res.Reply.String())
	}
	r0 := f.fread.batch.count()
	rounds0 := l.confirm.batch.count()
	const reads = 200
	errs := make(chan error, reads)
	for i := range reads {
		go func() {
			if i%2 == 0 {
				res, err := f.Read(ctx, cmd("GET", "k"))
				if err == nil && string(res.Reply.Str) != "v" {
					err = fmt.Errorf("GET: %s", res.Reply.String())
				}
				errs <- err
				return
			}
			ch := make(chan error, 1)
			if !f.StartRead(cmd("GET", "k"), func(res fsm.Result, err error) {
				if err == nil && string(res.Reply.Str) != "v" {
					err = fmt.Errorf("StartRead GET: %s", res.Reply.String())
				}
				ch <- err
			}) {
				errs <- fmt.Errorf("StartRead refused on a follower that knows its leader")
				return
			}
			errs <- <-ch
		}()
	}
	for range reads {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	requests := f.fread.batch.count() - r0
	if requests == 0 || requests >= reads {
		t.Fatalf("%d reads took %d read-point requests", reads, requests)
	}
	// Of three voters, the leader and the asking follower are a quorum:
	// the follower's request vouches for the leader, and no round runs.
	rounds := l.confirm.batch.count() - rounds0
	if rounds != 0 {
		t.Fatalf("the follower's reads took %d confirmation rounds on the leader of three", rounds)
	}
	t.Logf("%d concurrent follower reads, %d requests", reads, requests)
}

// A follower that has not applied the leader's latest writes must wait
// for them: its own log sync is blocked, so it holds the old value while
// the leader and the other follower commit the new one. A read on it must
// not return the old value (waiting for the read point's index, it times
// out or, once unblocked, sees the new one), by Read or by StartRead.
// Served without waiting for the applied index, the read returns "old":
// this test fails that way.
func TestFollowerReadWaitsForAppliedIndex(t *testing.T) {
	const n = 3
	var block [n]atomic.Bool
	gate := make(chan struct{})
	c := startTestClusterWith(t, n, func(i int, cfg *Config) {
		cfg.DataDir = t.TempDir()
		cfg.DiskStall = -1 // the blocked node is a follower; nothing to hand over
		cfg.BeforeSync = func() error {
			if block[i].Load() {
				<-gate
			}
			return nil
		}
	})
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	ctx := context.Background()
	li := c.leader(-1)
	fi := c.follower(li)
	l, f := c.nodes[li], c.nodes[fi]
	res, err := l.ApplyLocal(ctx, cmd("SET", "k", "old"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.fsm.waitApplied(wctx, res.LogIndex); err != nil {
		t.Fatalf("the follower did not apply the first write: %v", err)
	}
	block[fi].Store(true)
	if _, err := l.ApplyLocal(ctx, cmd("SET", "k", "new")); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.leaderRaftAddr(); !ok {
		t.Fatal("the blocked follower forgot its leader: the test needs it to ask")
	}
	// The event loop's way in, too: its answer may come only once the
	// follower has caught up, below.
	async := make(chan fsm.Result, 1)
	if !f.StartRead(cmd("GET", "k"), func(res fsm.Result, err error) {
		if err != nil {
			res.Reply = resp.Err(err.Error())
		}
		async <- res
	}) {
		t.Fatal("StartRead refused on a follower that knows its leader")
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	defer rcancel()
	got, err := f.followerRead(rctx, "", cmd("GET", "k"))
	if err == nil && string(got.Reply.Str) != "new" {
		t.Fatalf("the lagging follower served %s", got.Reply.String())
	}
	if err == nil {
		t.Fatal("the blocked follower applied the new write: the test did not hold it back")
	}
	close(gate)
	if got, err := f.Read(ctx, cmd("GET", "k")); err != nil || string(got.Reply.Str) != "new" {
		t.Fatalf("after the follower caught up: %v %s", err, got.Reply.String())
	}
	if got := <-async; string(got.Reply.Str) != "new" {
		t.Fatalf("StartRead on the lagging follower: %s", got.Reply.String())
	}
}

// A leader and one follower cut off from the other three of five: the
// leader's long timeouts keep it leading, and the follower keeps following
// it. The majority elects a new leader and acknowledges a write. A read on
// the cut-off follower asks the old leader for a read point; its round
// finds no quorum, so no read point comes, and the read never returns the
// old value. With the leader answering without the round, the follower
// serves "old": this test fails that way.
func TestFollowerReadIsolatedLeaderServesNoStaleRead(t *testing.T) {
	long := func(cfg *Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLease = 30*time.Second, 30*time.Second, 30*time.Second
	}
	c := startTestClusterWith(t, 5, func(i int, cfg *Config) {
		if i == 1 || i == 2 {
			long(cfg) // n2 (to lead) and n3 (to follow it in the minority)
		}
	})
	ctx := context.Background()
	old := c.leader(-1)
	for try := 0; old != 1; try++ {
		err := c.nodes[old].raft.LeadershipTransferToServer("n2", c.nodes[1].transport.LocalAddr()).Error()
		if err == nil {
			old = c.waitLeader(1)
			break
		}
		if try == 4 {
			t.Fatal(err)
		}
		old = c.leader(-1)
	}
	l, f := c.nodes[1], c.nodes[2]
	res, err := l.ApplyLocal(ctx, cmd("SET", "k", "old"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.fsm.waitApplied(wctx, res.LogIndex); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"n2", "n3"} {
		for _, b := range []string{"n1", "n4", "n5"} {
			c.nw.Cut(a, b)
		}
	}
	t.Cleanup(c.nw.Heal)
	nl := -1
	deadline := time.Now().Add(15 * time.Second)
	for nl < 0 {
		for _, i := range []int{0, 3, 4} {
			if c.nodes[i].IsLeader() {
				nl = i
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the majority elected no leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.nodes[nl].ApplyLocal(ctx, cmd("SET", "k", "new")); err != nil {
		t.Fatal(err)
	}
	if !l.IsLeader() {
		t.Fatal("the cut-off leader stepped down: the test needs it to believe it leads")
	}
	if addr, ok := f.leaderRaftAddr(); !ok || addr != string(l.transport.LocalAddr()) {
		t.Fatal("the cut-off follower does not follow the old leader: the test needs it to")
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	defer rcancel()
	got, err := f.followerRead(rctx, "", cmd("GET", "k"))
	if err == nil {
		t.Fatalf("the cut-off follower served a read: %s", got.Reply.String())
	}
	if got, err := c.nodes[nl].Read(ctx, cmd("GET", "k")); err != nil || string(got.Reply.Str) != "new" {
		t.Fatalf("new leader's read: %v %s", err, got.Reply.String())
	}
}

// A lock whose lease ran out must not look held on a follower whose log
// clock lags: the read point carries the leader's clock. The leader's
// clock is moved on without a log entry (the test clock), so the
// follower's log time stays before the expiry while the leader's is past
// it.
func TestFollowerReadJudgesExpiryAtLeaderTime(t *testing.T) {
	clocks := make([]*ManualClock, 3)
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) {
		clocks[i] = &ManualClock{}
		cfg.Clock = clocks[i]
	})
	ctx := context.Background()
	li := c.leader(-1)
	l, f := c.nodes[li], c.nodes[c.follower(li)]
	res, err := l.ApplyLocal(ctx, cmd("SET", "lock", "me", "PX", "60000"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.fsm.waitApplied(wctx, res.LogIndex); err != nil {
		t.Fatal(err)
	}
	// Past the expiry at once: the leader's reaper (every reapInterval)
	// carries it to the log only later, so the read below usually meets
	// the follower's log clock before the expiry. (When the reaper wins,
	// the test passes without testing much; it cannot fail wrongly.)
	clocks[li].Advance(61 * time.Second)
	got, err := f.Read(ctx, cmd("GET", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Reply.Type != resp.Nil {
		t.Fatalf("the follower showed an expired lock as held: %s", got.Reply.String())
	}
}

// A follower's request vouches for its leader only in the leader's own
// term: a leader cut off from both followers (long timeouts keep it
// leading) answers a request that vouches in its term without a round, and
// one that vouches in another term only after a round, which fails. With
// the term unchecked, the second is answered too: this test fails that way.
func TestFollowerReadVouchesOnlyInTerm(t *testing.T) {
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) {
		if i == 1 {
			cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLease = 30*time.Second, 30*time.Second, 30*time.Second
		}
	})
	old := c.leader(-1)
	for try := 0; old != 1; try++ {
		err := c.nodes[old].raft.LeadershipTransferToServer("n2", c.nodes[1].transport.LocalAddr()).Error()
		if err == nil {
			old = c.waitLeader(1)
			break
		}
		if try == 4 {
			t.Fatal(err)
		}
		old = c.leader(-1)
	}
	l := c.nodes[1]
	c.nw.Isolate("n2", c.ids...)
	t.Cleanup(c.nw.Heal)
	term := l.raft.CurrentTerm()
	ask := func(vterm uint64) error {
		ch := make(chan error, 1)
		if !l.leaderReadPoint("n1", vterm, func(_ readPoint, err error) { ch <- err }) {
			return ErrNotLeader
		}
		select {
		case err := <-ch:
			return err
		case <-time.After(10 * time.Second):
			return context.DeadlineExceeded
		}
	}
	if err := ask(term); err != nil {
		t.Fatalf("vouched in the leader's term: %v", err)
	}
	for _, vt := range []uint64{term - 1, term + 1} {
		if err := ask(vt); err == nil {
			t.Fatalf("a request vouching in term %d (the leader's is %d) was answered without a quorum", vt, term)
		}
	}
}

// A leader of an older build takes a read-index connection's first byte
// for a raft RPC type it does not know and closes the connection without
// an answer: the follower then forwards its reads (errNoFollowerReads),
// and does not dial that leader again for a while. The old leader is a
// listener that reads the first byte and closes, as raft's transport does.
func TestFollowerReadOldLeaderForwards(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			var b [1]byte
			io.ReadFull(c, b[:])
			c.Close()
		}
	}()
	n := &Node{cfg: Config{ID: "n2", HeartbeatTimeout: time.Second}}
	r := newReadIndexClient(n, func(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", string(addr), timeout)
	})
	defer r.close()
	addr := raft.ServerAddress(ln.Addr().String())
	for i := range 3 {
		if _, err := r.ask(addr, 1); err != errNoFollowerReads {
			t.Fatalf("ask %d: %v, want errNoFollowerReads", i, err)
		}
	}
	if got := accepted.Load(); got != 1 {
		t.Fatalf("the old leader was dialed %d times, want once", got)
	}
}
