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

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/tmpfs"
)

// Disk full, with real file systems that fill: each node's data directory
// is on a tmpfs of its own, and a ballast file takes the free space.

// diskFullCluster starts n nodes, each with its data directory on an
// 8 MiB tmpfs, and returns the cluster and the mount points.
func diskFullCluster(t *testing.T, n int, minFree int64, segSize int64) (*Cluster, []string) {
	t.Helper()
	mounts := make([]string, n)
	for i := range mounts {
		mounts[i] = tmpfs.Mount(t, 8<<20)
	}
	c := RunClusterT(t, n, func(i int, cfg *Config) {
		cfg.DataDir = filepath.Join(mounts[i], "data")
		cfg.MinFreeDisk = minFree
		cfg.segmentSize = segSize
	})
	return c, mounts
}

// infoField returns a field of INFO section on addr.
func infoField(t *testing.T, addr, section, field string) string {
	t.Helper()
	info, err := client(t, addr).Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s on %s: %v", section, addr, err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestDiskFullAllMembers fills the file systems of all three members at
// once (they write the same log at the same pace, so one disk that fills
// means all do): below --min-free-disk writes get MISCONF naming the data
// directory, while locks stay readable on every node, PUBLISH reaches
// subscribers and discovery answers; once space returns writes are taken
// again, and every acknowledged write is there.
func TestDiskFullAllMembers(t *testing.T) {
	const minFree = 2 << 20
	c, mounts := diskFullCluster(t, 3, minFree, 512<<10)
	ctx := context.Background()
	l := c.WaitLeader()
	f := c.Followers()
	lc := client(t, c.Addr(l))
	if ok, err := lc.SetNX(ctx, "lock:a", "owner-1", time.Hour).Result(); err != nil || !ok {
		t.Fatalf("take lock:a: %v %v", ok, err)
	}
	acked := map[string]string{"lock:a": "owner-1"}
	subNode := f[0]
	sub := client(t, c.Addr(subNode)).Subscribe(ctx, "events")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	ballast := make([]string, len(mounts))
	for i, m := range mounts {
		ballast[i] = tmpfs.Fill(t, m, 1<<20)
	}
	waitFor(t, 5*time.Second, "every node to see its disk low", func() bool {
		for i := range c.Nodes {
			if infoField(t, c.Addr(i), "persistence", "disk_status") != "low" {
				return false
			}
		}
		return true
	})
	// A leader that found its disk low before the others' may have handed
	// over to one of them; with all of them low it stays where it is.
	l = c.WaitLeader()
	lc = client(t, c.Addr(l))
	f = c.Followers()
	for i := range c.Nodes {
		err := client(t, c.Addr(i)).Set(ctx, fmt.Sprintf("refused-%d", i), "x", 0).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "MISCONF") || !strings.Contains(err.Error(), c.cfgs[l].DataDir) {
			t.Fatalf("SET through node %d on full disks: %v, want MISCONF naming %s", i, err, c.cfgs[l].DataDir)
		}
	}
	// A lock is neither taken nor released.
	if err := lc.Del(ctx, "lock:a").Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
		t.Fatalf("DEL on full disks: %v", err)
	}
	// Nor through a transaction (a proposed transaction has no Args of its
	// own: the chaos run's disk-full-all found MULTI SET EXEC taken), with
	// or without WATCH, through the leader and a follower. A transaction
	// that only publishes passes, as PUBLISH does. (Through the leader the
	// write gets MISCONF when queued and EXEC answers EXECABORT, as in
	// Redis; through a follower EXEC's EXECABORT names the MISCONF:
	// TestDiskFullTransactionsLikeRedis.)
	refusedTx := func(err error) bool {
		return err != nil && (strings.Contains(err.Error(), "MISCONF") || strings.HasPrefix(err.Error(), "EXECABORT"))
	}
	for _, i := range []int{l, f[0]} {
		cl := client(t, c.Addr(i))
		_, err := cl.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, "tx-refused", "x", 0); return nil })
		if !refusedTx(err) {
			t.Fatalf("MULTI SET EXEC through node %d on full disks: %v, want MISCONF or EXECABORT", i, err)
		}
		err = cl.Watch(ctx, func(tx *redis.Tx) error {
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Del(ctx, "lock:a"); return nil })
			return err
		}, "lock:a")
		if !refusedTx(err) {
			t.Fatalf("WATCH MULTI DEL EXEC through node %d on full disks: %v, want MISCONF or EXECABORT", i, err)
		}
		if _, err := cl.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Publish(ctx, "nobody", "x"); return nil }); err != nil {
			t.Fatalf("MULTI PUBLISH EXEC through node %d on full disks: %v", i, err)
		}
		if n, err := cl.Exists(ctx, "tx-refused").Result(); err != nil || n != 0 {
			t.Fatalf("tx-refused through node %d: exists %d, %v", i, n, err)
		}
	}
	for i := range c.Nodes {
		cl := client(t, c.Addr(i))
		if v, err := cl.Get(ctx, "lock:a").Result(); err != nil || v != "owner-1" {
			t.Fatalf("GET lock:a on node %d with full disks = %q, %v", i, v, err)
		}
		if ttl, err := cl.PTTL(ctx, "lock:a").Result(); err != nil || ttl <= 0 {
			t.Fatalf("PTTL lock:a on node %d = %v, %v", i, ttl, err)
		}
		if role, err := cl.Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 {
			t.Fatalf("ROLE on node %d = %v, %v", i, role, err)
		}
		if r := infoField(t, c.Addr(i), "replication", "role"); r != "master" && r != "slave" {
			t.Fatalf("INFO replication on node %d: role %q", i, r)
		}
		if v := infoField(t, c.Addr(i), "persistence", "disk_writes_refused"); v != "1" {
			t.Fatalf("INFO persistence on node %d: disk_writes_refused:%s", i, v)
		}
	}
	// The threshold leaves room for the log's housekeeping: a snapshot
	// (and the compaction after it) still works on every node.
	for i := range c.Nodes {
		if err := c.Nodes[i].raft.Snapshot(); err != nil {
			t.Fatalf("snapshot on node %d below the threshold: %v", i, err)
		}
	}
	if n, err := client(t, c.Addr(subNode)).Publish(ctx, "events", "still here").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH with full disks = %d, %v", n, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	msg, err := sub.ReceiveMessage(rctx)
	cancel()
	if err != nil || msg.Payload != "still here" {
		t.Fatalf("subscriber with full disks: %v, %v", msg, err)
	}

	for _, b := range ballast {
		if err := os.Remove(b); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	waitFor(t, 10*time.Second, "writes to be taken again", func() bool {
		return client(t, c.Addr(f[0])).Set(ctx, "after", "1", 0).Err() == nil
	})
	t.Logf("writes taken again %v after space returned", time.Since(start).Round(time.Millisecond))
	acked["after"] = "1"
	for i := range 50 {
		k := fmt.Sprintf("k%d", i)
		if err := client(t, c.Addr(i%3)).Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s after space returned: %v", k, err)
		}
		acked[k] = "v"
	}
	for i := range c.Nodes {
		cl := client(t, c.Addr(i))
		for k, want := range acked {
			if v, err := cl.Get(ctx, k).Result(); err != nil || v != want {
				t.Fatalf("GET %s on node %d = %q, %v; want %q", k, i, v, err, want)
			}
		}
		if n, _ := cl.Exists(ctx, "refused-0", "refused-1", "refused-2").Result(); n != 0 {
			t.Fatalf("node %d holds %d refused writes", i, n)
		}
	}
}

