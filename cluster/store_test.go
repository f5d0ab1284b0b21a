package cluster

import (
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

// TestLogStore: a new data directory gets raft-wal; one that has
// raft-boltdb's raft.db keeps it. Both keep what they stored.
func TestLogStore(t *testing.T) {
	t.Run("new", func(t *testing.T) {
		storeAndReopen(t, t.TempDir(), "raft-wal", 1)
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
		storeAndReopen(t, dir, "raft-boltdb", 2)
	})
}
