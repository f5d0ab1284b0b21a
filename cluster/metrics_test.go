package cluster

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// The Raft figures the metrics endpoint reads move with the cluster: the
// leader sees its followers answer, a snapshot taken and one installed on
// a follower that fell behind the log are counted with their sizes, and
// the log store times its appends and syncs.
func TestRaftMetrics(t *testing.T) {
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) {
		cfg.DataDir = t.TempDir()
		cfg.TrailingLogs = 2 // a follower cut off for a few entries needs a snapshot
	})
	l := c.leader(-1)
	ctx := context.Background()
	leader := c.nodes[l]
	lag := (l + 1) % 3
	c.nw.Isolate(c.ids[lag], c.ids...)
	for i := range 20 {
		if _, err := leader.Apply(ctx, cmd("set", "k"+strconv.Itoa(i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	m := leader.RaftMetrics()
	if m.State != "Leader" || m.SnapshotsTaken != 1 || m.LastSnapshotBytes <= 0 || m.SnapshotTakeNs.Count != 1 {
		t.Errorf("leader after a snapshot: state %s, taken %d, %d bytes, %d timings", m.State, m.SnapshotsTaken, m.LastSnapshotBytes, m.SnapshotTakeNs.Count)
	}
	if m.Log == nil || m.Log.Sync.Count == 0 || m.Log.Write.Count == 0 || m.Log.DiskBytes == 0 || m.ApplyBatch.Count == 0 {
		t.Errorf("leader's log figures: %+v, batches %d", m.Log, m.ApplyBatch.Count)
	}
	c.nw.Heal()
	within(t, 15*time.Second, "the lagging follower to install the snapshot", func() bool {
		return c.nodes[lag].RaftMetrics().SnapshotsInstalled == 1
	})
	f := c.nodes[lag].RaftMetrics()
	if f.LastInstallBytes != m.LastSnapshotBytes || f.SnapshotInstallNs.Count != 1 || f.LeaderChanges != 1 {
		t.Errorf("follower: installed %d bytes (taken %d), %d timings, %d leader changes", f.LastInstallBytes, m.LastSnapshotBytes, f.SnapshotInstallNs.Count, f.LeaderChanges)
	}
	within(t, 15*time.Second, "the follower to catch up", func() bool {
		return c.nodes[lag].Summary().Keys == 20
	})
	m = leader.RaftMetrics()
	if len(m.Followers) != 2 {
		t.Fatalf("leader knows %d followers: %v", len(m.Followers), m.Followers)
	}
	for id, d := range m.Followers {
		if d < 0 || d > 5*time.Second {
			t.Errorf("follower %s last answered %v ago", id, d)
		}
	}
	if ok, why := c.nodes[lag].Ready(); !ok {
		t.Errorf("caught-up follower not ready: %s", why)
	}
}
