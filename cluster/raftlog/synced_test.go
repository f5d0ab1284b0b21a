package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// unmark sets the synced mark in dir's stable store back to 0: the state
// of a crash that came before the mark was raised.
func unmark(t *testing.T, dir string) {
	t.Helper()
	st, err := openStable(filepath.Join(dir, "stable"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if err := st.set(syncedKey, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
}

func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(segs)
	return segs
}

// wantOpenErr opens dir and wants an error that is target and names file.
func wantOpenErr(t *testing.T, dir string, segSize int64, target error, file string) {
	t.Helper()
	s, err := Open(dir, Options{SegmentSize: segSize})
	if err == nil {
		last, _ := s.LastIndex()
		s.Close()
		t.Fatalf("opened (last index %d), want %v naming %s", last, target, file)
	}
	if !errors.Is(err, target) || !strings.Contains(err.Error(), file) {
		t.Fatalf("open: %v, want %v naming %s", err, target, file)
	}
}

// A stable file that is gone or emptied while the log holds entries is
// refused: opening used to make a new one (term 0, no vote), and the node
// could then vote a second time in a term it had voted in.
func TestStableLostRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
		want   error
	}{
		{"removed", os.Remove, ErrLost},
		{"emptied", func(p string) error { return os.Truncate(p, 0) }, ErrLost},
		{"truncated", func(p string) error { return os.Truncate(p, 100) }, ErrCorrupt},
		{"zeroed", func(p string) error { return os.WriteFile(p, make([]byte, 2*stableSlot), 0o644) }, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, 1<<16)
			appendChunks(t, s, 1, 20, 3)
			if err := s.SetUint64([]byte("CurrentTerm"), 3); err != nil {
				t.Fatal(err)
			}
			s.Close()
			path := filepath.Join(dir, "stable")
			if err := tc.damage(path); err != nil {
				t.Fatal(err)
			}
			wantOpenErr(t, dir, 1<<16, tc.want, path)
			// Still refused: the failed open wrote nothing over it.
			wantOpenErr(t, dir, 1<<16, tc.want, path)
		})
	}
	// A new directory, and one whose log is empty, still open.
	dir := t.TempDir()
	s := open(t, dir, 1<<16)
	s.Close()
	os.Remove(filepath.Join(dir, "stable"))
	open(t, dir, 1<<16)
}

// Entries lost at the end of the log, which raft would take for entries
// never received, are caught by the synced mark.
func TestSyncedMarkCatchesLostEntries(t *testing.T) {
	const segSize = 2048
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the file to name
	}{
		{"last segment removed", func(t *testing.T, dir string) string {
			segs := segFiles(t, dir)
			os.Remove(segs[len(segs)-1])
			return dir
		}},
		{"last segment truncated", func(t *testing.T, dir string) string {
			segs := segFiles(t, dir)
			os.Truncate(segs[len(segs)-1], headerSize+40)
			return segs[len(segs)-1]
		}},
		{"last record flipped", func(t *testing.T, dir string) string {
			segs := segFiles(t, dir)
			p := segs[len(segs)-1]
			b, _ := os.ReadFile(p)
			end := len(b)
			for end > 0 && b[end-1] == 0 {
				end--
			}
			b[end-3] ^= 0x20
			os.WriteFile(p, b, 0o644)
			return p
		}},
		{"last segment's header zeroed", func(t *testing.T, dir string) string {
			segs := segFiles(t, dir)
			p := segs[len(segs)-1]
			f, _ := os.OpenFile(p, os.O_RDWR, 0)
			f.WriteAt(make([]byte, headerSize), 0)
			f.Close()
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, segSize)
			appendChunks(t, s, 1, 60, 1)
			s.Close()
			if len(segFiles(t, dir)) < 3 {
				t.Fatal("want several segments")
			}
			file := tc.damage(t, dir)
			wantOpenErr(t, dir, segSize, ErrLost, file)
			// Without the mark (a crash before it was raised) the
			// same damage reads as a shorter log, as raft would take it.
			unmark(t, dir)
			s = open(t, dir, segSize)
			if last, _ := s.LastIndex(); last >= 60 {
				t.Fatalf("last index %d after the damage", last)
			}
		})
	}
}

