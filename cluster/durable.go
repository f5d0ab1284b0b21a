package cluster

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// durability is a log store whose appends may be synced after they return
// (raftlog with deferred syncs): WaitDurable waits until the entries up to
// an index are on disk.
type durability interface {
	WaitDurable(index uint64) error
	// UnsyncedFor is how long the oldest append not yet synced has waited
	// for its sync (0: none waits).
	UnsyncedFor() time.Duration
}

// The leader's own appends are synced in parallel with replication
// (raftlog.Store.DeferSyncWhen, while this node leads). hashicorp/raft
// counts the leader's copy of an entry as soon as its StoreLogs returns,
// so its commit index may run ahead of what is on a quorum of disks by
// the leader's sync in progress. Nothing that commit leads to may leave
// the node before that sync: the state machine waits for it before
// applying (raftFSM, and with it every reply to a client), membership
// changes wait for it (Node.waitDurable), and the transport below holds
// any AppendEntries whose commit index it has not reached. A follower's
// appends are synced before its acknowledgement, as always, so the entry
// is then on the leader's disk and a follower's: a quorum of three. One
// more case: a former leader whose last appends are still being synced
// acknowledges, as a follower, entries it already holds without storing
// them again; raft reads each of them first, and heldLogs makes that read
// wait for the sync.

// A leader whose disk stalls would keep its role as long as the stall
// lasts: its raft loop waits in the log store, but its heartbeats (which
// carry no commit index) still go out, so the followers never elect
// another leader, and the cluster serves nothing. So once the leader's own
// sync has waited longer than Config.DiskStall, its transport sends no
// AppendEntries at all: to the followers it is as if the leader were cut
// off, and they elect one of themselves (they hold every entry it
// replicated). When its disk comes back it hears the new term and steps
// down, as after a partition.

// errDiskStalled refuses an AppendEntries while this node's log sync is
// stalled.
var errDiskStalled = errors.New("cluster: the log's sync is stalled; not sending until it completes")

// durableTransport is raft's transport with AppendEntries held until the
// commit index they carry is durable here, and refused while this node's
// log sync is stalled.
type durableTransport struct {
	*raft.NetworkTransport
	d       durability          // nil: the log is in memory, nothing to wait for
	stall   time.Duration       // refuse beyond this; 0: never
	onStall func(time.Duration) // told of each refusal, with the sync's wait
	// contact, if set, is told of each AppendEntries a follower answered
	// (heartbeats included), for the metrics' last contact (metrics.go).
	contact func(raft.ServerID)
	// ack, if set, is told of each AppendEntries answered, with the time
	// it was sent; transfer, of each TimeoutNow about to be sent (lease.go).
	ack      func(raft.ServerID, *raft.AppendEntriesRequest, *raft.AppendEntriesResponse, time.Time)
	transfer func()
	// catchUp, if set, keeps a node whose log lost synced entries out of
	// elections until it has caught up; filtered is the RPC channel raft
	// reads then (catchup.go).
	catchUp  *catchUp
	filtered chan raft.RPC
}

// stalled returns errDiskStalled if the log's sync has waited too long.
func (t *durableTransport) stalled() error {
	if t.stall <= 0 || t.d == nil {
		return nil
	}
	if w := t.d.UnsyncedFor(); w > t.stall {
		if t.onStall != nil {
			t.onStall(w)
		}
		return errDiskStalled
	}
	return nil
}

func (t *durableTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := t.stalled(); err != nil {
		return err
	}
	if t.d != nil {
		if err := t.d.WaitDurable(args.LeaderCommitIndex); err != nil {
			return err
		}
	}
	trimAppend(args, maxAppendBytes) // bigentry.go
	capCommit(args)                  // commitcap.go
	sent := time.Now()
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	if err == nil && t.contact != nil {
		t.contact(id)
	}
	if err == nil && t.ack != nil {
		t.ack(id, args, resp, sent)
	}
	return err
}

func (t *durableTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return &durablePipeline{AppendPipeline: p, t: t, answers: newPipelineConsumer(p.Consumer())}, nil
}

type durablePipeline struct {
	raft.AppendPipeline
	t       *durableTransport
	answers *pipelineConsumer // raftpipe.go
}

// Consumer is where raft reads the answers, in order (raftpipe.go).
func (p *durablePipeline) Consumer() <-chan raft.AppendFuture { return p.answers.out }

func (p *durablePipeline) Close() error {
	p.answers.close()
	return p.AppendPipeline.Close()
}

func (p *durablePipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if err := p.t.stalled(); err != nil {
		return nil, err
	}
	if p.t.d != nil {
		if err := p.t.d.WaitDurable(args.LeaderCommitIndex); err != nil {
			return nil, err
		}
	}
	trimAppend(args, maxAppendBytes) // bigentry.go
	capCommit(args)                  // commitcap.go
	return p.AppendPipeline.AppendEntries(args, resp)
}

// heldLogs is raft's log store (the cache in front of raftlog) with each
// read of an entry synced first if this node holds it unsynced and no
// longer leads (raftlog.Store.SyncHeld).
type heldLogs struct {
	*logCache
	s interface{ SyncHeld(index uint64) error } // *raftlog.Store
	// failed is the store's error of the last append that failed
	// (validLogs.failed).
	failed *atomic.Pointer[error]
	// noSpace, if set, is told of an append that failed for want of
	// space: the disk watch's "full", on a follower too (diskspace.go).
	noSpace func()
}

// StoreLogs appends through the cache. The cache reports a failure of the
// store as text only; the store's own error is returned instead, so that
// raft hands it, with its cause (such as ENOSPC), to the entries' futures.
// raft appends from its one goroutine, so failed is this append's.
func (l heldLogs) StoreLogs(logs []*raft.Log) error {
	l.failed.Store(nil)
	err := l.logCache.StoreLogs(logs)
	if err != nil {
		if p := l.failed.Load(); p != nil {
			err = *p
		}
		if l.noSpace != nil && isNoSpace(err) {
			l.noSpace()
		}
	}
	return err
}

func (l heldLogs) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

func (l heldLogs) GetLog(index uint64, log *raft.Log) error {
	if err := l.s.SyncHeld(index); err != nil {
		return err
	}
	return l.logCache.GetLog(index, log)
}

// waitDurable waits until the entries up to index are durable on this
// node, if its log store defers syncs.
func (n *Node) waitDurable(index uint64) error {
	if n.durable == nil {
		return nil
	}
	return n.durable.WaitDurable(index)
}