// TestDiskFullFollowers fills only the followers' file systems (below
// --min-free-disk): the leader has room, but no quorum has, so the leader
// refuses writes with MISCONF, through itself and through a follower,
// before proposing them (without that they were taken, and on disks that
// are really full they waited for a commit that could not come and ended
// "outcome unknown"); reads answer; once space returns writes are taken
// again and every acknowledged one is on every node.
func TestDiskFullFollowers(t *testing.T) {
	const minFree = 2 << 20
	c, mounts := diskFullCluster(t, 3, minFree, 512<<10)
	ctx := context.Background()
	l := c.WaitLeader()
	f := c.Followers()
	if err := client(t, c.Addr(l)).Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{"before": "1"}
	var ballast []string
	for _, i := range f {
		ballast = append(ballast, tmpfs.Fill(t, mounts[i], 1<<20))
	}
	var last error
	waitFor(t, 10*time.Second, "the leader to refuse writes", func() bool {
		last = client(t, c.Addr(l)).Set(ctx, "refused", "x", 0).Err()
		if last == nil {
			acked["refused"] = "x"
		}
		return last != nil && strings.HasPrefix(last.Error(), "MISCONF") && strings.Contains(last.Error(), "too few members have disk space")
	})
	t.Logf("refused: %v", last)
	if c.Leader() != l {
		t.Fatalf("leadership moved from %d", l)
	}
	for _, i := range []int{l, f[0]} {
		err := client(t, c.Addr(i)).Set(ctx, "refused-too", "x", 0).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
			t.Fatalf("SET through node %d with the followers' disks short: %v, want MISCONF", i, err)
		}
		if v, err := client(t, c.Addr(i)).Get(ctx, "before").Result(); err != nil || v != "1" {
			t.Fatalf("GET through node %d: %q %v", i, v, err)
		}
		// A script that only reads runs, as Redis runs it under MISCONF;
		// one that writes gets the refusal from its redis.call
		// (diskfull_script_test.go has the rest).
		if v, err := client(t, c.Addr(i)).Eval(ctx, "return redis.call('get', KEYS[1])", []string{"before"}).Result(); err != nil || v != "1" {
			t.Fatalf("a read-only EVAL through node %d: %v %v", i, v, err)
		}
		err = client(t, c.Addr(i)).Eval(ctx, "return redis.call('set', KEYS[1], 'x')", []string{"refused-too"}).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "MISCONF") || !strings.Contains(err.Error(), "too few members") || !strings.Contains(err.Error(), "@user_script:1") {
			t.Fatalf("a writing EVAL through node %d with the followers' disks short: %v", i, err)
		}
	}
	if v := infoField(t, c.Addr(l), "persistence", "disk_writes_refused"); v != "1" {
		t.Fatalf("INFO persistence on the leader: disk_writes_refused:%s", v)
	}
	for _, b := range ballast {
		if err := os.Remove(b); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	waitFor(t, 10*time.Second, "writes to be taken again", func() bool {
		return client(t, c.Addr(f[0])).Set(ctx, "after", "1", 0).Err() == nil
	})
	t.Logf("writes taken again %v after space returned", time.Since(start).Round(time.Millisecond))
	acked["after"] = "1"
	for i := range c.Nodes {
		cl := client(t, c.Addr(i))
		for k, want := range acked {
			waitFor(t, 5*time.Second, "an acknowledged write on every node", func() bool {
				v, err := cl.Get(ctx, k).Result()
				return err == nil && v == want
			})
		}
		if n, err := cl.Exists(ctx, "refused-too").Result(); err != nil || n != 0 {
			t.Fatalf("a refused write on node %d: exists %d, %v", i, n, err)
		}
	}
}