// Raft's own deletions lower the mark first: a suffix deleted after a
// leader change, and an emptied log started again lower (a snapshot
// installed), both reopen.
func TestSyncedMarkFollowsDeletions(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 2048)
	appendChunks(t, s, 1, 60, 1)
	if err := s.raiseMark(); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(31, 60); err != nil {
		t.Fatal(err)
	}
	if m, term := s.SyncedMarkAt(); m != 30 || term != 1 {
		t.Fatalf("mark %d of term %d after the suffix deletion, want 30 of term 1", m, term)
	}
	s.Close()
	s = open(t, dir, 2048)
	checkRange(t, s, 1, 30, term1)
	if err := s.DeleteRange(1, 30); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(10, 12, 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 2048)
	checkRange(t, s, 10, 12, term1)
}

// While appends go on, the mark follows what is synced, about every
// markEvery, without a Close.
func TestSyncedMarkRaisedWhileRunning(t *testing.T) {
	defer func(d time.Duration) { markEvery = d }(markEvery)
	markEvery = 10 * time.Millisecond
	s := open(t, t.TempDir(), 2048)
	appendChunks(t, s, 1, 40, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mark.mu.Lock()
		m := s.mark.mark
		s.mark.mu.Unlock()
		if m == 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mark %d, want 40", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
	v, _ := s.stable.get(syncedKey)
	if binary.BigEndian.Uint64(v) != 40 {
		t.Fatalf("stable mark %x", v)
	}
}

// A failed fdatasync is never tried again as if it might have worked: the
// store fails for good, naming the file, and says so once.
func TestFailedSyncIsSticky(t *testing.T) {
	for _, deferredSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("deferred=%v", deferredSync), func(t *testing.T) {
			dir := t.TempDir()
			var failing atomic.Bool
			var told atomic.Int32
			toldErr := make(chan error, 2)
			s, err := Open(dir, Options{
				SegmentSize: 1 << 16,
				BeforeSync: func() error {
					if failing.Load() {
						return syscall.EIO
					}
					return nil
				},
				OnFailure: func(err error) { told.Add(1); toldErr <- err },
			})
			if err != nil {
				t.Fatal(err)
			}
			if deferredSync {
				s.DeferSyncWhen(func() bool { return true })
			}
			if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
				t.Fatal(err)
			}
			if err := s.WaitDurable(10); err != nil {
				t.Fatal(err)
			}
			failing.Store(true)
			err = s.StoreLogs(entries(11, 12, 1))
			if deferredSync {
				err = s.WaitDurable(12)
			}
			var fe *ErrFailed
			if !errors.As(err, &fe) || !errors.Is(err, syscall.EIO) || !strings.HasSuffix(fe.Path, "00000000000000000001.seg") {
				t.Fatalf("failed sync: %v", err)
			}
			// The disk works again: the store still refuses.
			failing.Store(false)
			if err := s.StoreLogs(entries(13, 13, 1)); !errors.As(err, &fe) {
				t.Fatalf("append after a failed sync: %v", err)
			}
			if err := s.DeleteRange(9, 13); !errors.As(err, &fe) {
				t.Fatalf("delete after a failed sync: %v", err)
			}
			select {
			case e := <-toldErr:
				if !errors.As(e, &fe) {
					t.Fatalf("OnFailure got %v", e)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnFailure not called")
			}
			if err := s.Close(); !errors.As(err, &fe) {
				t.Fatalf("close: %v", err)
			}
			if n := told.Load(); n != 1 {
				t.Fatalf("OnFailure called %d times", n)
			}
			// A restart reads the log again: what was synced is there.
			s = open(t, dir, 1<<16)
			if last, _ := s.LastIndex(); last < 10 {
				t.Fatalf("last index %d after a restart", last)
			}
			for i := uint64(1); i <= 10; i++ {
				var l raft.Log
				if err := s.GetLog(i, &l); err != nil || l.Index != i {
					t.Fatalf("GetLog(%d) after a restart: %v", i, err)
				}
			}
		})
	}
}

