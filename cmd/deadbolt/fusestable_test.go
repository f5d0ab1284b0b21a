//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/faultfs"
)

// Real I/O errors in raft's stable store (issue 18): the file that holds
// the current term and the vote (data/log/stable) is on a FUSE loopback
// that fails its fdatasync, or its write, with a kernel EIO. hashicorp/raft
// panics when it cannot save its term; the node must instead stop, and the
// process exit 1 with a message naming the file, as for a failed segment.

// wantStableExit waits for p to exit with status 1 and a message naming
// the stable file, op and EIO, with no panic in its output.
func wantStableExit(t *testing.T, p *proc, fsys *faultfs.FS, op string) {
	t.Helper()
	wantEIOExitNaming(t, p, fsys, op, "stable")
}

// A three-node cluster; a follower's stable file starts failing, and the
// leader is killed: the election that follows makes the follower save a
// new term (as a candidate, or when a candidate asks for its vote), which
// fails. It exits 1 naming the stable file; the killed leader restarts,
// the failed node restarts on a working disk and catches up, and every
// acknowledged write reads back on every node. A one-voter node whose
// stable file fails exits 1 at its next start (raft saves the term it
// read as it starts), and starts again once the disk works.
func TestProcessFUSEStableFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildBinary(t)
	for _, op := range []string{"fdatasync", "write"} {
		fault := func(f *faultfs.FS) { f.FailSync("stable") }
		if op == "write" {
			fault = func(f *faultfs.FS) { f.FailWrite("stable") }
		}
		t.Run("election/"+op, func(t *testing.T) { fuseStableElection(t, bin, op, fault) })
		t.Run("start/"+op, func(t *testing.T) { fuseStableStart(t, bin, op, fault) })
	}
}

func fuseStableElection(t *testing.T, bin, op string, fault func(*faultfs.FS)) {
	// Each node's clock can be moved (-clock-offset-file): the leader's is
	// set an hour back before the fault, which stops its clock ticks.
	procs, mounts, peers, waitLeader := fuseCluster(t, bin, "s", func(p *proc) {
		p.extra = append(p.extra, "--clock-offset-file", clockFile(p))
	})
	ctx := context.Background()
	leader := waitLeader()
	lc := redis.NewClient(&redis.Options{Addr: procs[leader].addr, MaxRetries: -1, ReadTimeout: 5 * time.Second})
	var acked []string
	for i := range 30 {
		k := fmt.Sprint("k", i)
		if err := lc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, k)
	}
	lc.Close()

	v := (leader + 1) % len(procs)
	// The follower's synced mark (also in the stable file) is raised about
	// a second after its last append: once it is there, the election's
	// term save is the next write of the file, the one that fails, if
	// nothing more is appended. An idle leader proposes a clock tick when
	// its clock has moved 250 ms past its last proposal: with its clock an
	// hour back, it proposes none (and nothing else is written).
	stopTicks(t, procs[leader])
	waitMarkAtEnd(t, procs[v], procs[leader])
	t.Logf("every %s of %s's stable file fails; %s (the leader) is killed", op, procs[v].id, procs[leader].id)
	fault(mounts[v])
	procs[leader].kill()
	wantStableExit(t, procs[v], mounts[v], op)
	// The term's save failed, the one raft panics on without the cluster's
	// stableGuard (not the synced mark's, which stops the node whatever
	// the guard does).
	if log := readLog(procs[v]); !strings.Contains(log, "(saving CurrentTerm;") {
		t.Fatalf("%s: the failed save is not the current term's; log:\n%s", procs[v].id, log)
	}

	// The killed leader and then the failed node, on a working disk.
	mounts[v].Clear()
	procs[leader].start(t, bin, peers)
	procs[v].start(t, bin, peers)
	waitLeader()
	for _, p := range procs {
		waitServing(t, p)
	}
	// Reads on a node wait for it to have applied what the leader
	// committed: the restarted nodes caught up when they answer them all.
	for _, p := range procs {
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
		for _, k := range acked {
			if got, err := c.Get(ctx, k).Result(); err != nil || got != k {
				c.Close()
				t.Fatalf("%s: acknowledged %s reads %q, %v", p.id, k, got, err)
			}
		}
		c.Close()
	}
	t.Logf("%d acknowledged writes read back on every node, %s included after its restart", len(acked), procs[v].id)
}

func fuseStableStart(t *testing.T, bin, op string, fault func(*faultfs.FS)) {
	p, fsys := fuseProc(t, "n1")
	peers, c := oneVoterWith20Keys(t, bin, p)
	p.kill()
	fault(fsys)
	p.start(t, bin, peers)
	wantStableExit(t, p, fsys, op)

	fsys.Clear()
	p.start(t, bin, peers)
	wantThe20Keys(t, p, c)
}

func clockFile(p *proc) string { return filepath.Join(p.dir, "clock-offset") }

// stopTicks sets p's clock an hour back and waits for p to have read it
// (its log says so): from then on p, as leader, proposes no clock tick
// for an hour.
func stopTicks(t *testing.T, p *proc) {
	t.Helper()
	if err := os.WriteFile(clockFile(p), []byte("-3600000"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(readLog(p), "clock offset changed") {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not read its clock offset in 20 s", p.id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitMarkAtEnd waits until p's synced mark (INFO raft) has reached its
// last log index, and that index is the leader's last: no set of the mark
// is due until the log grows again.
func waitMarkAtEnd(t *testing.T, p, leader *proc) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	lc := redis.NewClient(&redis.Options{Addr: leader.addr, MaxRetries: -1})
	defer lc.Close()
	deadline := time.Now().Add(20 * time.Second)
	var info string
	for {
		var err error
		info, err = c.Info(context.Background(), "raft").Result()
		if err == nil {
			mark, last := infoUint(info, "raft_synced_mark"), infoUint(info, "raft_last_index")
			var linfo string
			linfo, err = lc.Info(context.Background(), "raft").Result()
			if err == nil && last > 0 && mark >= last && infoUint(linfo, "raft_last_index") == last {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the synced mark did not reach the last index in 20 s: %v\n%s", p.id, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func infoUint(info, field string) uint64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}
