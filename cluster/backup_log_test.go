package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The log's "cluster: starting from a backup" record gives the backup
// file's size and SHA-256, both as deadbolt backup printed them: its bytes
// were those of the seed made from the file (with the new cluster's id),
// so a 772-byte backup was logged as 739 bytes beside the file's sha256.
func TestRestoreLogNamesTheFile(t *testing.T) {
	c := startTestClusterWith(t, 1, nil)
	l := c.nodes[c.leader(-1)]
	if _, err := l.Apply(context.Background(), cmd("set", "k", "v")); err != nil {
		t.Fatal(err)
	}
	data, _, err := l.Backup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var b strings.Builder
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return b.Write(p)
	}), nil))
	n, err := NewNode(Config{ID: "r1", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Restore: data, Logger: logger,
		Peers: []Peer{{ID: "r1", RaftAddr: "127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	mu.Lock()
	got := b.String()
	mu.Unlock()
	sum := sha256.Sum256(data)
	want := "bytes=" + strconv.Itoa(len(data)) + " sha256=" + hex.EncodeToString(sum[:])
	if !strings.Contains(got, "starting from a backup") || !strings.Contains(got, want) {
		t.Fatalf("log %q: want %q", got, want)
	}
}
