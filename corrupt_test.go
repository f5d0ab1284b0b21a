package deadbolt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The repair a node with a damaged data directory names: RAFT REMOVE on the
// leader, the directory moved away, the node started again with --join. It
// comes back empty, catches up from the leader, and holds every write.
func TestDamagedNodeRepairByRejoin(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	l := c.Leader()
	cl := client(t, c.Addr(l))
	for i := 0; i < 50; i++ {
		if err := cl.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f := c.Followers()[0]
	c.Kill(f)
	stable := filepath.Join(c.DataDir(f), "log", "stable")
	if err := os.Truncate(stable, 100); err != nil {
		t.Fatal(err)
	}
	_, err := c.TryRestart(f, nil)
	if err == nil || !strings.Contains(err.Error(), stable) {
		t.Fatalf("restart with a damaged stable store: %v", err)
	}
	id := c.IDs()[f]
	if !strings.Contains(err.Error(), "RAFT REMOVE "+id) {
		t.Fatalf("no repair named: %v", err)
	}
	// The repair, as the error says.
	if err := cl.Do(ctx, "RAFT", "REMOVE", id).Err(); err != nil {
		t.Fatalf("RAFT REMOVE %s: %v", id, err)
	}
	if err := os.Rename(c.DataDir(f), c.DataDir(f)+".damaged"); err != nil {
		t.Fatal(err)
	}
	n, err := c.TryRestart(f, func(cfg *Config) {
		cfg.Peers = nil
		cfg.Join = c.Addr(l)
	})
	if err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	if err := cl.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	want := c.Nodes[l].Raft().AppliedIndex()
	for deadline := time.Now().Add(15 * time.Second); n.Raft().AppliedIndex() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("the rejoined node applied %d, the leader %d", n.Raft().AppliedIndex(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if keys, _ := n.Raft().KeyspaceStats(0); keys != 51 {
		t.Fatalf("the rejoined node holds %d keys, want 51", keys)
	}
	members, err := c.Nodes[l].Raft().Members()
	if err != nil || len(members) != 3 {
		t.Fatalf("members after the rejoin: %v %v", members, err)
	}
}
