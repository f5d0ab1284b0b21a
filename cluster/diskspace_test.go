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
