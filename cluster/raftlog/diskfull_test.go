//go:build linux

package raftlog

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/internal/tmpfs"
)

// TestDiskFull runs the store on a small tmpfs that really fills up: the
// stable store keeps working (raft panics when it cannot save a term),
// an append that needs a new segment fails with ENOSPC and leaves the log
// as it was, and once space returns appends go on; everything stored is
// there after reopening.
func TestDiskFull(t *testing.T) {
	dir := tmpfs.Mount(t, 1<<20)
	const seg = 64 << 10
	s, err := Open(dir, Options{SegmentSize: seg})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	big := make([]byte, 1000)
	next := uint64(1)
	appendOne := func() error {
		l := entry(next, 1)
		l.Data = big
		err := s.StoreLogs([]*raft.Log{l})
		if err == nil {
			next++
		}
		return err
	}
	for range 10 {
		if err := appendOne(); err != nil {
			t.Fatal(err)
		}
	}
	waitReserve(t, s)
	ballast := tmpfs.Fill(t, dir, 0)
	// Until the segment is full, appends overwrite its zeros in place;
	// then the reserve becomes the next segment, and it fills too.
	var fullErr error
	usedReserve := false
	for range 3 * seg / len(big) {
		usedReserve = usedReserve || s.ReserveInUse()
		if fullErr = appendOne(); fullErr != nil {
			break
		}
		// Terms and votes are written on every election; a full disk
		// must not fail them.
		if err := s.SetUint64([]byte("CurrentTerm"), next); err != nil {
			t.Fatalf("stable store on a full disk: %v", err)
		}
		if err := s.Set([]byte("LastVoteCand"), []byte("node-a")); err != nil {
			t.Fatalf("stable store on a full disk: %v", err)
		}
	}
	if !usedReserve {
		t.Fatal("the reserve segment was never used")
	}
	if !errors.Is(fullErr, syscall.ENOSPC) {
		t.Fatalf("append needing a new segment on a full disk: %v, want ENOSPC", fullErr)
	}
	if !IsNoSpace(fullErr) {
		t.Fatalf("IsNoSpace(%v) = false", fullErr)
	}
	if last, _ := s.LastIndex(); last != next-1 {
		t.Fatalf("after the failed append the log ends at %d, want %d", last, next-1)
	}
	// A failed append leaves nothing behind: a second one fails the same
	// way, and does not fail differently.
	if err := appendOne(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second append on a full disk: %v", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	// With space back the reserve is made again, without an append.
	s.RefillReserve()
	waitReserve(t, s)
	for range 100 {
		if err := appendOne(); err != nil {
			t.Fatalf("append after space returned: %v", err)
		}
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 99); err != nil {
		t.Fatal(err)
	}
	want := next - 1
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{SegmentSize: seg})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if last, _ := s.LastIndex(); last != want {
		t.Fatalf("reopened log ends at %d, want %d", last, want)
	}
	for i := uint64(1); i <= want; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil || l.Index != i || len(l.Data) != len(big) {
			t.Fatalf("GetLog(%d) after reopening: index %d, %d bytes, %v", i, l.Index, len(l.Data), err)
		}
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 99 {
		t.Fatalf("CurrentTerm = %d, %v", v, err)
	}
}

// waitReserve waits until the store has its reserve segment.
func waitReserve(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.Stat(filepath.Join(s.dir, reserveName))
		if err == nil && st.Size() == s.segSize && !s.ReserveInUse() && !s.reserving.Load() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the reserve segment was not made")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
