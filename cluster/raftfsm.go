package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/fsm"
)

// raftFSM adapts the state machine to hashicorp/raft. Raft calls Apply,
// ApplyBatch, Snapshot and Restore from one goroutine; reads take the
// same lock.
type raftFSM struct {
	mu      sync.Mutex
	fsm     *fsm.FSM
	deliver Deliverer
	applied uint64     // index of the last entry applied
	cond    *sync.Cond // signalled when applied moves
	// replayUntil is the last log index present when the node started:
	// entries up to it were delivered before the restart, so replaying
	// them publishes nothing.
	replayUntil uint64
	// durable is the log store if it defers the leader's syncs: an entry
	// is applied only once it is on this node's disk (durable.go).
	durable durability
	metrics *nodeMetrics // snapshots and batches (metrics.go); nil in some tests
	// snapshotMax: the highest snapshot format written (upgrade.go).
	snapshotMax int
	// onNewer stops the node when it meets an entry of a newer envelope
	// version (upgrade.go); nil in some tests, which then panic.
	onNewer func(error)
	// onClusterID is told the cluster id once one is applied or restored
	// (clusterid.go), on a goroutine of its own; nil in some tests.
	onClusterID func(string)
	// failed: the log store failed (diskfail.go); nothing more is
	// applied, and no snapshot taken. Under mu.
	failed bool
	// snaps is raft's snapshot store: Restore learns from it the index of
	// the snapshot it restores (snaprestore.go). nil in some tests.
	snaps *openedSnaps
}