// With RepairLost the same damage opens, cut at the damage, and says what
// was lost and how far the node must catch up; damage elsewhere still
// fails.
func TestRepairLost(t *testing.T) {
	const segSize = 2048
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		s := open(t, dir, segSize)
		appendChunks(t, s, 1, 60, 1)
		s.Close()
		return dir
	}
	repairOpen := func(t *testing.T, dir string) (*Store, error) {
		s, err := Open(dir, Options{SegmentSize: segSize, RepairLost: true})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	t.Run("last record flipped", func(t *testing.T) {
		dir := setup(t)
		segs := segFiles(t, dir)
		p := segs[len(segs)-1]
		b, _ := os.ReadFile(p)
		end := len(b)
		for end > 0 && b[end-1] == 0 {
			end--
		}
		b[end-3] ^= 0x20
		os.WriteFile(p, b, 0o644)
		s, err := repairOpen(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := s.LastIndex()
		if lost := s.Lost(); !errors.Is(lost, ErrLost) || !strings.Contains(lost.Error(), p) || last != 59 || s.SyncedMark() != 60 {
			t.Fatalf("lost %v, last %d, mark %d", lost, last, s.SyncedMark())
		}
		if _, term := s.SyncedMarkAt(); term != 1 {
			t.Fatalf("the mark's term %d, want 1", term)
		}
		// Caught up: appends past the mark, and the next open is clean.
		if err := s.StoreLogs(entries(60, 61, 2)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s, err = repairOpen(t, dir)
		if err != nil || s.Lost() != nil {
			t.Fatalf("reopen after catching up: %v, lost %v", err, s.Lost())
		}
	})
	t.Run("segments removed", func(t *testing.T) {
		dir := setup(t)
		segs := segFiles(t, dir)
		os.Remove(segs[len(segs)-1])
		os.Remove(segs[len(segs)-2])
		s, err := repairOpen(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := s.LastIndex()
		if lost := s.Lost(); !errors.Is(lost, ErrLost) || last >= 60 || s.SyncedMark() != 60 {
			t.Fatalf("lost %v, last %d, mark %d", lost, last, s.SyncedMark())
		}
	})
	t.Run("last segment's header flipped", func(t *testing.T) {
		dir := setup(t)
		segs := segFiles(t, dir)
		p := segs[len(segs)-1]
		b, _ := os.ReadFile(p)
		b[3] ^= 0x01
		os.WriteFile(p, b, 0o644)
		if _, err := Open(dir, Options{SegmentSize: segSize}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open without RepairLost: %v", err)
		}
		s, err := repairOpen(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := s.LastIndex()
		if lost := s.Lost(); !errors.Is(lost, ErrLost) || !strings.Contains(lost.Error(), p) || last >= 60 {
			t.Fatalf("lost %v, last %d", lost, last)
		}
	})
	t.Run("an earlier segment flipped", func(t *testing.T) {
		dir := setup(t)
		segs := segFiles(t, dir)
		b, _ := os.ReadFile(segs[0])
		b[headerSize+recordHead+20] ^= 0xff
		os.WriteFile(segs[0], b, 0o644)
		if _, err := repairOpen(t, dir); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open: %v, want ErrCorrupt", err)
		}
	})
	t.Run("damage before a later append, mark not raised yet", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir, 1<<20)
		for i := uint64(1); i <= 20; i++ {
			if err := s.StoreLog(entry(i, 1)); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		unmark(t, dir)
		seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
		b, _ := os.ReadFile(seg)
		off := int64(headerSize)
		for i := uint64(1); i < 10; i++ {
			off += int64(len(appendRecord(nil, entry(i, 1), 1)))
		}
		b[off+recordHead+40] ^= 0x55
		os.WriteFile(seg, b, 0o644)
		s, err := Open(dir, Options{SegmentSize: 1 << 20, RepairLost: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		last, _ := s.LastIndex()
		// Cut at 10; the mark raised to the later append's record (11)
		// before the cut, so the node knows it must catch up past it.
		if lost := s.Lost(); !errors.Is(lost, ErrLost) || last != 9 || s.SyncedMark() != 11 {
			t.Fatalf("lost %v, last %d, mark %d", lost, last, s.SyncedMark())
		}
	})
	t.Run("nothing lost", func(t *testing.T) {
		s, err := repairOpen(t, setup(t))
		if err != nil || s.Lost() != nil {
			t.Fatalf("open: %v, lost %v", err, s.Lost())
		}
	})
}
