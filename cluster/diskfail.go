package cluster

import "github.com/hashicorp/raft"

// A failed write or fdatasync of the log (raftlog/failure.go) stops the
// node. The store refuses everything after it, and what the disk holds is
// known only by reading it back: a node that went on would hold entries
// it cannot show are on its disk, and might vote or lead on them. So the
// node closes (raft stops: it neither votes nor serves), and the program
// is told (Config.OnDiskFailure; the deadbolt binary exits with the error,
// which names the file). A restart opens the log again, checks every
// record, and catches up from the leader. The state machine applies
// nothing after the failure (raftFSM.failed): an entry it cannot show is
// on this node's disk is never applied or answered.

// diskFailed is the log store's OnFailure: it runs once, on a goroutine of
// its own.
func (n *Node) diskFailed(err error) {
	n.cfg.Logger.Error("the log store failed: the node stops; restart it to read its log again and catch up from the leader", "err", err)
	n.fsm.fail()
	if n.raftRef.Load() != nil {
		n.Close()
	}
	if n.cfg.OnDiskFailure != nil {
		n.cfg.OnDiskFailure(err)
	}
}

// fail makes the state machine apply nothing more.
func (r *raftFSM) fail() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

var _ raft.FSM = (*raftFSM)(nil)
