//go:build linux

package deadbolt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/tmpfs"
)

// The disk on /metrics, with real file systems that fill: a follower
// short of space refuses nothing itself, so no MISCONF reply tells of it;
// its deadbolt_disk_status does (the DeadboltDiskFull alert's series).

// TestMetricsDiskGaugesFollower puts each member's data directory on a
// 20 MiB tmpfs of its own and fills one follower's: its disk status goes
// to 1 (below --min-free-disk) and, once its log needs a segment that does
// not fit, to 2 (full), while the cluster takes writes and no node counts
// a MISCONF; the free bytes follow the file system; space returned, the
// status is 0 again. Every series is there, at 0, before anything
// happened.
func TestMetricsDiskGaugesFollower(t *testing.T) {
	const minFree = 4 << 20
	const segSize = 512 << 10
	mounts := make([]string, 3)
	for i := range mounts {
		mounts[i] = tmpfs.Mount(t, 20<<20)
	}
	c := RunClusterT(t, 3, func(i int, cfg *Config) {
		cfg.DataDir = filepath.Join(mounts[i], "data")
		cfg.MinFreeDisk = minFree
		cfg.segmentSize = segSize
		withHTTP(cfg)
	})
	l := c.WaitLeader()
	f := c.Followers()[0]
	ctx := context.Background()
	misconf := `deadbolt_error_replies_total{kind="MISCONF"}`

	for i, n := range c.Nodes {
		m := scrape(t, n.HTTPAddr())
		for _, name := range []string{misconf, "deadbolt_disk_status", "deadbolt_disk_refused_writes_total"} {
			if v, ok := m[name]; !ok || v != 0 {
				t.Errorf("node %d before any refusal: %s = %v (present %v), want 0", i, name, v, ok)
			}
		}
		if v := m["deadbolt_disk_min_free_bytes"]; v != minFree {
			t.Errorf("node %d: deadbolt_disk_min_free_bytes %v, want %d", i, v, minFree)
		}
		free, err := tmpfs.Free(mounts[i])
		if err != nil {
			t.Fatal(err)
		}
		// The watch reads statfs every 100 ms; the log's spare and
		// reserve segments may come between that reading and this one.
		if v := m["deadbolt_disk_free_bytes"]; v < float64(free-4*segSize) || v > float64(free+4*segSize) || v > 20<<20 {
			t.Errorf("node %d: deadbolt_disk_free_bytes %v, statfs says %d", i, v, free)
		}
	}

	// The follower's log has made its reserve segment (after the spare):
	// filled before that, the disk would see the making of it fail and
	// its space come back, and the full follower have no reserve to take.
	reserve := filepath.Join(mounts[f], "data", "log", "reserve")
	waitFor(t, 10*time.Second, "the follower's reserve segment", func() bool {
		st, err := os.Stat(reserve)
		return err == nil && st.Size() == segSize
	})
	ballast := tmpfs.Fill(t, mounts[f], 1<<20)
	var fm map[string]float64
	waitFor(t, 10*time.Second, "the follower's disk status 1", func() bool {
		fm = scrape(t, c.Nodes[f].HTTPAddr())
		return fm["deadbolt_disk_status"] == 1
	})
	t.Logf("follower filled to 1 MiB free: status %v, free %v", fm["deadbolt_disk_status"], fm["deadbolt_disk_free_bytes"])
	if v := fm["deadbolt_disk_free_bytes"]; v >= minFree || v < 0 {
		t.Errorf("follower short of space: deadbolt_disk_free_bytes %v, want below --min-free-disk %d", v, minFree)
	}
	cl := client(t, c.Addr(l))
	value := strings.Repeat("v", 32<<10)
	for i := range 10 {
		if err := cl.Set(ctx, fmt.Sprintf("k%d", i), value, 0).Err(); err != nil {
			t.Fatalf("SET with one follower short of space: %v", err)
		}
	}
	for i, n := range c.Nodes {
		if v := scrape(t, n.HTTPAddr())[misconf]; v != 0 {
			t.Errorf("node %d counted %v MISCONF replies: nothing was refused", i, v)
		}
	}

	// To the last byte: the follower's log takes its reserve segment
	// when the next one does not fit, and its status is 2.
	ballast2 := tmpfs.Fill(t, mounts[f], 0)
	i := 0
	waitFor(t, 20*time.Second, "the follower's disk status 2", func() bool {
		for range 8 {
			i++
			if err := cl.Set(ctx, fmt.Sprintf("full%d", i), value, 0).Err(); err != nil {
				t.Fatalf("SET with one follower's disk full: %v", err)
			}
		}
		// The status follows an append at once; the free space is read
		// every 100 ms, so it may lag the fill by one reading.
		fm = scrape(t, c.Nodes[f].HTTPAddr())
		return fm["deadbolt_disk_status"] == 2 && fm["deadbolt_disk_free_bytes"] <= segSize
	})
	t.Logf("follower filled to the last byte: status %v after %d SETs of 32 KiB, free %v", fm["deadbolt_disk_status"], i, fm["deadbolt_disk_free_bytes"])
	if v := fm["deadbolt_disk_free_bytes"]; v > segSize {
		t.Errorf("follower full: deadbolt_disk_free_bytes %v", v)
	}
	if v := scrape(t, c.Nodes[l].HTTPAddr())["deadbolt_disk_status"]; v != 0 {
		t.Errorf("the leader, with room: deadbolt_disk_status %v", v)
	}

	for _, b := range []string{ballast, ballast2} {
		if err := os.Remove(b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the follower's disk status 0 once space returned", func() bool {
		fm = scrape(t, c.Nodes[f].HTTPAddr())
		return fm["deadbolt_disk_status"] == 0 && fm["deadbolt_disk_free_bytes"] >= minFree
	})
	t.Logf("space returned: status %v, free %v", fm["deadbolt_disk_status"], fm["deadbolt_disk_free_bytes"])
}

