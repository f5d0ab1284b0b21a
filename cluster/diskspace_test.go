package cluster

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A node's own log says when it starts refusing writes for want of space,
// and when it takes them again: before, a node started on a disk below
// --min-free-disk answered every write MISCONF while its log said nothing
// but "leader ready". The free space is the real file system's (statfs
// of a temporary directory); a threshold above it makes it "low".
func TestDiskWatchLogsStatusChanges(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	logger := slog.New(slog.NewTextHandler(&b, nil))
	w := newDiskWatch(dir, 1<<62, nil)
	if w.status() != "low" {
		t.Fatalf("status %q with a threshold above any disk's free space", w.status())
	}
	w.logChange(logger, "n1")
	got := b.String()
	if !strings.Contains(got, "level=WARN") || !strings.Contains(got, "disk short of space") ||
		!strings.Contains(got, "dir="+dir) || !strings.Contains(got, "min_free=4611686018427387904") {
		t.Fatalf("low disk logged %q", got)
	}
	w.check()
	w.logChange(logger, "n1")
	if b.String() != got {
		t.Fatalf("an unchanged status was logged again: %q", b.String()[len(got):])
	}
	w.minFree = 0
	w.check()
	w.logChange(logger, "n1")
	if back := b.String()[len(got):]; !strings.Contains(back, "level=INFO") || !strings.Contains(back, "disk space returned") {
		t.Fatalf("space back logged %q", back)
	}
	got = b.String()
	w.noSpace(errors.New("no space left on device"))
	w.logChange(logger, "n1")
	if full := b.String()[len(got):]; !strings.Contains(full, "level=WARN") || !strings.Contains(full, "disk full") {
		t.Fatalf("a failed append for want of space logged %q", full)
	}
}

// segmentLog stands for the raftlog store, whose segment size is all
// check reads here (besides a reserve, which this disk has none of): a
// double, since the point is a segment larger than the free space of
// whatever disk the test runs on, which a real store cannot be given.
type segmentLog struct{ size int64 }

func (segmentLog) ReserveInUse() bool   { return false }
func (segmentLog) RefillReserve()       {}
func (l segmentLog) SegmentSize() int64 { return l.size }
func (segmentLog) SegmentsMade() uint64 { return 0 }

// A failed append for want of space keeps the disk "full" until a new
// segment fits, not only until 1 MiB is free: on a 20 MB tmpfs with
// --min-free-disk 0 (no room for the reserve) the log's new segment found
// no space, the next check (4 MB free) cleared "full", and every later
// write was proposed, failed, and made the leader step down: an election
// a write. The free space is the real file system's.
func TestDiskWatchFullUntilASegmentFits(t *testing.T) {
	dir := t.TempDir()
	w := newDiskWatch(dir, 0, nil)
	free := w.free.Load()
	w.log = segmentLog{size: free + 1<<30}
	w.noSpace(errors.New("no space left on device"))
	w.check()
	if s := w.status(); s != "full" {
		t.Fatalf("status %q with %d bytes free and segments of %d: want full", s, w.free.Load(), free+1<<30)
	}
	w.log = segmentLog{size: 1 << 20}
	w.check()
	if s := w.status(); s != "ok" && w.free.Load() >= 1<<20 {
		t.Fatalf("status %q once a segment fits (%d bytes free): want ok", s, w.free.Load())
	}
}
