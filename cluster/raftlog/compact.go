package raftlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Deleting entries (DeleteRange): a prefix after a snapshot (compaction),
// whose segments are renamed out of the way under the write lock and
// removed after it, or a suffix of conflicting entries.

// DeleteRange deletes the entries from min to max inclusive. raft deletes
// either a prefix (compaction) or a suffix (conflicting entries); a range
// strictly inside the log is refused.
//
// The segments a compaction drops are renamed while appends wait, and
// removed once they may go on: removing a 16 MiB file took 19 ms on the
// benchmark machine (its file system discards the freed blocks), a stall
// for every append of the node while the write lock was held.
func (s *Store) DeleteRange(min, max uint64) error {
	dead, err := s.deleteRange(min, max)
	if rerr := removeDead(s.dir, dead); err == nil {
		err = rerr
	}
	return err
}

// deleteRange is DeleteRange under the write lock; it returns the files of
// the segments a compaction dropped, for the caller to remove.
func (s *Store) deleteRange(min, max uint64) (dead []string, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	closed, first, last := s.closed, s.first, s.last
	s.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if last == 0 || min > max || max < first || min > last {
		return nil, nil
	}
	if err := s.flushPending(); err != nil {
		return nil, err
	}
	switch {
	case min <= first:
		// A prefix, perhaps all of it. The new first index is durable
		// before any file goes, so that a crash never brings a deleted
		// entry back.
		if err := writeMeta(s.dir, max+1); err != nil {
			return nil, err
		}
		s.metaFirst = max + 1
		s.mu.Lock()
		var drop []*segment
		if max >= last {
			drop, s.segs = s.segs, nil
			s.first, s.last = 0, 0
			defer s.truncated(0)
		} else {
			for len(s.segs) > 0 && s.segs[0].lastIndex() <= max {
				drop = append(drop, s.segs[0])
				s.segs = s.segs[1:]
			}
			s.first = max + 1
		}
		s.mu.Unlock()
		return s.retire(drop)
	case max >= last:
		// A suffix: whole segments from the back, then the segment that
		// holds min is cut, all durable before StoreLogs writes after it.
		// The synced mark goes down first, and stays down (mark.mu) until
		// the store's durable index has too.
		s.mark.mu.Lock()
		defer s.mark.mu.Unlock()
		if s.mark.mark > min-1 {
			if err := s.setMark(min-1, s.termAt(min-1)); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		var drop []*segment
		for len(s.segs) > 0 && s.segs[len(s.segs)-1].base >= min {
			drop = append(drop, s.segs[len(s.segs)-1])
			s.segs = s.segs[:len(s.segs)-1]
		}
		var cut *segment
		var cutAt, cutEnd int64
		if n := len(s.segs); n > 0 && s.segs[n-1].lastIndex() >= min {
			cut = s.segs[n-1]
			cutAt, _ = cut.recordAt(min)
			cutEnd = cut.size
			cut.offs = cut.offs[:min-cut.base]
			cut.size = cutAt
		}
		s.last = min - 1
		if len(s.segs) == 0 {
			s.first, s.last = 0, 0
		}
		s.mu.Unlock()
		// One at a time from the back, each unlink durable before the
		// next: removals reaching the disk out of order would leave a hole.
		for _, seg := range drop {
			if err := s.removeSegs([]*segment{seg}); err != nil {
				return nil, err
			}
		}
		s.truncated(min - 1)
		if cut != nil {
			if err := zeroRange(cut.f, cutAt, cutEnd); err != nil {
				return nil, fmt.Errorf("raftlog: truncate: %w", err)
			}
		}
		return nil, nil
	}
	return nil, fmt.Errorf("raftlog: cannot delete %d..%d from the middle of %d..%d", min, max, first, last)
}

// retire closes the segments a compaction dropped and renames their files
// out of the log's way, returning the new names. The new first index is
// already durable: whichever of the renames a crash keeps, opening drops
// the segments below it, and removes dead files. The caller holds wmu.
func (s *Store) retire(segs []*segment) ([]string, error) {
	s.closeSegs(segs)
	var dead []string
	for _, seg := range segs {
		s.deadSeq++
		name := filepath.Join(s.dir, fmt.Sprintf("%020d.%d%s", seg.base, s.deadSeq, deadSuffix))
		if err := os.Rename(s.segPath(seg.base), name); err != nil {
			return dead, fmt.Errorf("raftlog: remove segment: %w", err)
		}
		dead = append(dead, name)
	}
	return dead, nil
}

// removeFile removes a dropped segment's file (a test may replace it).
var removeFile = os.Remove

// removeDead removes the files of dropped segments, then syncs dir.
func removeDead(dir string, files []string) error {
	if len(files) == 0 {
		return nil
	}
	for _, f := range files {
		if err := removeFile(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("raftlog: remove segment: %w", err)
		}
	}
	return syncDir(dir)
}

// removeSegs closes and removes segs in the order given, then syncs the
// directory.
func (s *Store) removeSegs(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	for _, seg := range segs {
		seg.f.Close()
		if err := os.Remove(s.segPath(seg.base)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("raftlog: remove segment: %w", err)
		}
	}
	return syncDir(s.dir)
}
