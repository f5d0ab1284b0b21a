package cluster

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// fakeDurable is a log whose durable index the test moves.
type fakeDurable struct {
	mu       sync.Mutex
	cond     *sync.Cond
	durable  uint64
	unsynced time.Duration // what UnsyncedFor says
}

func newFakeDurable(at uint64) *fakeDurable {
	d := &fakeDurable{durable: at}
	d.cond = sync.NewCond(&d.mu)
	return d
}

func (d *fakeDurable) WaitDurable(index uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.durable < index {
		d.cond.Wait()
	}
	return nil
}

func (d *fakeDurable) UnsyncedFor() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.unsynced
}

func (d *fakeDurable) set(index uint64) {
	d.mu.Lock()
	d.durable = index
	d.cond.Broadcast()
	d.mu.Unlock()
}

// notYet fails if something arrives on ch within a while; arrives waits
// for it.
func notYet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s before the leader's sync: %v", what, v)
	case <-time.After(50 * time.Millisecond):
	}
}

func arrives[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never came", what)
	}
	var zero T
	return zero
}

// transportPair is two raft transports: a to send from, and b, which
// answers every AppendEntries with success and passes on the commit index
// it carried.
func transportPair(t *testing.T) (a, b *raft.NetworkTransport, got <-chan uint64) {
	t.Helper()
	a, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ch := make(chan uint64, 16)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case <-done:
				return
			case rpc := <-b.Consumer():
				if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
					ch <- req.LeaderCommitIndex
				}
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
			}
		}
	}()
	return a, b, ch
}

// The leader's transport sends no commit index that its own log has not
// synced: plain AppendEntries (heartbeats carry none) and pipelined ones
// wait for the sync, then go.
func TestDurableTransportHoldsCommitIndex(t *testing.T) {
	a, b, got := transportPair(t)
	d := newFakeDurable(5)
	tr := &durableTransport{NetworkTransport: a, d: d}
	send := func(commit uint64) {
		var resp raft.AppendEntriesResponse
		// A commit-only request: the follower holds up to PrevLogEntry
		// (capCommit keeps the commit index there).
		go tr.AppendEntries("b", b.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1, PrevLogEntry: commit, PrevLogTerm: 1, LeaderCommitIndex: commit}, &resp)
	}
	send(5)
	if c := arrives(t, got, "commit index 5"); c != 5 {
		t.Fatalf("sent %d", c)
	}
	send(7)
	notYet(t, got, "commit index 7")
	d.set(7)
	if c := arrives(t, got, "commit index 7"); c != 7 {
		t.Fatalf("sent %d", c)
	}

	p, err := tr.AppendEntriesPipeline("b", b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() {
		for range p.Consumer() {
		}
	}()
	sent := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		_, err := p.AppendEntries(&raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1, PrevLogEntry: 9, PrevLogTerm: 1, LeaderCommitIndex: 9}, &resp)
		sent <- err
	}()
	notYet(t, got, "pipelined commit index 9")
	d.set(9)
	if c := arrives(t, got, "pipelined commit index 9"); c != 9 {
		t.Fatalf("sent %d", c)
	}
	if err := arrives(t, sent, "the pipeline's send"); err != nil {
		t.Fatal(err)
	}
}

// The state machine applies an entry only once the log has it on disk.
func TestFSMWaitsForDurable(t *testing.T) {
	f := fsm.New(fsm.Options{})
	defer f.Close()
	r := newRaftFSM(f, nil)
	d := newFakeDurable(1)
	r.durable = d
	applied := make(chan uint64, 2)
	go func() {
		r.ApplyBatch([]*raft.Log{{Index: 2, Type: raft.LogNoop}, {Index: 3, Type: raft.LogNoop}})
		applied <- 3
		r.Apply(&raft.Log{Index: 4, Type: raft.LogNoop})
		applied <- 4
	}()
	notYet(t, applied, "entries 2-3 applied")
	d.set(3)
	arrives(t, applied, "entries 2-3 applied")
	notYet(t, applied, "entry 4 applied")
	d.set(4)
	arrives(t, applied, "entry 4 applied")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied != 4 {
		t.Fatalf("applied %d, want 4", r.applied)
	}
}

// A read of an entry through heldLogs waits for SyncHeld: raft's check of
// an entry it already holds, before acknowledging it, waits for the sync.
func TestHeldLogsSyncFirst(t *testing.T) {
	cache := newLogCache(raft.NewInmemStore(), 8, 1<<20)
	if err := cache.StoreLogs([]*raft.Log{{Index: 1, Term: 1}, {Index: 2, Term: 1}}); err != nil {
		t.Fatal(err)
	}
	h := &fakeHeld{release: make(chan struct{}), asked: make(chan uint64, 1)}
	logs := heldLogs{logCache: cache, s: h, failed: new(atomic.Pointer[error])}
	got := make(chan uint64, 1)
	go func() {
		var l raft.Log
		if err := logs.GetLog(2, &l); err != nil {
			t.Error(err)
		}
		got <- l.Index
	}()
	if i := arrives(t, h.asked, "SyncHeld"); i != 2 {
		t.Fatalf("SyncHeld(%d), want 2", i)
	}
	notYet(t, got, "the entry read")
	close(h.release)
	if i := arrives(t, got, "the entry read"); i != 2 {
		t.Fatalf("read entry %d", i)
	}
	if _, ok := any(logs).(raft.MonotonicLogStore); !ok {
		t.Fatal("heldLogs hides the cache's IsMonotonic")
	}
}

type fakeHeld struct {
	release chan struct{}
	asked   chan uint64
}

func (h *fakeHeld) SyncHeld(index uint64) error {
	h.asked <- index
	<-h.release
	return nil
}

// While the log's sync has waited longer than the stall limit, the
// transport sends nothing, plain or pipelined, and says so; once the sync
// completes it sends again.
func TestDurableTransportMuteWhileStalled(t *testing.T) {
	a, b, got := transportPair(t)
	d := newFakeDurable(0)
	var told []time.Duration
	tr := &durableTransport{NetworkTransport: a, d: d, stall: time.Second, onStall: func(w time.Duration) { told = append(told, w) }}
	heartbeat := func() error {
		var resp raft.AppendEntriesResponse
		return tr.AppendEntries("b", b.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1}, &resp)
	}
	if err := heartbeat(); err != nil {
		t.Fatal(err)
	}
	arrives(t, got, "a heartbeat")

	d.mu.Lock()
	d.unsynced = 1500 * time.Millisecond
	d.mu.Unlock()
	if err := heartbeat(); !errors.Is(err, errDiskStalled) {
		t.Fatalf("a heartbeat with the sync stalled: %v, want %v", err, errDiskStalled)
	}
	p, err := tr.AppendEntriesPipeline("b", b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var resp raft.AppendEntriesResponse
	if _, err := p.AppendEntries(&raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1}, &resp); !errors.Is(err, errDiskStalled) {
		t.Fatalf("a pipelined AppendEntries with the sync stalled: %v, want %v", err, errDiskStalled)
	}
	notYet(t, got, "an AppendEntries")
	if len(told) != 2 || told[0] != 1500*time.Millisecond {
		t.Fatalf("onStall was told %v, want twice 1.5s", told)
	}

	d.mu.Lock()
	d.unsynced = 900 * time.Millisecond // waiting, but not past the limit
	d.mu.Unlock()
	if err := heartbeat(); err != nil {
		t.Fatal(err)
	}
	arrives(t, got, "a heartbeat after the stall")
}