// TestMetricsAlertedErrorKindsFromZero: the error kinds an alert or panel
// takes increase() of are served at 0 before the first such reply (a
// series born at 1 shows Prometheus no increase), and count from there.
// A single node without a data directory has no disk series.
func TestMetricsAlertedErrorKindsFromZero(t *testing.T) {
	n := RunT(t, withHTTP)
	m := scrape(t, n.HTTPAddr())
	for _, kind := range []string{"MISCONF", "OOM"} {
		name := `deadbolt_error_replies_total{kind="` + kind + `"}`
		if v, ok := m[name]; !ok || v != 0 {
			t.Errorf("before any %s reply: %s = %v (present %v), want 0", kind, name, v, ok)
		}
	}
	if _, ok := m["deadbolt_disk_status"]; ok {
		t.Error("a node without a data directory serves deadbolt_disk_status")
	}
	ctx := context.Background()
	cl := client(t, n.Addr())
	if err := cl.Set(ctx, "first", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET over maxmemory: %v, want OOM", err)
	}
	if v := scrape(t, n.HTTPAddr())[`deadbolt_error_replies_total{kind="OOM"}`]; v != 1 {
		t.Errorf("after one OOM reply: %v", v)
	}
}

// TestMetricsDiskFullFollowerNoReserve: a follower started on a disk with
// too little room for its log's reserve segment, and no --min-free-disk,
// fills it: its appends fail for want of space, and its status is 2
// (full). Before, only a leader's failed append was noted, so such a
// follower said 0 (ok) on /metrics and to a leader looking for a member
// with room to hand over to.
func TestMetricsDiskFullFollowerNoReserve(t *testing.T) {
	const segSize = 1 << 20
	mounts := make([]string, 3)
	for i := range mounts {
		mounts[i] = tmpfs.Mount(t, 20<<20)
	}
	const f = 2
	// Room for the first segment, not the spare or the reserve.
	ballast := tmpfs.Fill(t, mounts[f], 3*segSize/2)
	c := RunClusterT(t, 3, func(i int, cfg *Config) {
		cfg.DataDir = filepath.Join(mounts[i], "data")
		cfg.MinFreeDisk = -1
		cfg.segmentSize = segSize
		withHTTP(cfg)
	})
	l := c.WaitLeader()
	if l == f {
		if err := c.Nodes[l].Raft().TransferLeadership(); err != nil {
			t.Fatal(err)
		}
		l = c.WaitNewLeader(f)
	}
	cl := client(t, c.Addr(l))
	value := strings.Repeat("v", 32<<10)
	i := 0
	var fm map[string]float64
	reserve := filepath.Join(mounts[f], "data", "log", "reserve")
	if _, err := os.Stat(reserve); err == nil {
		t.Fatal("the follower made a reserve segment: the disk was meant to have no room for one")
	}
	if v := scrape(t, c.Nodes[f].HTTPAddr())["deadbolt_disk_status"]; v != 0 {
		t.Fatalf("the follower's status %v before its log needs a new segment", v)
	}
	waitFor(t, 30*time.Second, "the follower's disk status 2", func() bool {
		for range 8 {
			i++
			if err := cl.Set(context.Background(), fmt.Sprintf("k%d", i), value, 0).Err(); err != nil {
				t.Fatalf("SET %d with one follower's disk full: %v (the follower's status was %v, free %v)", i, err, fm["deadbolt_disk_status"], fm["deadbolt_disk_free_bytes"])
			}
		}
		// The status follows an append at once; the free space is read
		// every 100 ms, so it may lag the fill by one reading.
		fm = scrape(t, c.Nodes[f].HTTPAddr())
		return fm["deadbolt_disk_status"] == 2 && fm["deadbolt_disk_free_bytes"] <= segSize
	})
	t.Logf("follower without a reserve: status %v after %d SETs of 32 KiB, free %v", fm["deadbolt_disk_status"], i, fm["deadbolt_disk_free_bytes"])
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the follower's disk status 0 once space returned", func() bool {
		return scrape(t, c.Nodes[f].HTTPAddr())["deadbolt_disk_status"] == 0
	})
}
