package raftlog

import "fmt"

// Repairing a lost log suffix (Options.RepairLost). Opening cuts the log
// at the first damaged record of the last segment (zeroing it and what
// follows, as for a torn tail), drops a last segment with no valid header,
// and accepts a log that ends below the synced mark, keeping the mark
// where it was: the node then knows how far it must catch up before it
// may vote again (Lost, SyncedMark). Damage anywhere but at the log's end
// (an earlier segment, meta, the stable store) still fails opening.

// noteLost records what opening repaired.
func (s *Store) noteLost(err error) {
	if s.lost == nil {
		s.lost = err
	}
}

// Lost reports what the log lost at its end when it was opened with
// RepairLost: nil if nothing. The entries up to SyncedMark must come back
// (from a leader) before the node may vote.
func (s *Store) Lost() error {
	if s.lost != nil {
		return s.lost
	}
	end := s.openEnd
	if end < s.openMark {
		return fmt.Errorf("%w: the log in %s ends at index %d, but held entries up to %d synced (recorded in %s)", ErrLost, s.dir, end, s.openMark, s.stable.path)
	}
	return nil
}

// SyncedMark is the highest index the log has held synced, as recorded.
func (s *Store) SyncedMark() uint64 {
	m, _ := s.SyncedMarkAt()
	return m
}

// SyncedMarkAt is SyncedMark and the term of the entry there (0 if not
// known: a mark lowered below what the log holds).
func (s *Store) SyncedMarkAt() (index, term uint64) {
	s.mark.mu.Lock()
	defer s.mark.mu.Unlock()
	return s.mark.mark, s.mark.term
}

// raiseMarkTo raises the mark to at least index, of term (while opening).
func (s *Store) raiseMarkTo(index, term uint64) error {
	if index <= s.mark.mark {
		return nil
	}
	return s.setMark(index, term)
}
