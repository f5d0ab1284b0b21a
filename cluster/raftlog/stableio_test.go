//go:build linux

package raftlog

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/faultfs"
)

// A failed fdatasync or write of the stable file, a real EIO from the
// kernel (internal/faultfs), fails the whole store: the set returns an
// ErrFailed naming the file, OnFailure is told once, appends and later
// sets fail with it and are not tried on the disk again (fsyncgate), even
// once the disk works. Opened again, the store holds the state before the
// failed set or after it, never anything else, and takes sets.
func TestStableIOError(t *testing.T) {
	for _, op := range []string{"fdatasync", "write"} {
		t.Run(op, func(t *testing.T) {
			fsys, dir, s, told := openOnFUSE(t)
			if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
				t.Fatal(err)
			}
			if err := s.SetUint64([]byte("CurrentTerm"), 4); err != nil {
				t.Fatal(err)
			}
			if op == "fdatasync" {
				fsys.FailSync("stable")
			} else {
				fsys.FailWrite("stable")
			}
			err := s.SetUint64([]byte("CurrentTerm"), 5)
			var f *ErrFailed
			if !errors.As(err, &f) || f.Path != filepath.Join(dir, "stable") || f.Op != op || f.Key != "CurrentTerm" || !errors.Is(err, syscall.EIO) {
				t.Fatalf("failed set: %v, want an ErrFailed for %s of %s saving CurrentTerm with EIO", err, op, filepath.Join(dir, "stable"))
			}
			if got := <-told; got != err {
				t.Fatalf("OnFailure told %v, want %v", got, err)
			}
			if s.Failed() != err {
				t.Fatalf("Failed() = %v, want %v", s.Failed(), err)
			}
			faults := fsys.Faults()
			fsys.Clear()
			if err2 := s.StoreLogs(entries(11, 11, 1)); err2 != err {
				t.Fatalf("append after the failure: %v, want %v", err2, err)
			}
			if err2 := s.Set([]byte("LastVoteCand"), []byte("n2")); err2 != err {
				t.Fatalf("set after the failure: %v, want %v", err2, err)
			}
			if err2 := s.SetUint64([]byte("CurrentTerm"), 6); err2 != err {
				t.Fatalf("set after the failure: %v, want %v", err2, err)
			}
			if fsys.Faults() != faults {
				t.Fatal("the failed store wrote again")
			}
			select {
			case again := <-told:
				t.Fatalf("OnFailure told twice: %v", again)
			default:
			}
			s.Close()

			s = open(t, dir, 0)
			if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || (v != 4 && v != 5) {
				t.Fatalf("reopened: CurrentTerm = %d, %v, want 4 or 5", v, err)
			}
			checkRange(t, s, 1, 10, term1)
			if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
				t.Fatal(err)
			}
			if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
				t.Fatalf("CurrentTerm = %d, %v", v, err)
			}
		})
	}
}

// The synced mark is written to the stable file about once a second while
// appends go on: a failed fdatasync of it fails the store too (before, it
// was tried again at the next tick as if nothing had happened).
func TestStableIOErrorMark(t *testing.T) {
	fsys, dir, s, told := openOnFUSE(t)
	if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	fsys.FailSync("stable")
	if err := s.StoreLogs(entries(11, 20, 1)); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("the store did not fail within 10 s of its stable file's syncs failing")
	}
	var f *ErrFailed
	if !errors.As(err, &f) || f.Path != filepath.Join(dir, "stable") || f.Op != "fdatasync" || f.Key != syncedKey || !errors.Is(err, syscall.EIO) {
		t.Fatalf("OnFailure: %v, want the failed fdatasync of the stable file saving the synced mark", err)
	}
	if err2 := s.StoreLogs(entries(21, 21, 1)); err2 != err {
		t.Fatalf("append after the failure: %v, want %v", err2, err)
	}
}

// openOnFUSE opens a store in log/ on a new faultfs mount this process
// serves (so with plain system calls, PlainSyscallsForTest) and returns
// the mount, the store's directory, the store and what OnFailure is told.
// The store is closed before the mount goes, also when the test fails.
func openOnFUSE(t *testing.T) (*faultfs.FS, string, *Store, chan error) {
	t.Helper()
	PlainSyscallsForTest(t)
	fsys := faultfs.MountTest(t)
	dir := filepath.Join(fsys.Dir, "log")
	told := make(chan error, 2)
	s, err := Open(dir, Options{OnFailure: func(err error) { told <- err }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return fsys, dir, s, told
}

// Raft saves a vote in two sets, the term then the candidate. A failure
// between them (here the candidate's write or sync fails, a real EIO) must
// not leave the previous candidate recorded under the new term: reopened,
// the store has either no candidate or the new one for term 4, never n1
// (before, the term's set kept LastVoteCand and a reopen read "voted for
// n1 in term 4").
func TestStableVoteOneSave(t *testing.T) {
	for _, op := range []string{"write", "fdatasync"} {
		t.Run(op, func(t *testing.T) {
			fsys, dir, s, _ := openOnFUSE(t)
			if err := s.SetUint64([]byte("LastVoteTerm"), 3); err != nil {
				t.Fatal(err)
			}
			if err := s.Set([]byte("LastVoteCand"), []byte("n1")); err != nil {
				t.Fatal(err)
			}
			if err := s.SetUint64([]byte("LastVoteTerm"), 4); err != nil {
				t.Fatal(err)
			}
			if v, err := s.Get([]byte("LastVoteCand")); err == nil {
				t.Errorf("after the new term's set LastVoteCand = %q, want none", v)
			}
			if op == "write" {
				fsys.FailWrite("stable")
			} else {
				fsys.FailSync("stable")
			}
			var f *ErrFailed
			if err := s.Set([]byte("LastVoteCand"), []byte("n2")); !errors.As(err, &f) || f.Op != op || f.Key != "LastVoteCand" {
				t.Fatalf("candidate's set: %v, want an ErrFailed for %s", err, op)
			}
			s.Close()
			fsys.Clear()

			s = open(t, dir, 0)
			if v, err := s.GetUint64([]byte("LastVoteTerm")); err != nil || v != 4 {
				t.Fatalf("reopened: LastVoteTerm = %d, %v, want 4", v, err)
			}
			cand, err := s.Get([]byte("LastVoteCand"))
			switch {
			case err != nil && err.Error() == "not found":
			case err == nil && string(cand) == "n2" && op == "fdatasync":
				// the write reached the file; only its sync failed
			default:
				t.Fatalf("reopened: LastVoteCand = %q, %v, want none (or n2 after a failed sync): a vote in term 4 that was never given", cand, err)
			}
			// The same term again keeps the candidate.
			if err := s.Set([]byte("LastVoteCand"), []byte("n3")); err != nil {
				t.Fatal(err)
			}
			if err := s.SetUint64([]byte("LastVoteTerm"), 4); err != nil {
				t.Fatal(err)
			}
			if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "n3" {
				t.Fatalf("after setting the same term: LastVoteCand = %q, %v, want n3", v, err)
			}
		})
	}
}
