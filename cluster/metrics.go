package cluster

import (
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/lathist"
)

// nodeMetrics is what a node counts for the metrics endpoint beyond what
// raft and the log store know: the followers' last answers, leader
// changes, snapshots and apply batches. Each is noted off the command path
// (a follower's answer, a leadership observation, a snapshot) or once per
// batch of applied entries.
type nodeMetrics struct {
	contacts sync.Map // raft.ServerID -> *atomic.Int64: Unix ns of the follower's last answer

	leaderMu      sync.Mutex
	lastLeader    raft.ServerID
	leaderChanges atomic.Uint64
	leaderGone    atomic.Uint64 // elections stood for at once: the leader refused (failfast.go)

	batch lathist.Hist // entries per ApplyBatch

	snapTaken, snapInstalled         atomic.Uint64
	snapTakeNs, snapInstallNs        lathist.Hist
	lastSnapBytes, lastInstallBytes  atomic.Int64
	snapTakenBytes, snapInstallBytes atomic.Uint64 // totals
}

func (m *nodeMetrics) noteContact(id raft.ServerID) {
	now := time.Now().UnixNano()
	if v, ok := m.contacts.Load(id); ok {
		v.(*atomic.Int64).Store(now)
		return
	}
	t := new(atomic.Int64)
	t.Store(now)
	if v, loaded := m.contacts.LoadOrStore(id, t); loaded {
		v.(*atomic.Int64).Store(now)
	}
}

// noteLeader counts a leader different from the last one known (losing a
// leader is not a change; the next one is).
// It reports the leader before, and whether this was a change.
func (m *nodeMetrics) noteLeader(o raft.Observation) (prev raft.ServerID, changed bool) {
	lo, ok := o.Data.(raft.LeaderObservation)
	if !ok || lo.LeaderID == "" {
		return "", false
	}
	m.leaderMu.Lock()
	defer m.leaderMu.Unlock()
	if lo.LeaderID != m.lastLeader {
		prev = m.lastLeader
		m.lastLeader = lo.LeaderID
		m.leaderChanges.Add(1)
		return prev, true
	}
	return "", false
}

func (m *nodeMetrics) snapshotTaken(size int64, took time.Duration) {
	m.snapTaken.Add(1)
	m.snapTakeNs.RecordDuration(took)
	m.lastSnapBytes.Store(size)
	m.snapTakenBytes.Add(uint64(size))
}

func (m *nodeMetrics) snapshotInstalled(size int64, took time.Duration) {
	m.snapInstalled.Add(1)
	m.snapInstallNs.RecordDuration(took)
	m.lastInstallBytes.Store(size)
	m.snapInstallBytes.Add(uint64(size))
}

// countingReader counts the bytes a snapshot restore reads.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Metrics is a node's Raft figures at one moment, for
// the metrics endpoint (package httpapi).
type Metrics struct {
	State       string // Follower, Candidate, Leader, Shutdown
	Term        uint64
	LastIndex   uint64 // the last entry in the log
	CommitIndex uint64 // raft's commit index, as this node knows it
	// RaftApplied is raft's last applied index (no-op and configuration
	// entries included); Applied the state machine's last applied command.
	RaftApplied, Applied uint64
	LeaderID             string // "" when no leader is known
	// LastContact is, on a follower, how long ago it last heard from the
	// leader (-1: never); 0 on the leader.
	LastContact time.Duration
	// Followers is, on the leader, how long ago each other voter last
	// answered an AppendEntries (heartbeats included); -1: never.
	Followers     map[string]time.Duration
	LeaderChanges uint64
	// LeaderGone counts the elections this node stood for at once because
	// its leader's Raft address refused connections (failfast.go).
	LeaderGone uint64
	ApplyBatch *lathist.Snap // entries per batch applied to the state machine

	SnapshotsTaken, SnapshotsInstalled       uint64
	SnapshotTakeNs, SnapshotInstallNs        *lathist.Snap
	LastSnapshotBytes, LastInstallBytes      int64
	SnapshotTakenBytes, SnapshotInstallBytes uint64

	Log *raftlog.IOStats // nil with the log in memory
}

// RaftMetrics returns the node's Raft figures (the state machine's are
// Summary's).
func (n *Node) RaftMetrics() Metrics {
	m := &n.metrics
	out := Metrics{
		State:                n.raft.State().String(),
		Term:                 n.raft.CurrentTerm(),
		LastIndex:            n.raft.LastIndex(),
		CommitIndex:          n.raft.CommitIndex(),
		RaftApplied:          n.raft.AppliedIndex(),
		Applied:              n.AppliedIndex(),
		LeaderChanges:        m.leaderChanges.Load(),
		LeaderGone:           m.leaderGone.Load(),
		ApplyBatch:           m.batch.Snapshot(),
		SnapshotsTaken:       m.snapTaken.Load(),
		SnapshotsInstalled:   m.snapInstalled.Load(),
		SnapshotTakeNs:       m.snapTakeNs.Snapshot(),
		SnapshotInstallNs:    m.snapInstallNs.Snapshot(),
		LastSnapshotBytes:    m.lastSnapBytes.Load(),
		LastInstallBytes:     m.lastInstallBytes.Load(),
		SnapshotTakenBytes:   m.snapTakenBytes.Load(),
		SnapshotInstallBytes: m.snapInstallBytes.Load(),
	}
	_, id := n.raft.LeaderWithID()
	out.LeaderID = string(id)
	now := time.Now()
	if out.State == raft.Leader.String() {
		out.Followers = make(map[string]time.Duration)
		if f := n.raft.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				if s.ID == raft.ServerID(n.cfg.ID) {
					continue
				}
				d := time.Duration(-1)
				if v, ok := m.contacts.Load(s.ID); ok {
					d = now.Sub(time.Unix(0, v.(*atomic.Int64).Load()))
				}
				out.Followers[string(s.ID)] = d
			}
		}
	} else if lc := n.raft.LastContact(); lc.IsZero() {
		out.LastContact = -1
	} else {
		out.LastContact = now.Sub(lc)
	}
	if n.logStore != nil {
		st := n.logStore.IOStats()
		out.Log = &st
	}
	return out
}

// Summary counts the state machine's keys, scripts and functions. It
// holds the state machine's lock while it visits every key, as INFO
// keyspace does.
func (n *Node) Summary() fsm.Summary {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.Summary()
}

// Ready reports whether the node can serve commands now: it knows a
// leader and has applied every entry it knows to be committed. If not,
// the reason says why.
func (n *Node) Ready() (ok bool, reason string) {
	if n.removed() {
		return false, "this node was removed from the cluster"
	}
	if _, id := n.raft.LeaderWithID(); id == "" {
		return false, "no leader known"
	}
	if applied, commit := n.raft.AppliedIndex(), n.raft.CommitIndex(); applied < commit {
		return false, "applying the log: " + strconv.FormatUint(applied, 10) + " of " + strconv.FormatUint(commit, 10) + " applied"
	}
	return true, "ok"
}

// Summary counts the single node's keys, scripts and functions, for the
// metrics endpoint.
func (l *Local) Summary() fsm.Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.Summary()
}
