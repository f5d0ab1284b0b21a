//go:build linux

package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/internal/tmpfs"
)

// TestDiskWatchFullEndsWithANewSegment: "full", set when an append found
// no room for a new segment, ends once the log has made one, even if the
// free space read afterwards is under a segment again (the new segment
// took what came back). A real log store on a real tmpfs with no room for
// the reserve segment (--min-free-disk 0). Before, "full" stayed until a
// whole segment more was free, refusing every write while the log had an
// empty segment to write them into (from the review of 31f1fac).
func TestDiskWatchFullEndsWithANewSegment(t *testing.T) {
	const seg = 4 << 20
	mnt := tmpfs.Mount(t, 16<<20)
	other := tmpfs.Fill(t, mnt, 7<<20+512<<10) // 7.5 MiB left: a segment and a spare, no reserve
	dir := filepath.Join(mnt, "data")
	s, err := raftlog.Open(dir, raftlog.Options{SegmentSize: seg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := newDiskWatch(dir, 0, s)
	data := make([]byte, 64<<10)
	next := uint64(1)
	app := func() error {
		err := s.StoreLogs([]*raft.Log{{Index: next, Term: 1, Type: raft.LogCommand, Data: data}})
		if err == nil {
			next++
		}
		return err
	}
	var full error
	deadline := time.Now().Add(20 * time.Second)
	for full == nil && time.Now().Before(deadline) {
		full = app()
	}
	if !raftlog.IsNoSpace(full) || s.ReserveInUse() {
		t.Fatalf("filling the log: %v (reserve in use: %v), want no space without a reserve", full, s.ReserveInUse())
	}
	w.noSpace(full)
	w.check()
	if st := w.status(); st != "full" {
		t.Fatalf("status %q after an append found no space", st)
	}
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	// Space returns, and an append takes it for a new segment before the
	// watch looks again.
	if err := app(); err != nil {
		t.Fatalf("an append once space returned: %v", err)
	}
	for range 3 {
		if err := app(); err != nil {
			t.Fatal(err)
		}
	}
	// The store makes its next spare (and its reserve, if it fits) in the
	// background: wait until they have taken the space back below a
	// segment, as on a disk that stays nearly full.
	free, _ := tmpfs.Free(dir)
	for deadline := time.Now().Add(20 * time.Second); free >= seg; free, _ = tmpfs.Free(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("the log made no new spare in 20 s: %d bytes free", free)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.check()
	if st := w.status(); st != "ok" {
		t.Fatalf("status %q with %d bytes free and a fresh segment in the log (segments need %d)", st, free, seg)
	}
}
