package cluster

import (
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

type recordFSM struct {
	mu      sync.Mutex
	applied []string
}

func (f *recordFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	f.applied = append(f.applied, string(l.Data))
	f.mu.Unlock()
	return nil
}
func (f *recordFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, io.EOF }
func (f *recordFSM) Restore(io.ReadCloser) error         { return nil }

// A follower whose log ends in a deposed leader's never-committed entries
// gets an AppendEntries that starts below them and ends before them, as
// one cut by MaxAppendEntries or trimAppend after the leader walked its
// next index down: with capCommit it commits only the entry it was sent,
// not the stale ones hashicorp/raft's min(leader commit, own last index)
// would take (with capCommit off, this follower applies the stale entries:
// found in review).
func TestCapCommitKeepsStaleSuffixUncommitted(t *testing.T) {
	store := raft.NewInmemStore()
	cfg := raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: "F", Address: "F"},
		{Suffrage: raft.Voter, ID: "L", Address: "L"},
		{Suffrage: raft.Voter, ID: "X", Address: "X"},
	}}
	logs := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(cfg)}}
	for i := uint64(2); i <= 10; i++ {
		// 2 was committed in term 1; 3..10 are a deposed term-1
		// leader's appends, never committed.
		data := "committed"
		if i > 2 {
			data = "stale"
		}
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(data)})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := store.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	_, follower := raft.NewInmemTransport("F")
	_, leader := raft.NewInmemTransport("L")
	follower.Connect("L", leader)
	leader.Connect("F", follower)
	conf := raft.DefaultConfig()
	conf.LocalID = "F"
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 10*time.Second, 10*time.Second, 10*time.Second
	conf.Logger = nil
	fsm := &recordFSM{}
	r, err := raft.NewRaft(conf, fsm, store, store, raft.NewInmemSnapshotStore(), follower)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()
	// The term-2 leader's log is 1, 2 (term 1), then 3..10 of its own
	// term, committed. It sends prev 1 and entry 2 alone, commit 10.
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("L"), Addr: []byte("L")},
		Term:      2, PrevLogEntry: 1, PrevLogTerm: 1,
		Entries:           []*raft.Log{{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("committed")}},
		LeaderCommitIndex: 10,
	}
	capCommit(req)
	if req.LeaderCommitIndex != 2 {
		t.Fatalf("capped commit index %d, want 2", req.LeaderCommitIndex)
	}
	var resp raft.AppendEntriesResponse
	if err := leader.AppendEntries("F", "F", req, &resp); err != nil || !resp.Success {
		t.Fatalf("append: %v %+v", err, resp)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		fsm.mu.Lock()
		got := slices.Clone(fsm.applied)
		fsm.mu.Unlock()
		if slices.Contains(got, "stale") {
			t.Fatalf("the follower applied entries no leader committed: %v (commit index %d)", got, r.CommitIndex())
		}
		if slices.Contains(got, "committed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the committed entry was never applied: %v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// What the follower applied next would be of its stale suffix.
	time.Sleep(100 * time.Millisecond)
	fsm.mu.Lock()
	defer fsm.mu.Unlock()
	if slices.Contains(fsm.applied, "stale") || r.CommitIndex() > 2 {
		t.Fatalf("applied %v, commit index %d", fsm.applied, r.CommitIndex())
	}
}

func TestCapCommit(t *testing.T) {
	for _, tc := range []struct {
		prev, commit uint64
		entries      []uint64
		want         uint64
	}{
		{prev: 1, commit: 10, entries: []uint64{2}, want: 2},
		{prev: 4, commit: 10, entries: []uint64{5, 6, 7}, want: 7},
		{prev: 4, commit: 6, entries: []uint64{5, 6, 7}, want: 6},
		{prev: 9, commit: 10, want: 9},   // no entries: what it holds up to prev
		{prev: 0, commit: 0, want: 0},    // a heartbeat
		{prev: 12, commit: 10, want: 10}, // never raised
	} {
		req := &raft.AppendEntriesRequest{PrevLogEntry: tc.prev, LeaderCommitIndex: tc.commit}
		for _, i := range tc.entries {
			req.Entries = append(req.Entries, &raft.Log{Index: i})
		}
		capCommit(req)
		if req.LeaderCommitIndex != tc.want {
			t.Errorf("prev %d, entries %v, commit %d: capped to %d, want %d", tc.prev, tc.entries, tc.commit, req.LeaderCommitIndex, tc.want)
		}
	}
}
