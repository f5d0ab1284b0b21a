package cluster

import (
	"errors"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
)

// A failed write or fdatasync of raft's stable store (the current term and
// vote, raftlog/stable.go) fails the log store like a failed segment
// (raftlog/failure.go): the node stops and the binary exits 1 naming the
// file. But raft calls the stable store on its own goroutine and panics as
// soon as it cannot save its current term ("failed to save current term"),
// which would kill the process (exit 2) or, embedded, the program. So raft
// is given the store through stableGuard: on a failed set it begins raft's
// shutdown on the calling goroutine (raft.Shutdown closes raft's shutdown
// channel and waits for nothing, so it may run on raft's own goroutine),
// and only then returns:
//
//   - a failed term save returns nil. Raft keeps the unsaved term in memory
//     for the few steps before it sees the shutdown; it cannot act on it,
//     since the failed store refuses every later set and append: no vote is
//     granted (persistVote fails) and no entry is taken in that term. On
//     the disk the file holds whichever slot was last whole; a restart
//     reads it and gets the current term from the others.
//   - a failed vote save returns the error: raft withholds the vote.
//
// The node then closes on the store's OnFailure goroutine (diskFailed):
// Node.Close waits for raft's goroutines, which end at their next step, so
// nothing blocks on the goroutine that called the store, and no goroutine
// is left (in-process tests and embedded use see no leak). During NewRaft
// (which saves the term it read) there is no raft to stop yet: the failed
// save returns nil and NewNode, seeing the failed store, closes the node
// and returns the error.

// keyCurrentTerm is the stable key of raft's current term (hashicorp/raft
// raft.go); its failed save is the one raft panics on.
const keyCurrentTerm = "CurrentTerm"

// stableGuard is raft's stable store over the raftlog store.
type stableGuard struct {
	*raftlog.Store
	n *Node
}

func (g stableGuard) Set(key, val []byte) error {
	return g.failed(key, g.Store.Set(key, val))
}

func (g stableGuard) SetUint64(key []byte, val uint64) error {
	return g.failed(key, g.Store.SetUint64(key, val))
}

// failed stops raft before a store failure reaches it.
func (g stableGuard) failed(key []byte, err error) error {
	var f *raftlog.ErrFailed
	if err == nil || !errors.As(err, &f) {
		return err
	}
	if r := g.n.raftRef.Load(); r != nil {
		g.n.shutdownRaft(r)
	}
	if string(key) == keyCurrentTerm {
		return nil
	}
	return err
}

// shutdownRaft begins raft's shutdown once and returns its future (whose
// Error waits for raft's goroutines); it may run on raft's goroutine.
func (n *Node) shutdownRaft(r *raft.Raft) raft.Future {
	n.raftStop.Do(func() { n.raftShut = r.Shutdown() })
	return n.raftShut
}

var _ raft.StableStore = stableGuard{}
