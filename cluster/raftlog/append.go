package raftlog

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
)

// Appending entries (StoreLogs): records written after the last segment's
// last record, or into a new segment made from the spare, synced before
// StoreLogs returns (or later, deferred.go); a failed append is undone as
// far as it can be.

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, which must follow the last one stored (any
// index may start an empty log), and returns once they are on disk.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	closed, last := s.closed, s.last
	var tail *segment
	if n := len(s.segs); n > 0 {
		tail = s.segs[n-1]
	}
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	// An append starts only once the one before is synced, deferred or
	// not: recovery counts on it (doc.go, Crashes). A leader's deferred
	// sync is usually done by then, its next entry waiting for it anyway.
	if err := s.flushPending(); err != nil {
		return err
	}
	next := logs[0].Index
	if next == 0 || (last != 0 && next != last+1) {
		return fmt.Errorf("raftlog: entry %d does not follow %d", next, last)
	}
	for i, l := range logs {
		if l.Index != next+uint64(i) {
			return fmt.Errorf("raftlog: entries not consecutive at %d", l.Index)
		}
		if len(l.Data)+len(l.Extensions)+fixedFields+20 > maxRecord {
			// Opening would refuse the record: refuse it now.
			return fmt.Errorf("raftlog: entry %d is larger than %d bytes", l.Index, maxRecord)
		}
	}
	if last == 0 && s.metaFirst > next {
		// An emptied log starting again below its recorded first index.
		if err := s.lowerMark(next - 1); err != nil {
			return err
		}
		if err := writeMeta(s.dir, next); err != nil {
			return err
		}
		s.metaFirst = next
	}
	b := s.buf[:0]
	rel := make([]int64, 0, len(logs))
	for _, l := range logs {
		rel = append(rel, int64(len(b)))
		b = appendRecord(b, l, next)
	}
	if cap(b) <= 1<<20 {
		s.buf = b
	}
	newSeg := false
	if tail == nil || last == 0 || tail.size > headerSize && tail.size+int64(len(b)) > tail.cap {
		var err error
		if tail, err = s.newSegment(next); err != nil {
			return err
		}
		newSeg = true
	}
	at := tail.size
	for i := range rel {
		rel[i] += at
	}
	if newSeg {
		// The header goes with the first records, in the same write.
		var h [headerSize]byte
		copy(h[:], segMagic[:])
		binary.LittleEndian.PutUint64(h[8:], tail.base)
		b = append(h[:], b...)
		at = 0
	}
	t0 := time.Now()
	err := appendWrite(tail.f, b, at)
	s.io.appended(len(logs), time.Since(t0))
	if err != nil {
		if !IsNoSpace(err) {
			return s.fail(s.segPath(tail.base), "write", err)
		}
		s.discard(tail, newSeg, at, int64(len(b)))
		return fmt.Errorf("raftlog: append: %w", err)
	}
	deferred := s.deferNow()
	if !deferred {
		if err := s.syncAppends(tail.f); err != nil {
			// Never tried again as if it might have worked (failure.go).
			return s.fail(s.segPath(tail.base), "fdatasync", err)
		}
	}
	// Recorded before the entries can be read: from then on WaitDurable
	// waits for them.
	end := logs[len(logs)-1].Index
	s.appended(tail.f, end, !deferred)
	s.mu.Lock()
	if newSeg {
		s.segs = append(s.segs, tail)
	}
	tail.offs = append(tail.offs, rel...)
	tail.size = at + int64(len(b))
	tail.cap = max(tail.cap, tail.size)
	if s.last == 0 {
		s.first = next
	}
	s.last = end
	s.mu.Unlock()
	return nil
}

// discard undoes what a failed append may have written, as far as it can:
// zeros over the attempted range, and a new segment removed.
func (s *Store) discard(seg *segment, isNew bool, at, n int64) {
	if isNew {
		seg.f.Close()
		os.Remove(s.segPath(seg.base))
		syncDir(s.dir)
		return
	}
	zeroRange(seg.f, at, at+n)
}

// newSegment turns the spare file into the segment for base, durable with
// its directory entry, and starts preparing the next spare. It does not add
// the segment to the store. Its header is written with its first records:
// a crash before those are synced leaves a last segment with no valid
// header, which opening treats as empty.
func (s *Store) newSegment(base uint64) (*segment, error) {
	close(s.hurry)
	sp := <-s.spare
	if sp.err != nil && !s.stopping.Load() {
		// Making it failed (a full disk, say), perhaps a while ago:
		// space may have returned since. Try again, unpaced.
		now := make(chan struct{})
		close(now)
		sp.f, sp.err = zeroFile(filepath.Join(s.dir, spareName), s.segSize, &s.stopping, now)
	}
	src, failed := filepath.Join(s.dir, spareName), sp
	if IsNoSpace(sp.err) {
		if f, rpath, ok := s.takeReserve(); ok {
			sp, src = spareFile{f: f}, rpath
		}
	}
	if sp.err != nil {
		s.spareFailed(sp)
		return nil, fmt.Errorf("raftlog: new segment: %w", sp.err)
	}
	path := s.segPath(base)
	err := os.Rename(src, path)
	if err == nil {
		err = syncDir(s.dir)
	}
	if failed.err != nil {
		s.spareFailed(failed) // the reserve was taken: the disk is full
	} else {
		// After the rename (it makes a new spare.tmp), and after the
		// directory's sync, which would otherwise wait behind the new
		// spare's first writes.
		s.prepareSpare()
	}
	if err != nil {
		sp.f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("raftlog: new segment: %w", err)
	}
	s.segsMade.Add(1)
	return &segment{base: base, f: sp.f, size: headerSize, cap: s.segSize}, nil
}

// spareFailed keeps sp, a spare that could not be made, as the next one:
// none is made in the background until an append needs it and it can be
// made (newSegment); on a full disk making it would take the last free
// blocks, again and again, from whatever else needs them (a snapshot).
func (s *Store) spareFailed(sp spareFile) {
	s.spare = make(chan spareFile, 1)
	s.spare <- sp
	s.hurry = make(chan struct{})
}
