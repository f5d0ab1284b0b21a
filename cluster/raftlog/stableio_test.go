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
			if !errors.As(err, &f) || f.Path != filepath.Join(dir, "stable") || f.Op != op || !errors.Is(err, syscall.EIO) {
				t.Fatalf("failed set: %v, want an ErrFailed for %s of %s with EIO", err, op, filepath.Join(dir, "stable"))
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
	if !errors.As(err, &f) || f.Path != filepath.Join(dir, "stable") || f.Op != "fdatasync" || !errors.Is(err, syscall.EIO) {
		t.Fatalf("OnFailure: %v, want the failed fdatasync of the stable file", err)
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
