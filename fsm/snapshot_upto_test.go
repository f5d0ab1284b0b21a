package fsm

import (
	"bytes"
	"testing"
)

// SnapshotUpTo writes a state with lock shapes at version 2 (without
// them), which restores to the same keys, and refuses what a version
// cannot carry.
func TestSnapshotUpTo(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	const t0 = 1_000_000
	f.Apply(t0, Command{Args: [][]byte{[]byte("SET"), []byte("lock:a"), []byte("tok"), []byte("NX"), []byte("PX"), []byte("30000")}})
	f.Apply(t0, Command{Args: [][]byte{[]byte("SET"), []byte("k"), []byte("v")}})
	if !f.hasLockShapes() {
		t.Fatal("SET NX PX made no lock shape")
	}
	var full, v2 bytes.Buffer
	if err := f.Snapshot(&full); err != nil {
		t.Fatal(err)
	}
	if err := f.SnapshotUpTo(&v2, 2); err != nil {
		t.Fatal(err)
	}
	if got := full.Bytes()[len(snapshotMagic)]; got != 3 {
		t.Fatalf("Snapshot wrote version %d, want 3", got)
	}
	if got := v2.Bytes()[len(snapshotMagic)]; got != 2 && got != 1 {
		t.Fatalf("SnapshotUpTo(2) wrote version %d", got)
	}
	g := New(Options{})
	defer g.Close()
	if err := g.Restore(bytes.NewReader(v2.Bytes())); err != nil {
		t.Fatal(err)
	}
	if g.hasLockShapes() {
		t.Fatal("a version-2 snapshot brought lock shapes back")
	}
	for _, k := range []string{"lock:a", "k"} {
		r := g.Read(t0+1, Command{Args: [][]byte{[]byte("GET"), []byte(k)}})
		if want := map[string]string{"lock:a": "tok", "k": "v"}[k]; r.Reply.String() != want {
			t.Fatalf("GET %s after a version-2 snapshot: %v", k, r.Reply)
		}
	}
	// Version 1 cannot carry replicated settings.
	f.Apply(t0, Command{Args: [][]byte{[]byte("__setconfig"), []byte("notify-keyspace-events"), []byte("KEA")}})
	if err := f.SnapshotUpTo(&bytes.Buffer{}, 1); err == nil {
		t.Fatal("SnapshotUpTo(1) wrote replicated settings")
	}
	if err := f.SnapshotUpTo(&bytes.Buffer{}, SnapshotVersion+1); err == nil {
		t.Fatal("SnapshotUpTo accepted a version this build does not write")
	}
}