func newRaftFSM(f *fsm.FSM, deliver Deliverer) *raftFSM {
	r := &raftFSM{fsm: f, deliver: deliver, snapshotMax: fsm.SnapshotVersion}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// Apply applies one committed entry, once it is durable here.
func (r *raftFSM) Apply(l *raft.Log) interface{} {
	ok := r.waitDurable(l.Index)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok || r.failed {
		r.failed = true
		return nil // the caller hears "outcome unknown"
	}
	return r.applyLocked(l)
}

// ApplyBatch applies committed entries in order under one lock, once they
// are durable here (durable.go).
func (r *raftFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	ok := len(logs) == 0 || r.waitDurable(logs[len(logs)-1].Index)
	if r.metrics != nil {
		r.metrics.batch.Record(uint64(len(logs)))
	}
	out := make([]interface{}, len(logs))
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok || r.failed {
		r.failed = true
		return out // nil results: the callers hear "outcome unknown"
	}
	for i, l := range logs {
		if r.failed { // an entry of a newer format (applyLocked)
			break
		}
		out[i] = r.applyLocked(l)
	}
	return out
}

// waitDurable waits until the log holds the entries up to index on disk,
// and reports whether it does. A failed sync of the leader's own log
// leaves it unable to tell what it may apply: nothing more is applied,
// and the node stops (diskfail.go; a deferred sync never failed before
// raft saw an error; with one it no longer knows what its disk holds).
func (r *raftFSM) waitDurable(index uint64) bool {
	if r.durable == nil {
		return true
	}
	// ErrClosed: the node is stopping, and the store synced what it held
	// before it closed (a failed sync is reported as such instead).
	err := r.durable.WaitDurable(index)
	return err == nil || errors.Is(err, raftlog.ErrClosed)
}

// applyLocked applies one entry: a command (its fsm.Result) or a batch
// (a []fsm.Result, one per command, in order). Every command of an entry
// reports the entry's index.
func (r *raftFSM) applyLocked(l *raft.Log) interface{} {
	defer func() {
		r.applied = l.Index
		r.cond.Broadcast()
	}()
	if l.Type != raft.LogCommand {
		return nil
	}
	if isCommand(l.Data) {
		e, err := DecodeEntry(l.Data)
		if err != nil && errors.Is(err, ErrNewerEnvelope) && r.onNewer != nil {
			r.refuseNewer(l, err) // a version-4 flag this build does not know
			return nil
		}
		if err != nil {
			r.corrupt(l, err)
		}
		return r.applyOne(l.Index, e)
	}
	es, err := DecodeEntries(l.Data)
	if err != nil && errors.Is(err, ErrNewerEnvelope) && r.onNewer != nil {
		r.refuseNewer(l, err) // upgrade.go
		return nil
	}
	if err != nil {
		r.corrupt(l, err)
	}
	out := make([]fsm.Result, len(es))
	for i, e := range es {
		out[i] = r.applyOne(l.Index, e)
	}
	return out
}

// corrupt stops the node: every node has the same log, so an entry that
// does not decode is corruption, and applying around it would diverge.
func (r *raftFSM) corrupt(l *raft.Log, err error) {
	panic(fmt.Sprintf("cluster: log entry %d does not decode: %v", l.Index, err))
}

// applyOne applies one command of the entry at index and delivers what it
// published, unless the entry is being replayed.
func (r *raftFSM) applyOne(index uint64, e Entry) fsm.Result {
	res := r.fsm.Apply(e.Time, e.Cmd)
	res.LogIndex = index
	if r.onClusterID != nil && len(e.Cmd.Args) == 2 && string(e.Cmd.Args[0]) == "__clusterid" {
		go r.onClusterID(r.fsm.ClusterID())
	}
	if len(res.Effects) > 0 && r.deliver != nil && index > r.replayUntil {
		res.SetReceivers(r.deliver.DeliverEach(res.Effects))
	}
	return res
}

// waitApplied blocks until the entry at index has been applied.
func (r *raftFSM) waitApplied(ctx context.Context, index uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied >= index {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer stop()
	for r.applied < index {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.cond.Wait()
	}
	return nil
}

func (r *raftFSM) appliedIndex() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

// Snapshot captures the state as bytes. Raft may call Persist while later
// entries are applied, so the copy is taken here, under the lock.
func (r *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	start := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed {
		return nil, errors.New("cluster: the log store failed: no snapshot of a state that may lag raft's applied index")
	}
	var b bytes.Buffer
	if err := r.fsm.SnapshotUpTo(&b, r.snapshotMax); err != nil {
		return nil, err
	}
	return &fsmSnapshot{data: b.Bytes(), start: start, m: r.metrics}, nil
}

// Restore replaces the state with a snapshot, and the applied index with
// the snapshot's: with no entry after it, reads wait for that index, and
// StateSnapshot and backups name it.
func (r *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	start := time.Now()
	var opened *openedSnap
	var before int64
	if r.snaps != nil {
		opened = r.snaps.openedHere() // before rc.Close forgets it
		if opened != nil {
			before = opened.n.Load()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cr := &countingReader{r: rc}
	err := r.fsm.Restore(cr)
	// The snapshot this goroutine opened is the one restored when what
	// Restore read came through it (raft passes it on, maybe wrapped, and
	// nothing else reads it here: another goroutine's open, such as a
	// leader's sending a snapshot, is noted under that goroutine). Should
	// raft one day restore from a reader it opened elsewhere, the bytes do
	// not match and the applied index follows the next applied entry.
	if err == nil && opened != nil && cr.n > 0 && opened.n.Load()-before >= cr.n {
		r.applied = opened.meta.Index
		r.cond.Broadcast()
	}
	if err == nil && r.metrics != nil {
		r.metrics.snapshotInstalled(cr.n, time.Since(start))
	}
	if id := r.fsm.ClusterID(); err == nil && id != "" && r.onClusterID != nil {
		go r.onClusterID(id)
	}
	return err
}

type fsmSnapshot struct {
	data  []byte
	start time.Time    // when Snapshot began
	m     *nodeMetrics // nil in some tests
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		sink.Cancel()
		return err
	}
	err := sink.Close()
	if err == nil && s.m != nil {
		s.m.snapshotTaken(int64(len(s.data)), time.Since(s.start))
	}
	return err
}

func (s *fsmSnapshot) Release() {}
