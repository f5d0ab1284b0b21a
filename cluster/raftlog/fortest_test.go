package raftlog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// SegmentEndForTest finds the end of the last record from the records
// themselves: bytes after it that are not zeros (a stale record, garbage)
// do not move it, and it is exactly where opening reads the last record
// whole (truncated there, the log opens with every entry; one byte less,
// and the synced last entry is lost).
func TestSegmentEndForTest(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 64<<10)
	if err := s.StoreLogs(entries(1, 20, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	p := segs[0]
	end, n, err := SegmentEndForTest(p)
	if err != nil || n != 20 {
		t.Fatalf("SegmentEndForTest: end %d, %d records, %v; want 20 records", end, n, err)
	}

	// A stale record after a zero length, and garbage after that.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	stale := appendRecord(nil, entry(21, 1), 21)
	if _, err := f.WriteAt(append(stale, 0xff, 0xee), end+100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if end2, n2, err := SegmentEndForTest(p); err != nil || end2 != end || n2 != n {
		t.Fatalf("with stale bytes after the records: end %d, %d records, %v; want %d, %d", end2, n2, err, end, n)
	}

	// Cut at end: every entry is there.
	if err := os.Truncate(p, end); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, 64<<10)
	if last, _ := s.LastIndex(); last != 20 {
		t.Fatalf("open with the file cut at end: last index %d, want 20", last)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Cut one byte short of end: the last record is torn, and it was synced.
	if err := os.Truncate(p, end-1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SegmentEndForTest(p); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(dir, Options{SegmentSize: 64 << 10}); !errors.Is(err, ErrLost) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("open with the file cut at end-1: %v, want ErrLost", err)
	}
	if end3, n3, _ := SegmentEndForTest(p); end3 >= end || n3 != 19 {
		t.Fatalf("cut at end-1: end %d, %d records; want below %d, 19", end3, n3, end)
	}
}
