package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

func storeAndReopen(t *testing.T, dir, wantKind string, first uint64) {
	t.Helper()
	logs, stable, closer, err := OpenLogStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := LogStoreKind(dir); got != wantKind {
		t.Fatalf("kind %s, want %s", got, wantKind)
	}
	data := AppendBatch(nil, envFor("a"), envFor("b"))
	if err := logs.StoreLogs([]*raft.Log{{Index: first, Term: 2, Type: raft.LogCommand, Data: data}}); err != nil {
		t.Fatal(err)
	}
	if err := stable.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	closer.Close()

	logs, stable, closer, err = OpenLogStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	var l raft.Log
	if err := logs.GetLog(first, &l); err != nil || string(l.Data) != string(data) || l.Term != 2 {
		t.Fatalf("after reopening: %+v, %v", l, err)
	}
	if term, err := stable.GetUint64([]byte("CurrentTerm")); err != nil || term != 2 {
		t.Fatalf("term after reopening: %d, %v", term, err)
	}
}

// TestLogStore: a new data directory gets raftlog; one that has raft-boltdb's
// raft.db keeps raft-boltdb, one written by raft-wal keeps raft-wal. Each
// keeps what it stored.
func TestLogStore(t *testing.T) {
	t.Run("new", func(t *testing.T) {
		dir := t.TempDir()
		storeAndReopen(t, dir, StoreRaftlog, 1)
		if st, err := os.Stat(filepath.Join(dir, "log")); err != nil || !st.IsDir() {
			t.Fatalf("no log/ directory: %v", err)
		}
		if got := LogStorePath(dir); got != filepath.Join(dir, "log") {
			t.Fatalf("LogStorePath = %s", got)
		}
	})
	t.Run("existing wal", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "wal"), 0o755); err != nil {
			t.Fatal(err)
		}
		storeAndReopen(t, dir, StoreWAL, 1)
	})
	t.Run("existing raft.db", func(t *testing.T) {
		dir := t.TempDir()
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		if err != nil {
			t.Fatal(err)
		}
		if err := bolt.StoreLog(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: envFor("old")}); err != nil {
			t.Fatal(err)
		}
		bolt.Close()
		storeAndReopen(t, dir, StoreBolt, 2)
	})
}

// A new data directory's log reopens after raft truncated its suffix (a
// follower dropping entries the new leader does not have), then a crash:
// the case in which raft-wal v0.4.0 cannot read its log back.
func TestLogStoreReopensAfterSuffixTruncation(t *testing.T) {
	dir := t.TempDir()
	logs, _, closer, err := OpenLogStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 5; i++ {
		if err := logs.StoreLog(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: envFor("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := logs.DeleteRange(4, 5); err != nil {
		t.Fatal(err)
	}
	if err := logs.StoreLog(&raft.Log{Index: 4, Term: 2, Type: raft.LogCommand, Data: envFor("y")}); err != nil {
		t.Fatal(err)
	}
	closer.Close()
	logs, _, closer, err = OpenLogStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	for i := uint64(1); i <= 4; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d after reopening: %v", i, err)
		}
	}
	if last, err := logs.LastIndex(); err != nil || last != 4 {
		t.Fatalf("last index %d, %v; want 4", last, err)
	}
}
