package cluster

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// stateClusterID is the cluster id node n's state machine holds.
func stateClusterID(n *Node) string {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.ClusterID()
}

// restartWith stops node i, changes its Config, and starts it again.
func (dc *diskCluster) restartWith(t *testing.T, i int, edit func(*Config)) *Node {
	t.Helper()
	dc.stop(i)
	edit(&dc.cfgs[i])
	n, err := dc.start(i)
	if err != nil {
		t.Fatalf("restart node %d: %v", i, err)
	}
	return n
}

// sameClusterID fails the test unless, within 15 s, every node's id, state
// and cluster.id are want.
func sameClusterID(t *testing.T, dc *diskCluster, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var bad []string
		for i, n := range dc.nodes {
			file, _ := readClusterID(dc.dir(i))
			if n.ClusterID() != want || stateClusterID(n) != want || file != want {
				bad = append(bad, n.cfg.ID+": id "+n.ClusterID()+", state "+stateClusterID(n)+", file "+file)
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster id is not %s everywhere within 15 s: %s", want, strings.Join(bad, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterIDNotSplitBySnapshotWithoutID (review repro A): a member
// added while the cluster runs with --preserve-downgrade gets a version 2
// snapshot, which leaves the cluster id out, so its state knows no id and
// it has no cluster.id. Restarted without the flag and made leader, it
// must take the id its voters answer with, not make a second one (which
// split the cluster: the old members kept X, it took Y, and the two sides
// refused each other).
func TestClusterIDNotSplitBySnapshotWithoutID(t *testing.T) {
	logs := &syncBuffer{}
	dc := startDiskCluster(t, 3, func(i int, cfg *Config) {
		cfg.TrailingLogs = 2
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	x := clusterIDs(t, dc)
	for i := range dc.nodes {
		dc.restartWith(t, i, func(c *Config) { c.PreserveDowngrade = true })
		dc.leader(-1)
	}
	dc.write(t, "k", 20, 8)
	dc.converged()
	for _, n := range dc.nodes {
		if err := n.Snapshot(); err != nil {
			t.Fatal(err)
		}
	}
	// n4, on an empty directory, with the flag like the others.
	cfg := dc.cfgs[0]
	cfg.ID, cfg.DataDir, cfg.RaftAddr = "n4", t.TempDir(), "127.0.0.1:0"
	n4, err := NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n4.Close() })
	cfg.RaftAddr = n4.RaftAddr()
	dc.nodes, dc.cfgs, dc.ids = append(dc.nodes, n4), append(dc.cfgs, cfg), append(dc.ids, "n4")
	if err := dc.nodes[dc.leader(-1)].AddVoter("n4", n4.RaftAddr()); err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, "n4 to have the writes", func() bool { _, ok := get(n4, "k19"); return ok })
	if id := stateClusterID(n4); id != "" {
		t.Fatalf("n4's state has cluster id %q from a version 2 snapshot: the repro needs none", id)
	}
	// n4 without the flag, made leader.
	n4 = dc.restartWith(t, 3, func(c *Config) { c.PreserveDowngrade = false })
	within(t, 10*time.Second, "n4 to have the writes again", func() bool { _, ok := get(n4, "k19"); return ok })
	deadline := time.Now().Add(15 * time.Second)
	for !n4.IsLeader() {
		if li := dc.leader(-1); li != 3 {
			dc.nodes[li].raft.LeadershipTransferToServer("n4", raft.ServerAddress(n4.RaftAddr())).Error()
		}
		if time.Now().After(deadline) {
			t.Fatal("n4 did not become leader")
		}
		time.Sleep(50 * time.Millisecond)
	}
	sameClusterID(t, dc, x)
	dc.write(t, "after", 3, 8)
	dc.converged()
	if strings.Contains(logs.String(), "another cluster") {
		t.Fatalf("members refused each other:\n%s", logs.String())
	}
}

// TestClusterIDNotSplitByKeptFile (review repro B): a cluster made with
// --preserve-downgrade has no id; one member's directory kept a
// cluster.id (through a downgrade). Restarted without the flag, the
// leader must take that id, not make another one that member's
// directory contradicts.
func TestClusterIDNotSplitByKeptFile(t *testing.T) {
	logs := &syncBuffer{}
	dc := startDiskCluster(t, 3, func(i int, cfg *Config) {
		cfg.PreserveDowngrade = true
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	dc.write(t, "k", 5, 8)
	dc.converged()
	for _, n := range dc.nodes {
		if id := n.ClusterID(); id != "" {
			t.Fatalf("a cluster made with --preserve-downgrade has id %q", id)
		}
	}
	for i := range dc.nodes {
		dc.stop(i)
	}
	x := newClusterID()
	if err := writeClusterID(dc.dir(2), x); err != nil {
		t.Fatal(err)
	}
	for i := range dc.nodes {
		dc.cfgs[i].PreserveDowngrade = false
		if _, err := dc.start(i); err != nil {
			t.Fatal(err)
		}
	}
	dc.leader(-1)
	sameClusterID(t, dc, x)
	if strings.Contains(logs.String(), "another cluster") {
		t.Fatalf("members refused each other:\n%s", logs.String())
	}
}

// TestClusterIDFileOtherThanLogStops: a node whose cluster.id names
// another id than the one its log committed refuses to serve, naming
// the data directory and both ids (it used to keep serving with its own;
// its peers refuse it at the handshake too, but the log it restores at
// start-up already tells it).
func TestClusterIDFileOtherThanLogStops(t *testing.T) {
	logs := &syncBuffer{}
	dc := startDiskCluster(t, 3, func(i int, cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	x := clusterIDs(t, dc)
	dc.write(t, "k", 3, 8)
	dc.converged()
	// Its snapshot holds the id: restored at start-up, before any peer.
	if err := dc.nodes[2].Snapshot(); err != nil {
		t.Fatal(err)
	}
	dc.stop(2)
	other := newClusterID()
	if err := writeClusterID(dc.dir(2), other); err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	dc.cfgs[2].OnDiskFailure = func(err error) { failed <- err }
	n, err := dc.start(2)
	if err == nil {
		select {
		case err = <-failed:
		case <-time.After(15 * time.Second):
			t.Fatalf("the node on a directory naming cluster %s serves a cluster whose log holds %s (id %q)", other, x, n.ClusterID())
		}
	}
	for _, s := range []string{x, other, dc.dir(2)} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("the refusal %q does not name %s", err, s)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dc.dir(2), clusterIDFile)); !strings.Contains(string(b), other) {
		t.Fatalf("the refused node's %s was changed: %q", clusterIDFile, b)
	}
}
