package raftlog

import (
	"errors"
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
//
// The stable store (stable.go: raft's current term and vote) fails the
// same way: a failed write or fdatasync of its file fails the whole store
// (ErrFailed names the stable file, OnFailure is told once), and its later
// sets return the error without writing. Any error does, ENOSPC included:
// the file is allocated whole when it is made and only overwritten in
// place, so it has no full disk to wait out. Once the store has failed,
// for the log or the stable file, every set fails too: a node whose log
// failed must not vote (it cannot show what its log holds).
//
// hashicorp/raft panics when it cannot save its current term (its
// setCurrentTerm), on its own goroutine, as soon as the error comes back:
// the caller that hands this store to raft must stop raft before it lets
// that error reach it. The cluster package does (cluster/stablefail.go):
// it begins raft's shutdown on raft's goroutine, then answers the failed
// term save with nil (the store refuses everything after it, so raft can
// neither vote nor append in the unsaved term), and raft stops at its next
// step. A failed vote save (persistVote) is returned as an error: raft
// then withholds the vote.

// ErrFailed wraps the error of a write or sync that failed the store.
type ErrFailed struct {
	Path string
	Op   string
	Err  error
	// Key is the stable store's key whose set failed (CurrentTerm,
	// LastVoteTerm, LastVoteCand, the synced mark); "" for a log file.
	Key string
}

func (e *ErrFailed) Error() string {
	saving := ""
	if e.Key != "" {
		saving = "saving " + e.Key + "; "
	}
	return fmt.Sprintf("raftlog: %s %s failed: %v (%sthe log store stopped: what the disk holds is known only by reading it again, at a restart)", e.Op, e.Path, e.Err, saving)
}

func (e *ErrFailed) Unwrap() error { return e.Err }

// fail makes the store fail for good with err (the first error stays),
// and tells Options.OnFailure once. The caller holds wmu.
func (s *Store) fail(path, op string, err error) error {
	return s.failWith(&ErrFailed{Path: path, Op: op, Err: err})
}

// failWith is fail with the error made. It needs wmu only for the log's
// own state: the stable store calls it without.
func (s *Store) failWith(e *ErrFailed) error {
	d := &s.def
	d.mu.Lock()
	first := d.err == nil
	if first {
		d.err = e
		d.cond.Broadcast()
	}
	ferr := d.err
	d.mu.Unlock()
	if first && s.onFailure != nil {
		go s.onFailure(ferr)
	}
	return ferr
}

// setStable sets key in the stable store, unless the store has failed; a
// failed write or sync of the stable file fails the store.
func (s *Store) setStable(key string, val []byte) error {
	if err := s.Failed(); err != nil {
		return err
	}
	err := s.stable.set(key, val)
	var f *ErrFailed
	if errors.As(err, &f) {
		s.failWith(f)
	}
	return err
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
