package raftlog

import (
	"os"
	"path/filepath"
)

// The reserve: a second zero-filled segment file kept back for a full
// disk. When the disk is full the spare cannot be made, and without a new
// segment nothing more can be appended, not even the first entry of a new
// leader's term; a node whose log ends at a segment boundary could then
// never lead again, and serve nothing, until space returns. So an
// append that finds no spare for want of space takes the reserve as its
// segment instead. The store then says so (ReserveInUse), and the node
// refuses client writes, so that what the reserve holds goes to
// elections and the node's own entries. The reserve is made again, after
// the spare, once space allows. It costs one segment of disk.
const (
	reserveName    = "reserve"
	reserveTmpName = "reserve.tmp"
)

// ReserveInUse reports whether the log has taken its reserve segment, the
// disk being full, and not been able to make a new one since.
func (s *Store) ReserveInUse() bool { return s.reserveUsed.Load() }

// makeReserve makes the reserve file if there is none, and space allows.
// It runs on the spare's goroutine, after the spare, paced until Close (no
// append waits for it).
func (s *Store) makeReserve() {
	if !s.reserving.CompareAndSwap(false, true) {
		return
	}
	defer s.reserving.Store(false)
	path := filepath.Join(s.dir, reserveName)
	if st, err := os.Stat(path); err == nil && st.Size() == s.segSize {
		s.reserveUsed.Store(false)
		return
	}
	tmp := filepath.Join(s.dir, reserveTmpName)
	f, err := zeroFile(tmp, s.segSize, &s.stopping, s.quit)
	if err != nil {
		return // perhaps next time
	}
	f.Close()
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return
	}
	if syncDir(s.dir) == nil {
		s.reserveUsed.Store(false)
	}
}

// takeReserve opens the reserve file, to become a segment, if there is
// one of the right size.
func (s *Store) takeReserve() (*os.File, string, bool) {
	path := filepath.Join(s.dir, reserveName)
	st, err := os.Stat(path)
	if err != nil || st.Size() != s.segSize {
		return nil, "", false
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, "", false
	}
	s.reserveUsed.Store(true)
	return f, path, true
}

// RefillReserve makes the reserve again, in the background, if it was
// taken and is not being made. Call it when space has returned: with
// client writes refused, the log may not need a new segment (which makes
// it too) for a long time.
func (s *Store) RefillReserve() {
	if !s.reserveUsed.Load() || s.reserving.Load() {
		return
	}
	s.mu.RLock() // Close waits for spareRun holding mu: Add may not follow
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	s.spareRun.Add(1)
	go func() {
		defer s.spareRun.Done()
		s.makeReserve()
	}()
}

// SegmentSize is the size of the log's segment files.
func (s *Store) SegmentSize() int64 { return s.segSize }

// SegmentsMade counts the segments the store has made since it opened: one
// made after an append failed for want of space means the log has room
// again, whatever the free space reads when it is next looked at.
func (s *Store) SegmentsMade() uint64 { return s.segsMade.Load() }
