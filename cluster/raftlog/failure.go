package raftlog

import (
	"fmt"
	"os"
)

// A failed write or sync of the log is never tried again as if the data
// might still reach the disk ("fsyncgate": after a failed fsync, Linux may
// drop the dirty pages and report the next fsync as a success). The store
// fails for good: every later append, deletion and sync returns the first
// error, which names the file, and Options.OnFailure is told once. What
// the disk holds is then known only by reading it back: the node stops,
// and opening the store again (a restart) re-reads and checks every
// record. A write that failed for want of space (IsNoSpace) is the one
// exception: nothing was stored, the attempted range is zeroed, and the
// next append may succeed once space returns (doc.go, "A full disk").

// ErrFailed wraps the error of a write or sync that failed the store.
type ErrFailed struct {
	Path string
	Op   string
	Err  error
}

func (e *ErrFailed) Error() string {
	return fmt.Sprintf("raftlog: %s %s failed: %v (the log store stopped: what the disk holds is known only by reading it again, at a restart)", e.Op, e.Path, e.Err)
}

func (e *ErrFailed) Unwrap() error { return e.Err }

// fail makes the store fail for good with err (the first error stays),
// and tells Options.OnFailure once. The caller holds wmu.
func (s *Store) fail(path, op string, err error) error {
	d := &s.def
	d.mu.Lock()
	first := d.err == nil
	if first {
		d.err = &ErrFailed{Path: path, Op: op, Err: err}
		d.cond.Broadcast()
	}
	ferr := d.err
	d.mu.Unlock()
	if first && s.onFailure != nil {
		go s.onFailure(ferr)
	}
	return ferr
}

// Failed returns the error that failed the store, nil if none did.
func (s *Store) Failed() error {
	s.def.mu.Lock()
	defer s.def.mu.Unlock()
	return s.def.err
}

// pathOf names f: the segment it is, or its own name (a segment made from
// the spare keeps the spare's).
func (s *Store) pathOf(f *os.File) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, seg := range s.segs {
		if seg.f == f {
			return s.segPath(seg.base)
		}
	}
	return f.Name()
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}
