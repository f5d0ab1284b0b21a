package raftlog

import (
	"time"

	"github.com/deadbolt/deadbolt/internal/lathist"
)

// ioStats times the store's appends and syncs for the metrics endpoint:
// a few atomic adds per StoreLogs call, none per entry.
type ioStats struct {
	write lathist.Hist // an append's write, ns
	sync  lathist.Hist // an append's sync (fdatasync), ns; deferred or not
	batch lathist.Hist // entries per StoreLogs call
}

func (st *ioStats) appended(entries int, took time.Duration) {
	st.write.RecordDuration(took)
	st.batch.Record(uint64(entries))
}

// IOStats is what the metrics endpoint reads from a store.
type IOStats struct {
	Write, Sync *lathist.Snap // nanoseconds
	Batch       *lathist.Snap // entries per append
	DiskBytes   int64         // the segments' files, preallocated space included
	Segments    int
}

// IOStats returns the store's timings and size.
func (s *Store) IOStats() IOStats {
	out := IOStats{Write: s.io.write.Snapshot(), Sync: s.io.sync.Snapshot(), Batch: s.io.batch.Snapshot()}
	s.mu.RLock()
	for _, seg := range s.segs {
		out.DiskBytes += seg.cap
	}
	out.Segments = len(s.segs)
	s.mu.RUnlock()
	return out
}