// TestDiskFullSingleNode fills the disk of a one-voter node completely
// (no threshold: the log's appends themselves fail with ENOSPC). The node
// does not die: every write gets OK or MISCONF, none a closed connection;
// reads go on; writes resume when space returns; and after a restart
// every acknowledged write is there.
func TestDiskFullSingleNode(t *testing.T) {
	c, mounts := diskFullCluster(t, 1, -1, 256<<10)
	ctx := context.Background()
	cl := client(t, c.Addr(0))
	if err := cl.Set(ctx, "lock:a", "owner-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{"lock:a": "owner-1"}
	ballast := tmpfs.Fill(t, mounts[0], 0)
	val := strings.Repeat("v", 4096)
	refused := 0
	for i := range 800 {
		k := fmt.Sprintf("k%d", i)
		err := cl.Set(ctx, k, val, 0).Err()
		switch {
		case err == nil:
			acked[k] = val
		case strings.HasPrefix(err.Error(), "MISCONF") && strings.Contains(err.Error(), c.cfgs[0].DataDir):
			refused++
		default:
			t.Fatalf("SET %s on a full disk: %v (want OK or MISCONF naming the data directory)", k, err)
		}
	}
	t.Logf("full disk: %d writes acknowledged, %d refused with MISCONF", len(acked)-1, refused)
	if refused == 0 {
		t.Fatal("no write was refused: the disk never filled")
	}
	if v := infoField(t, c.Addr(0), "persistence", "disk_status"); v != "full" {
		t.Fatalf("INFO persistence disk_status:%s, want full", v)
	}
	waitFor(t, 10*time.Second, "reads on a full disk", func() bool {
		v, err := cl.Get(ctx, "lock:a").Result()
		return err == nil && v == "owner-1"
	})
	// A snapshot cannot be written either; the node goes on.
	if err := c.Nodes[0].raft.Snapshot(); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("snapshot on a full disk: %v, want a failure for want of space", err)
	}
	if v, err := cl.Get(ctx, "lock:a").Result(); err != nil || v != "owner-1" {
		t.Fatalf("GET after a failed snapshot = %q, %v", v, err)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, 10*time.Second, "writes to be taken again", func() bool {
		return cl.Set(ctx, "after", "1", 0).Err() == nil
	})
	t.Logf("writes taken again %v after space returned", time.Since(start).Round(time.Millisecond))
	acked["after"] = "1"
	if err := c.Nodes[0].raft.Snapshot(); err != nil {
		t.Fatalf("snapshot once space returned: %v", err)
	}

	c.Restart(0)
	c.WaitLeader()
	cl = client(t, c.Addr(0))
	for k, want := range acked {
		if v, err := cl.Get(ctx, k).Result(); err != nil || v != want {
			t.Fatalf("after restart GET %s = %d bytes, %v", k, len(v), err)
		}
	}
	if v := infoField(t, c.Addr(0), "persistence", "disk_status"); v != "ok" {
		t.Fatalf("INFO persistence disk_status:%s after space returned, want ok", v)
	}
}

