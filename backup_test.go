package deadbolt

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
)

// latestSnapshot reads the newest Raft snapshot in a node's data
// directory: the state its state machine was restored from.
func latestSnapshot(t *testing.T, dir string) []byte {
	t.Helper()
	st, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := st.List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("no snapshot in %s: %v", dir, err)
	}
	_, rc, err := st.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A backup restored into a fresh three-node cluster: every node starts
// from the backup's bytes, the data and the locks are there, held by the
// same owners with the remaining leases they had at the backup although
// the new cluster starts an hour later, and the restore is refused over a
// data directory that holds state.
func TestBackupRestoreIntoNewCluster(t *testing.T) {
	ctx := context.Background()
	old := RunClusterT(t, 3)
	lead := client(t, old.Addr(old.Leader()))
	for _, cmd := range [][]any{
		{"SET", "lock:orders", "owner-7f3a", "NX", "PX", "30000"},
		{"SET", "lock:later", "owner-b", "NX", "PX", "600000"},
		{"HSET", "fair:q", "owner-1", "1", "owner-2", "2"},
		{"SET", "plain", "v"},
		{"SET", "gone", "x"},
		{"DEL", "gone"},
		{"SCRIPT", "LOAD", "return 1"},
		{"CONFIG", "SET", "notify-keyspace-events", "Ex"},
		{"FUNCTION", "LOAD", "#!lua name=locks\nredis.register_function('one', function() return 1 end)"},
		{"ACL", "SETUSER", "locker", "on", ">pw", "~lock:*", "+@all"},
	} {
		if err := lead.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	pttlBefore := lead.PTTL(ctx, "lock:orders").Val()
	// Through a follower: it asks the leader.
	f := old.Followers()[0]
	backup, err := client(t, old.Addr(f)).Do(ctx, "RAFT", "BACKUP").Text()
	if err != nil {
		t.Fatalf("RAFT BACKUP: %v", err)
	}
	pttlAfter := lead.PTTL(ctx, "lock:orders").Val()
	clock, err := cluster.CheckBackup([]byte(backup))
	if err != nil {
		t.Fatal(err)
	}

	// The new cluster starts an hour after the backup by its clock.
	later := &cluster.ManualClock{}
	later.Advance(time.Hour)
	started := time.Now()
	fresh := RunClusterT(t, 3, func(i int, c *Config) {
		c.Clock = later
		if i == 0 {
			c.Restore = []byte(backup)
		}
	})
	// Every node's state machine was restored from the backup's bytes,
	// less the old cluster's id (the new cluster gets its own): node 1
	// from them, the others from node 1's snapshot.
	seed := fsm.New(fsm.Options{})
	defer seed.Close()
	if err := seed.Restore(strings.NewReader(backup)); err != nil || seed.ClusterID() == "" {
		t.Fatalf("the backup: cluster id %q, %v", seed.ClusterID(), err)
	}
	seed.ForgetClusterID()
	var want bytes.Buffer
	if err := seed.Snapshot(&want); err != nil {
		t.Fatal(err)
	}
	for i := range fresh.Nodes {
		deadline := time.Now().Add(10 * time.Second)
		for fresh.Nodes[i].Raft().AppliedIndex() < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := latestSnapshot(t, fresh.cfgs[i].DataDir); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("node %d restored from %d bytes, not the backup's %d without its cluster id", i, len(got), want.Len())
		}
	}
	waitFor(t, 10*time.Second, "the new cluster's own id", func() bool {
		id := fresh.Nodes[0].Raft().ClusterID()
		return id != "" && id != old.Nodes[0].Raft().ClusterID()
	})
	for i := range fresh.Nodes {
		rc := client(t, fresh.Addr(i))
		if owner := rc.Get(ctx, "lock:orders").Val(); owner != "owner-7f3a" {
			t.Errorf("node %d: lock:orders held by %q", i, owner)
		}
		// The same remaining lease: what it was at the backup (between
		// pttlBefore and pttlAfter), less the time the new cluster has
		// run, not less the hour in between.
		ran := time.Since(started)
		pttl := rc.PTTL(ctx, "lock:orders").Val()
		if pttl > pttlBefore || pttl < pttlAfter-ran-time.Second {
			t.Errorf("node %d: lock:orders has %v left; %v to %v at the backup, the new cluster ran %v", i, pttl, pttlBefore, pttlAfter, ran)
		}
		if v := rc.HGet(ctx, "fair:q", "owner-2").Val(); v != "2" {
			t.Errorf("node %d: fair:q owner-2 = %q", i, v)
		}
		if n := rc.Exists(ctx, "gone").Val(); n != 0 {
			t.Errorf("node %d: a deleted key came back", i)
		}
		if ok := rc.ScriptExists(ctx, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db").Val(); len(ok) != 1 || !ok[0] {
			t.Errorf("node %d: the loaded script is gone", i)
		}
		if got := rc.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; got != "xE" {
			t.Errorf("node %d: notify-keyspace-events = %q", i, got)
		}
		if n, err := rc.FCall(ctx, "one", nil).Int(); err != nil || n != 1 {
			t.Errorf("node %d: FCALL one = %d, %v", i, n, err)
		}
		if err := rc.Do(ctx, "AUTH", "locker", "pw").Err(); err != nil {
			t.Errorf("node %d: the ACL user did not come with the backup: %v", i, err)
		}
	}
	// The clock continues from the backup's.
	now, err := client(t, fresh.Addr(0)).Time(ctx).Result()
	if err != nil || now.UnixMilli() < clock || now.UnixMilli() > clock+time.Since(started).Milliseconds()+1000 {
		t.Errorf("TIME after the restore = %v (%v); the backup's clock was %v", now, err, time.UnixMilli(clock))
	}

	// A node whose data directory holds state refuses a restore.
	fresh.Kill(1)
	cfg := fresh.cfgs[1]
	cfg.Restore = []byte(backup)
	if n, err := Start(cfg); err == nil {
		n.Close()
		t.Fatal("a restore over a data directory with state was accepted")
	} else if !strings.Contains(err.Error(), cfg.DataDir) || !strings.Contains(err.Error(), "empty data directory") {
		t.Fatalf("restore over state: %v", err)
	}
	fresh.Restart(1)

	// Node 1 was started from the backup: restarted with the same one, it
	// starts from its own state; with another, it refuses.
	fresh.Kill(0)
	cfg = fresh.cfgs[0]
	cfg.Restore = []byte(backup)
	n, err := Start(cfg)
	if err != nil {
		t.Fatalf("restarted with the backup it was started from: %v", err)
	}
	fresh.Nodes[0] = n
	fresh.Kill(0)
	// The first cluster has stood idle meanwhile: on a loaded machine it
	// may be between leaders, which RAFT BACKUP answers with TRYAGAIN.
	var other string
	for deadline := time.Now().Add(10 * time.Second); ; {
		other, err = lead.Do(ctx, "RAFT", "BACKUP").Text()
		if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || other == backup {
		t.Fatalf("a second backup: %v", err)
	}
	cfg.Restore = []byte(other)
	if n, err := Start(cfg); err == nil {
		n.Close()
		t.Fatal("a restore of another backup over a data directory with state was accepted")
	} else if !strings.Contains(err.Error(), cfg.DataDir) {
		t.Fatalf("another backup over state: %v", err)
	}
	fresh.Restart(0)
}

// A file that is not a whole backup is refused before anything starts.
func TestRestoreRefusesABadBackup(t *testing.T) {
	old := RunClusterT(t, 1)
	backup, err := client(t, old.Addr(0)).Do(context.Background(), "RAFT", "BACKUP").Text()
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated":   []byte(backup[:len(backup)-3]),
		"not at all":  []byte("hello"),
		"extra bytes": append([]byte(backup), 'x'),
	} {
		_, err := Start(Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Restore: bad})
		if err == nil || !strings.Contains(err.Error(), "restore") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Start(Config{Addr: "127.0.0.1:0", Restore: []byte(backup)}); err == nil {
		t.Error("a restore into an in-memory node without Raft was accepted")
	}
}
