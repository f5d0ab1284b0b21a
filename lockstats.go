package deadbolt

import "github.com/deadbolt/deadbolt/fsm"

// LockStats returns the node's lock counters (acquisitions, contention,
// releases, expired leases and hold times by kind; fsm.LockStats): what
// this node saw as it applied the log, not replicated state. Safe to call
// from any goroutine; read them with Snapshot.
func (n *Node) LockStats() *fsm.LockStats {
	if n.raft != nil {
		return n.raft.LockStats()
	}
	return n.local.LockStats()
}
