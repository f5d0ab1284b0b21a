package cluster

import (
	"github.com/hashicorp/raft"
)

// durability is a log store whose appends may be synced after they return
// (raftlog with deferred syncs): WaitDurable waits until the entries up to
// an index are on disk.
type durability interface {
	WaitDurable(index uint64) error
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

// durableTransport is raft's transport with AppendEntries held until the
// commit index they carry is durable here.
type durableTransport struct {
	*raft.NetworkTransport
	d durability
}

func (t *durableTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := t.d.WaitDurable(args.LeaderCommitIndex); err != nil {
		return err
	}
	return t.NetworkTransport.AppendEntries(id, target, args, resp)
}

func (t *durableTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return &durablePipeline{AppendPipeline: p, d: t.d}, nil
}

type durablePipeline struct {
	raft.AppendPipeline
	d durability
}

func (p *durablePipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if err := p.d.WaitDurable(args.LeaderCommitIndex); err != nil {
		return nil, err
	}
	return p.AppendPipeline.AppendEntries(args, resp)
}

// heldLogs is raft's log store (the cache in front of raftlog) with each
// read of an entry synced first if this node holds it unsynced and no
// longer leads (raftlog.Store.SyncHeld).
type heldLogs struct {
	*raft.LogCache
	s interface{ SyncHeld(index uint64) error } // *raftlog.Store
}

func (l heldLogs) GetLog(index uint64, log *raft.Log) error {
	if err := l.s.SyncHeld(index); err != nil {
		return err
	}
	return l.LogCache.GetLog(index, log)
}

// waitDurable waits until the entries up to index are durable on this
// node, if its log store defers syncs.
func (n *Node) waitDurable(index uint64) error {
	if n.durable == nil {
		return nil
	}
	return n.durable.WaitDurable(index)
}