// waitFor waits until cond holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDiskFullLeaderOnly fills only the leader's disk. With the threshold
// the leader refuses writes and hands leadership to a member with space;
// without it (and with no reserve segment left) the leader's append fails
// with ENOSPC, that write gets MISCONF, and raft makes it step down. Either
// way writes go on through every node, each answered OK or MISCONF, the
// full node keeps serving reads, and every acknowledged write is on every
// node once space returns.
func TestDiskFullLeaderOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		minFree int64
	}{{"threshold", 2 << 20}, {"enospc", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			c, mounts := diskFullCluster(t, 3, tc.minFree, 512<<10)
			ctx := context.Background()
			l := c.WaitLeader()
			dir := c.cfgs[l].DataDir
			if tc.minFree < 0 {
				// A node started on a nearly full disk has no reserve
				// segment: wait for it to be made, then take it away.
				reserve := filepath.Join(dir, "log", "reserve")
				waitFor(t, 10*time.Second, "the reserve segment", func() bool {
					st, err := os.Stat(reserve)
					return err == nil && st.Size() == 512<<10
				})
				if err := os.Remove(reserve); err != nil {
					t.Fatal(err)
				}
			}
			ballast := tmpfs.Fill(t, mounts[l], 0)
			cl := client(t, c.Addr(l))
			val := strings.Repeat("v", 4096)
			acked := map[string]bool{}
			refused := 0
			for i := 0; i < 1000 && len(acked) < 400; i++ {
				k := fmt.Sprintf("k%d", i)
				err := cl.Set(ctx, k, val, 0).Err()
				switch {
				case err == nil:
					acked[k] = true
				case strings.HasPrefix(err.Error(), "MISCONF") && strings.Contains(err.Error(), dir):
					refused++
					time.Sleep(10 * time.Millisecond)
				default:
					t.Fatalf("SET %s with the leader's disk full: %v (want OK or MISCONF naming %s)", k, err, dir)
				}
			}
			t.Logf("leader's disk full: %d writes acknowledged, %d refused with MISCONF", len(acked), refused)
			if len(acked) < 400 {
				t.Fatalf("only %d writes acknowledged: leadership did not move to a member with space", len(acked))
			}
			if nl := c.Leader(); nl == l {
				t.Fatalf("node %d still leads with a full disk", l)
			}
			if v := infoField(t, c.Addr(l), "persistence", "disk_status"); v == "ok" {
				t.Fatalf("INFO persistence on the full node: disk_status:%s", v)
			}
			if err := os.Remove(ballast); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the full node to catch up", func() bool {
				for k := range acked {
					if n, err := client(t, c.Addr(l)).Exists(ctx, k).Result(); err != nil || n != 1 {
						return false
					}
				}
				return true
			})
			for i := range c.Nodes {
				for k := range acked {
					if v, err := client(t, c.Addr(i)).Get(ctx, k).Result(); err != nil || v != val {
						t.Fatalf("GET %s on node %d: %d bytes, %v", k, i, len(v), err)
					}
				}
			}
		})
	}
}
