package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Damage that raft cannot see. A log that lost its last entries (a
// segment file truncated or removed, a damaged record at the end of the
// last segment) reads, to raft, as a log that never received them: the
// node would vote for a candidate lacking entries it acknowledged, and a
// quorum's acknowledged write could be lost. So the stable store also
// records the highest index the log has held synced (syncedKey, the
// "synced mark"): raised about once a second while appends are synced
// (markSynced), and at Close; lowered, durably and before the entries go,
// when raft itself gives entries up (a suffix deleted, an emptied log
// started again below its first index). Opening a log that ends below the
// mark fails with ErrLost, as does a damaged record at or below it in the
// last segment (it cannot be a torn tail: it was synced). What the mark
// cannot show: the entries synced in the last second before the damage,
// for which a damaged tail still reads as a torn one.
//
// The stable store itself holds the term and the vote: a node that lost
// them could vote twice in one term. A stable file that is missing or
// empty while the log holds anything fails opening with ErrLost too,
// before anything is written over it.

// ErrLost is returned by Open when the directory shows that state the node
// had synced (log entries, its term and vote) is gone: it must not take part
// in elections with what is left.
var ErrLost = errors.New("raftlog: synced state lost")

// syncedKey is the stable store's key for the synced mark (raft's own keys
// are CurrentTerm, LastVoteTerm and LastVoteCand).
const syncedKey = "deadbolt.synced"

// markEvery is how often the synced mark is raised while appends go on
// (a test may change it).
var markEvery = time.Second

// marker keeps the synced mark. mu orders the mark's writes with the
// deletions that lower it: the log's end moves down only under mu.
type marker struct {
	mu   sync.Mutex
	mark uint64 // as recorded in the stable store
	term uint64 // the term of the entry at mark; 0 if unknown
	// seen is mark, read without mu (SyncedMarkRecorded): a set of the
	// mark that hangs on a stuck disk holds mu.
	seen atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

// checkStable refuses a directory whose stable file is missing or empty
// while the log holds segments or a first index: opening would otherwise
// make a new, empty stable store (term 0, no vote).
func checkStable(dir string) error {
	path := filepath.Join(dir, "stable")
	st, err := os.Stat(path)
	switch {
	case err == nil && st.Size() > 0:
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	var held []string
	for _, pat := range []string{"*" + segSuffix, "meta"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return err
		}
		held = append(held, m...)
	}
	if len(held) == 0 {
		return nil
	}
	what := "is missing"
	if err == nil {
		what = "is empty"
	}
	return fmt.Errorf("%w: %s %s, but the log in %s holds %s: the node's term and vote are gone, and it could vote twice in one term",
		ErrLost, path, what, dir, filepath.Base(held[0]))
}

// SyncedMarkRecorded is SyncedMark without waiting for a set of the mark
// in progress (for status output: a stuck disk does not hold it up).
func (s *Store) SyncedMarkRecorded() uint64 { return s.mark.seen.Load() }

// loadMark reads the synced mark from the stable store (0 if none).
func (s *Store) loadMark() error {
	v, ok := s.stable.kv[syncedKey]
	if !ok {
		return nil
	}
	if len(v) != 16 {
		return fmt.Errorf("%w: %s: the synced mark is not two uint64", ErrCorrupt, s.stable.path)
	}
	s.mark.mark = binary.BigEndian.Uint64(v)
	s.mark.seen.Store(s.mark.mark)
	s.mark.term = binary.BigEndian.Uint64(v[8:])
	return nil
}

// checkMark fails if the log, as opened, ends below the synced mark.
func (s *Store) checkMark() error {
	end := s.last
	if s.metaFirst > 0 {
		end = max(end, s.metaFirst-1)
	}
	s.openEnd, s.openMark = end, s.mark.mark
	if end >= s.mark.mark {
		return nil
	}
	return fmt.Errorf("%w: the log in %s ends at index %d, but held entries up to %d synced (recorded in %s): a segment file was truncated or removed",
		ErrLost, s.dir, end, s.mark.mark, s.stable.path)
}

// setMark records mark, and the term of its entry (0: unknown), in the
// stable store. The caller holds s.mark.mu.
func (s *Store) setMark(mark, term uint64) error {
	v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, mark), term)
	if err := s.setStable(syncedKey, v); err != nil { // a failed write fails the store
		return err
	}
	s.mark.mark, s.mark.term = mark, term
	s.mark.seen.Store(mark)
	return nil
}

// termAt is the term of the entry at index, 0 if the log does not hold it.
func (s *Store) termAt(index uint64) uint64 {
	var l raft.Log
	if index == 0 || s.GetLog(index, &l) != nil {
		return 0
	}
	return l.Term
}

// lowerMark lowers the synced mark to end before the log gives up the
// entries after end. The caller holds wmu.
func (s *Store) lowerMark(end uint64) error {
	s.mark.mu.Lock()
	defer s.mark.mu.Unlock()
	if s.mark.mark <= end {
		return nil
	}
	return s.setMark(end, s.termAt(end))
}

// raiseMark raises the synced mark to what the store knows synced.
func (s *Store) raiseMark() error {
	s.mark.mu.Lock()
	defer s.mark.mu.Unlock()
	s.def.mu.Lock()
	durable := s.def.durable
	s.def.mu.Unlock()
	if durable <= s.mark.mark {
		return nil
	}
	term := s.termAt(durable)
	if term == 0 {
		return nil // not held now (compacted meanwhile): next time
	}
	return s.setMark(durable, term)
}

// startMarker raises the mark every markEvery until Close.
func (s *Store) startMarker() {
	s.mark.stop = make(chan struct{})
	s.mark.done = make(chan struct{})
	go func() {
		defer close(s.mark.done)
		t := time.NewTicker(markEvery)
		defer t.Stop()
		for {
			select {
			case <-s.mark.stop:
				return
			case <-t.C:
				// A full disk cannot fail it (the stable file is
				// overwritten in place); a failed write or sync fails
				// the store (failure.go), and is never tried again.
				s.raiseMark()
			}
		}
	}()
}

func (s *Store) stopMarker() {
	if s.mark.stop != nil {
		close(s.mark.stop)
		<-s.mark.done
		s.mark.stop = nil
	}
}
