package cluster

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// A follower that installs a snapshot has applied the snapshot's index:
// raftFSM.Restore records it (before, the applied index stayed where it
// was before the install, so a read on the follower waited for a later
// write, and StateSnapshot and backups named an older index than the state
// they held). Likewise a node started from its own snapshot, with no entry
// after it in its log.
func TestRestoreSetsApplied(t *testing.T) {
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) {
		cfg.DataDir = t.TempDir()
		cfg.TrailingLogs = 2 // a follower cut off for a few entries needs a snapshot
		// A clock that does not move: the idle leader proposes no clock
		// ticks, which would move the applied index past the snapshot.
		cfg.Clock = stoppedClock{time.Unix(1_700_000_000, 0)}
	})
	l := c.leader(-1)
	ctx := context.Background()
	leader := c.nodes[l]
	lag := (l + 1) % 3
	c.nw.Isolate(c.ids[lag], c.ids...)
	before := c.nodes[lag].AppliedIndex()
	var last uint64
	for i := range 20 {
		res, err := leader.Apply(ctx, cmd("set", "k"+strconv.Itoa(i), "v"))
		if err != nil {
			t.Fatal(err)
		}
		last = res.LogIndex
	}
	snap := snapshotIndex(t, leader)
	if snap < last {
		t.Fatalf("snapshot at %d, below the last write %d", snap, last)
	}
	c.nw.Heal()
	within(t, 15*time.Second, "the lagging follower to install the snapshot", func() bool {
		return c.nodes[lag].RaftMetrics().SnapshotsInstalled == 1
	})
	// No write after the snapshot: only the install can move the index.
	within(t, 10*time.Second, "the follower's applied index to reach the snapshot's", func() bool {
		return c.nodes[lag].AppliedIndex() >= snap
	})
	if got := c.nodes[lag].AppliedIndex(); got != snap {
		t.Fatalf("follower's applied index %d after installing the snapshot at %d (was %d)", got, snap, before)
	}
	var b []byte
	idx, err := c.nodes[lag].StateSnapshot(writerFunc(func(p []byte) (int, error) { b = append(b, p...); return len(p), nil }))
	if err != nil || idx != snap || len(b) == 0 {
		t.Fatalf("StateSnapshot: index %d, %v, want %d", idx, err, snap)
	}
}

// snapshotIndex has n's raft take a snapshot and returns its index.
func snapshotIndex(tb testing.TB, n *Node) uint64 {
	tb.Helper()
	f := n.raft.Snapshot()
	if err := f.Error(); err != nil {
		tb.Fatal(err)
	}
	meta, rc, err := f.Open()
	if err != nil {
		tb.Fatal(err)
	}
	rc.Close()
	return meta.Index
}

type stoppedClock struct{ t time.Time }

func (c stoppedClock) Now() time.Time { return c.t }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A follower started from its own snapshot, with no entry after it in its
// log and an idle leader, has applied the snapshot's index once raft
// restored it. (A node that wins an election applies an entry of its own
// at once, which hid this on a single node.)
func TestRestoreSetsAppliedAtStart(t *testing.T) {
	dc := startDiskCluster(t, 3, func(i int, cfg *Config) {
		cfg.Clock = stoppedClock{time.Unix(1_700_000_000, 0)} // no clock ticks
	})
	dc.write(t, "k", 20, 10)
	dc.converged()
	fi := (dc.leader(-1) + 1) % 3
	snap := snapshotIndex(t, dc.nodes[fi])
	dc.stop(fi)
	n, err := dc.start(fi)
	if err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, "the restarted follower's applied index to reach its snapshot's", func() bool {
		return n.AppliedIndex() >= snap
	})
	if _, ok := get(n, "k19"); !ok {
		t.Fatal("the restarted follower lacks k19")
	}
}
