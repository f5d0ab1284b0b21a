package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestProcessOlderFollowerInstallsSnapshot: in a cluster that mixes
// builds, an older follower that falls behind the leader's compacted log
// catches up by installing the newer leader's snapshot, which with
// --preserve-downgrade it can read (without the flag the snapshot holds
// lock shapes, version 3, and the older build refuses it every time).
func TestProcessOlderFollowerInstallsSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	oldBin := buildOld(t)
	newBin := buildBinary(t)
	procs, peers := threeProcs(t, "s")
	older := procs[2]
	for _, p := range procs {
		if p == older {
			p.start(t, oldBin, peers)
		} else {
			p.extra = []string{"--preserve-downgrade"}
			p.start(t, newBin, peers)
		}
	}
	for _, p := range procs {
		waitServing(t, p)
	}
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: procs[0].addr, MaxRetries: -1, ReadTimeout: 20 * time.Second})
	defer c.Close()
	if ok, err := c.SetNX(ctx, "lock:kept", "keeper", time.Hour).Result(); err != nil || !ok {
		t.Fatalf("SET lock:kept NX: %v %v", ok, err)
	}
	stopGracefully(t, older)
	// The log is compacted a segment file (16 MB) at a time, and raft
	// keeps 10240 entries after a snapshot: so 20 MB of big values (in
	// few entries), then more single entries than raft keeps (a lone
	// command is an entry of its own), then a snapshot on each newer
	// node. Their logs then no longer reach back to where the older
	// follower stopped.
	big := strings.Repeat("x", 4<<10)
	for b := 0; b < 5000; b += 50 {
		for try := 0; ; try++ {
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := b; i < b+50; i++ {
					p.Set(ctx, fmt.Sprintf("big%d", i), big, 0)
				}
				return nil
			})
			if err == nil {
				break
			}
			if try == 20 {
				t.Fatalf("writes: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	const n = 10400
	start := time.Now()
	for i := range n {
		// Again on an error: a SET of the same value may take effect twice.
		for try := 0; ; try++ {
			err := c.Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err()
			if err == nil {
				break
			}
			if try == 20 {
				t.Fatalf("SET k%d: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("%d writes in %v", n, time.Since(start).Round(time.Millisecond))
	for _, p := range procs[:2] {
		pc := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 20 * time.Second})
		raftSnapshot(t, pc, p.id)
		pc.Close()
	}
	older.start(t, oldBin, peers)
	// Reads through a follower reach the leader, so what shows the
	// follower's own state is what it learned from the log: the leader's
	// client address (a __node entry the snapshot holds), which INFO
	// names once it has applied it.
	oc := redis.NewClient(&redis.Options{Addr: older.addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond, ReadTimeout: 5 * time.Second})
	defer oc.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := oc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) || exited(older) {
			t.Fatalf("the older follower has not caught up within 60 s: %v\n%s", err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopGracefully(t, older)
	snaps, _ := filepath.Glob(filepath.Join(older.dir, "data", "snapshots", "*", "meta.json"))
	if len(snaps) == 0 {
		t.Fatal("the older follower caught up without a snapshot")
	}
	t.Logf("the older follower installed a snapshot: %v", snaps)
	// And it starts again on it, with everything.
	older.start(t, oldBin, peers)
	waitServing(t, older)
	for _, k := range []string{"lock:kept", fmt.Sprintf("k%d", n-1), "big4999"} {
		if v, err := oc.Get(ctx, k).Result(); err != nil || v == "" {
			t.Fatalf("%s through the older follower: %v", k, err)
		}
	}
}
