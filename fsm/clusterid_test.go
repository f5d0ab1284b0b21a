package fsm

import (
	"bytes"
	"testing"
)

// The first __clusterid applied sets the cluster id and later ones change
// nothing; a snapshot carries it at version 4 and leaves it out below (an
// older build reads versions 2 and 3), a damaged one is refused.
func TestClusterIDReplicated(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	var v3 bytes.Buffer
	if err := f.Snapshot(&v3); err != nil {
		t.Fatal(err)
	}
	if got := v3.Bytes()[len(snapshotMagic)]; got != 1 {
		t.Fatalf("an empty state without a cluster id: version %d, want 1", got)
	}
	for _, id := range []string{"", "bad id", string(make([]byte, MaxClusterIDLen+1))} {
		if r := f.Apply(1, ClusterIDCommand(id)); !r.Reply.IsError() || f.ClusterID() != "" {
			t.Fatalf("__clusterid %q: %v, id %q", id, r.Reply, f.ClusterID())
		}
	}
	f.Apply(1, ClusterIDCommand("first"))
	if r := f.Apply(2, ClusterIDCommand("second")); r.Reply.String() != "first" || f.ClusterID() != "first" {
		t.Fatalf("a second __clusterid: %v, id %q", r.Reply, f.ClusterID())
	}
	var full, old bytes.Buffer
	if err := f.Snapshot(&full); err != nil {
		t.Fatal(err)
	}
	if got := full.Bytes()[len(snapshotMagic)]; got != 4 {
		t.Fatalf("with a cluster id: version %d, want 4", got)
	}
	if err := f.SnapshotUpTo(&old, 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		snap []byte
		want string
	}{{full.Bytes(), "first"}, {old.Bytes(), ""}} {
		g := New(Options{})
		if err := g.Restore(bytes.NewReader(tc.snap)); err != nil || g.ClusterID() != tc.want {
			t.Fatalf("restored version %d: id %q, %v; want %q", tc.snap[len(snapshotMagic)], g.ClusterID(), err, tc.want)
		}
		g.Close()
	}
	bad := bytes.Replace(full.Bytes(), []byte("first"), []byte("fi st"), 1)
	g := New(Options{})
	defer g.Close()
	if err := g.Restore(bytes.NewReader(bad)); err == nil {
		t.Fatal("a snapshot with a bad cluster id was restored")
	}
}
