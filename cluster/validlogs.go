package cluster

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// validLogs refuses to store a command entry whose envelope does not
// decode. raft stores what a leader sends before it acknowledges it, and
// the state machine stops on an entry it cannot decode (raftFSM.corrupt);
// stored, such an entry would stop the node again at every start, as it
// is replayed. Refused, the AppendEntries fails and nothing reaches the
// disk: the node keeps serving what it has, and the entry never counts
// toward a commit here.
type validLogs struct {
	raft.LogStore
	// failed, if set, gets the store's error of each append that fails:
	// raft's LogCache passes it on as text only (heldLogs.StoreLogs).
	failed *atomic.Pointer[error]
}

func (v validLogs) StoreLog(l *raft.Log) error {
	if err := validLog(l); err != nil {
		return err
	}
	return v.StoreLogs([]*raft.Log{l})
}

func (v validLogs) StoreLogs(ls []*raft.Log) error {
	for _, l := range ls {
		if err := validLog(l); err != nil {
			return err
		}
	}
	err := v.LogStore.StoreLogs(ls)
	if err != nil && v.failed != nil {
		v.failed.Store(&err)
	}
	return err
}

// IsMonotonic passes on the store's answer (raft.MonotonicLogStore).
func (v validLogs) IsMonotonic() bool {
	m, ok := v.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func validLog(l *raft.Log) error {
	if l.Type != raft.LogCommand {
		return nil
	}
	if err := validEntries(l.Data); err != nil {
		return fmt.Errorf("cluster: refusing log entry %d (term %d): %w", l.Index, l.Term, err)
	}
	return nil
}
