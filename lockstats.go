package deadbolt

import "github.com/deadbolt/deadbolt/fsm"

// LockStats returns the node's lock counters, one entry per fsm.LockKind
// (acquisitions, contention, releases, expired leases and hold times;
// fsm.LockKindStats): what this node saw as it applied the log, not
// replicated state. Safe to call from any goroutine; it waits for the
// command being applied, if any.
func (n *Node) LockStats() []fsm.LockKindStats {
	if n.raft != nil {
		return n.raft.LockStats()
	}
	return n.local.LockStats()
}
