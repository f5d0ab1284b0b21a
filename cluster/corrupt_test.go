package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/resp"
)

// diskCluster is a test cluster with data directories whose nodes can be
// stopped, have their files damaged, and be started again.
type diskCluster struct {
	*testCluster
	cfgs []Config
}

func startDiskCluster(t *testing.T, n int, edit func(i int, cfg *Config)) *diskCluster {
	t.Helper()
	dc := &diskCluster{}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	dc.testCluster = startTestClusterWith(t, n, func(i int, cfg *Config) {
		cfg.DataDir = dirs[i]
		cfg.SnapshotInterval = time.Hour // snapshots only when a test asks
		cfg.SnapshotThreshold = 1 << 30
		if edit != nil {
			edit(i, cfg)
		}
		dc.cfgs = append(dc.cfgs, *cfg)
	})
	for i, node := range dc.nodes {
		dc.cfgs[i].RaftAddr = node.RaftAddr() // a restart comes back there
	}
	return dc
}

func (dc *diskCluster) dir(i int) string { return dc.cfgs[i].DataDir }

func (dc *diskCluster) logDir(i int) string { return filepath.Join(dc.dir(i), raftlogDir) }

// stop closes node i (its stores are closed cleanly).
func (dc *diskCluster) stop(i int) {
	dc.nodes[i].Close()
}

// start starts node i again from its data directory.
func (dc *diskCluster) start(i int) (*Node, error) {
	cfg := dc.cfgs[i]
	var (
		n   *Node
		err error
	)
	for try := 0; try < 50; try++ {
		if n, err = NewNode(cfg); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	dc.tb.Cleanup(func() { n.Close() })
	dc.nodes[i] = n
	return n, nil
}

// write sets count keys prefix0.. through the leader and returns the index
// of the last one's entry.
func (dc *diskCluster) write(t *testing.T, prefix string, count, size int) uint64 {
	t.Helper()
	var last uint64
	for k := 0; k < count; k++ {
		li := dc.leader(-1)
		res, err := dc.nodes[li].Apply(context.Background(), cmd("SET", fmt.Sprint(prefix, k), strings.Repeat("v", size)))
		if err != nil {
			t.Fatalf("SET %s%d: %v", prefix, k, err)
		}
		last = res.LogIndex
	}
	return last
}

// get reads key from node i's own state machine.
func get(n *Node, key string) (string, bool) {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	res := n.state.Read(n.state.Now(), cmd("GET", key))
	if res.Reply.Type == resp.Nil {
		return "", false
	}
	return res.Reply.String(), true
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(segs)
	return segs
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if off < 0 {
		st, _ := f.Stat()
		off += st.Size()
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// lastRecordEnd is where the records of a segment end, found by decoding
// them as opening does (raftlog.SegmentEndForTest), not by what follows
// them: stale bytes after the last record do not move it.
func lastRecordEnd(t *testing.T, path string) int64 {
	t.Helper()
	end, n, err := raftlog.SegmentEndForTest(path)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("%s holds no record", path)
	}
	return end
}

// snapshotDirs lists node i's snapshots, oldest first.
func (dc *diskCluster) snapshotDirs(t *testing.T, i int) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dc.dir(i), "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	type snap struct {
		dir         string
		term, index uint64
	}
	var out []snap
	for _, e := range ents {
		var term, index, ms uint64
		if _, err := fmt.Sscanf(e.Name(), "%d-%d-%d", &term, &index, &ms); err == nil && e.IsDir() {
			out = append(out, snap{filepath.Join(dc.dir(i), "snapshots", e.Name()), term, index})
		}
	}
	slices.SortFunc(out, func(a, b snap) int {
		if a.term != b.term {
			return cmpU(a.term, b.term)
		}
		return cmpU(a.index, b.index)
	})
	var dirs []string
	for _, s := range out {
		dirs = append(dirs, s.dir)
	}
	return dirs
}

// The damage a node finds at start-up when a file of its data directory
// was changed while it was down: it either refuses to start, naming the
// file and the repair, or repairs itself and ends with the others' state.
func TestDamagedFilesOnRestart(t *testing.T) {
	type outcome struct {
		refuse string // a start error naming this (a path under the data dir); "" = start and converge
		target error  // the start error wraps it, if set
		moved  int    // snapshots moved aside
		caught bool   // the log lost synced entries: cut, and caught up
	}
	for _, tc := range []struct {
		name  string
		snaps int    // snapshots each node takes along the way
		trail uint64 // TrailingLogs
		// damage changes node f's files; it returns what the outcome must name.
		damage func(t *testing.T, dc *diskCluster, f int) outcome
	}{
		{"stable truncated", 0, 0, func(t *testing.T, dc *diskCluster, f int) outcome {
			p := filepath.Join(dc.logDir(f), "stable")
			os.Truncate(p, 3000)
			return outcome{refuse: p, target: raftlog.ErrCorrupt}
		}},
		{"stable emptied", 0, 0, func(t *testing.T, dc *diskCluster, f int) outcome {
			p := filepath.Join(dc.logDir(f), "stable")
			os.Truncate(p, 0)
			return outcome{refuse: p} // deadbolt.id shows the directory held state
		}},
		{"stable removed", 0, 0, func(t *testing.T, dc *diskCluster, f int) outcome {
			p := filepath.Join(dc.logDir(f), "stable")
			os.Remove(p)
			return outcome{refuse: p}
		}},
		{"last segment truncated", 0, 0, func(t *testing.T, dc *diskCluster, f int) outcome {
			segs := segments(t, dc.logDir(f))
			p := segs[len(segs)-1]
			os.Truncate(p, lastRecordEnd(t, p)-7)
			return outcome{caught: true}
		}},
		{"last record flipped", 0, 0, func(t *testing.T, dc *diskCluster, f int) outcome {
			segs := segments(t, dc.logDir(f))
			p := segs[len(segs)-1]
			flipByte(t, p, lastRecordEnd(t, p)-3)
			return outcome{caught: true}
		}},
		{"last segment removed", 0, 0, func(t *testing.T, dc *diskCluster, f int) outcome {
			segs := segments(t, dc.logDir(f))
			os.Remove(segs[len(segs)-1])
			return outcome{caught: true}
		}},
		{"earlier segment flipped", 0, 0, func(t *testing.T, dc *diskCluster, f int) outcome {
			segs := segments(t, dc.logDir(f))
			flipByte(t, segs[0], 100)
			return outcome{refuse: segs[0], target: raftlog.ErrCorrupt}
		}},
		{"meta flipped", 1, 10, func(t *testing.T, dc *diskCluster, f int) outcome {
			p := filepath.Join(dc.logDir(f), "meta")
			flipByte(t, p, 2)
			return outcome{refuse: p, target: raftlog.ErrCorrupt}
		}},
		{"newest snapshot's state flipped, log reaches the older", 2, 100000, func(t *testing.T, dc *diskCluster, f int) outcome {
			s := dc.snapshotDirs(t, f)
			flipByte(t, filepath.Join(s[len(s)-1], "state.bin"), 20)
			return outcome{moved: 1}
		}},
		{"newest snapshot's meta index changed, log reaches the older", 2, 100000, func(t *testing.T, dc *diskCluster, f int) outcome {
			s := dc.snapshotDirs(t, f)
			p := filepath.Join(s[len(s)-1], "meta.json")
			b, _ := os.ReadFile(p)
			var m map[string]any
			json.Unmarshal(b, &m)
			m["Index"] = m["Index"].(float64) + 5 // still valid JSON: raft would trust it
			b, _ = json.Marshal(m)
			os.WriteFile(p, b, 0o644)
			return outcome{moved: 1}
		}},
		{"newest snapshot's state truncated, log compacted past the older", 2, 10, func(t *testing.T, dc *diskCluster, f int) outcome {
			s := dc.snapshotDirs(t, f)
			p := filepath.Join(s[len(s)-1], "state.bin")
			os.Truncate(p, 10)
			return outcome{refuse: p}
		}},
		{"newest snapshot's meta.json emptied, log compacted past the older", 2, 10, func(t *testing.T, dc *diskCluster, f int) outcome {
			s := dc.snapshotDirs(t, f)
			p := filepath.Join(s[len(s)-1], "meta.json")
			os.Truncate(p, 0)
			return outcome{refuse: p}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := startDiskCluster(t, 3, func(i int, cfg *Config) {
				cfg.SegmentSize = 32 << 10
				if tc.trail > 0 {
					cfg.TrailingLogs = tc.trail
				}
			})
			dc.write(t, "a", 40, 1000) // two segments at least
			for s := 0; s < tc.snaps; s++ {
				for _, n := range dc.nodes {
					if err := n.Snapshot(); err != nil {
						t.Fatalf("snapshot: %v", err)
					}
				}
				dc.write(t, fmt.Sprint("s", s), 20, 1000)
			}
			li := dc.leader(-1)
			f := (li + 1) % 3
			dc.converged()
			dc.stop(f)
			dc.write(t, "b", 5, 100) // the others go on without it
			want := tc.damage(t, dc, f)
			var logged syncBuffer
			dc.cfgs[f].Logger = slog.New(slog.NewTextHandler(&logged, nil))
			n, err := dc.start(f)
			if want.refuse != "" {
				if err == nil {
					t.Fatalf("started with the damage (applied %d), want an error naming %s", n.AppliedIndex(), want.refuse)
				}
				t.Logf("refused: %v", err)
				if !strings.Contains(err.Error(), want.refuse) || !strings.Contains(err.Error(), "RAFT REMOVE "+dc.ids[f]) {
					t.Fatalf("start: %v\nwant it to name %s and the repair", err, want.refuse)
				}
				if want.target != nil && !errors.Is(err, want.target) {
					t.Fatalf("start: %v, want %v", err, want.target)
				}
				// Refused again: the failed start wrote nothing over it.
				if _, err2 := dc.start(f); err2 == nil {
					t.Fatal("a second start succeeded")
				}
				return
			}
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if (n.catchUp != nil) != want.caught {
				t.Fatalf("catching up: %v, want %v", n.catchUp != nil, want.caught)
			}
			dc.write(t, "c", 3, 10)
			dc.converged()
			if want.caught && n.catchUp.active() {
				t.Fatal("converged, but still catching up")
			}
			if v, ok := get(n, "b4"); !ok || v != "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv" {
				t.Fatalf("b4 on the repaired node: %q %v", v, ok)
			}
			if moved, _ := os.ReadDir(filepath.Join(dc.dir(f), damagedSnapDir)); len(moved) != want.moved {
				t.Fatalf("%d snapshots moved aside, want %d", len(moved), want.moved)
			}
			// The node's own log says so (raft's is discarded by the binary).
			if got := strings.Count(logged.String(), "a damaged snapshot was moved aside"); got != want.moved {
				t.Fatalf("the node's log tells of %d snapshots moved aside, want %d:\n%s", got, want.moved, logged.String())
			}
		})
	}
}

// Two of three nodes lose the end of their logs while down, below what
// the cluster acknowledged. To raft that is a log that never received the
// entries: the two would elect one of themselves and the acknowledged
// writes would be gone. With the synced mark they refuse to start, and the
// cluster serves nothing rather than lose them; without it (a test that
// clears the mark, as a crash before it was raised would) they lose them.
func TestMajorityLostLogSuffix(t *testing.T) {
	for _, clearMark := range []bool{false, true} {
		t.Run(fmt.Sprintf("mark cleared=%v", clearMark), func(t *testing.T) {
			dc := startDiskCluster(t, 3, func(i int, cfg *Config) { cfg.SegmentSize = 32 << 10 })
			dc.write(t, "early", 10, 100)
			lateIdx := dc.write(t, "late", 12, 8000) // several segments
			li := dc.leader(-1)
			dc.converged()
			for i := range dc.nodes {
				dc.stop(i)
			}
			var damaged []int
			for i := range dc.nodes {
				if i != li {
					damaged = append(damaged, i)
				}
			}
			for _, i := range damaged {
				if clearMark {
					unmarkNode(t, dc.logDir(i))
				}
				// Every segment from the one holding late11's entry on.
				segs := segments(t, dc.logDir(i))
				for j := len(segs) - 1; j >= 0; j-- {
					base, _ := strconv.ParseUint(strings.TrimSuffix(filepath.Base(segs[j]), ".seg"), 10, 64)
					os.Remove(segs[j])
					if base <= lateIdx {
						break
					}
				}
			}
			var started []*Node
			for _, i := range damaged {
				n, err := dc.start(i)
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				if (n.catchUp != nil) == clearMark {
					t.Fatalf("catching up: %v, with the mark cleared: %v", n.catchUp != nil, clearMark)
				}
				started = append(started, n)
			}
			if !clearMark {
				// The two know they lost entries: neither votes for the
				// other, so no leader for several election timeouts, and
				// nothing is served.
				for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
					for _, n := range started {
						if n.IsLeader() || n.raft.State() == raft.Leader {
							t.Fatalf("%s leads with a log that lost acknowledged entries", n.ID())
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
				// The node that has them comes back: it is elected, the
				// two catch up, and every acknowledged write is there.
				if _, err := dc.start(li); err != nil {
					t.Fatal(err)
				}
				if got := dc.leader(-1); got != li {
					t.Fatalf("%s leads, want %s", dc.ids[got], dc.ids[li])
				}
				dc.write(t, "after", 2, 10)
				dc.converged()
				for _, n := range started {
					if _, ok := get(n, "late11"); !ok {
						t.Fatalf("%s lacks late11 after catching up", n.ID())
					}
					if n.catchUp.active() {
						t.Fatalf("%s still catching up", n.ID())
					}
				}
				return
			}
			// Without the mark: the two elect one of themselves, and the
			// write the cluster acknowledged is gone.
			deadline := time.Now().Add(15 * time.Second)
			for !started[0].IsLeader() && !started[1].IsLeader() {
				if time.Now().After(deadline) {
					t.Fatal("no leader among the damaged pair")
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, n := range started {
				if err := n.fsm.waitApplied(context.Background(), n.raft.CommitIndex()); err != nil {
					t.Fatal(err)
				}
				if _, ok := get(n, "late11"); ok {
					t.Fatal("late11 survived: the damage did not remove it")
				}
			}
		})
	}
}

// unmarkNode clears the synced mark of the log in dir, as a crash before
// it was raised would leave it.
func unmarkNode(t *testing.T, dir string) {
	t.Helper()
	s, err := raftlog.Open(dir, raftlog.Options{SegmentSize: 32 << 10})
	if err != nil {
		t.Fatalf("open to clear the mark: %v", err)
	}
	if err := s.Set([]byte("deadbolt.synced"), make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// A failed fdatasync stops the node (it neither votes nor serves), the
// others elect a leader and go on, and a restart reads the log again and
// catches up.
func TestDiskFailureStopsNode(t *testing.T) {
	for _, who := range []string{"leader", "follower"} {
		t.Run(who, func(t *testing.T) {
			var failing [3]atomic.Bool
			failed := make(chan error, 3)
			dc := startDiskCluster(t, 3, func(i int, cfg *Config) {
				cfg.BeforeSync = func() error {
					if failing[i].Load() {
						return syscall.EIO
					}
					return nil
				}
				cfg.OnDiskFailure = func(err error) { failed <- err }
			})
			dc.write(t, "a", 10, 100)
			li := dc.leader(-1)
			x := li
			if who == "follower" {
				x = (li + 1) % 3
			}
			failing[x].Store(true)
			// Writes go on (through whoever leads) until the node's disk
			// fails it.
			var err error
			go func() {
				for k := 0; k < 20; k++ {
					li := dc.leader(x)
					dc.nodes[li].Apply(context.Background(), cmd("SET", fmt.Sprint("b", k), "v"))
				}
			}()
			select {
			case err = <-failed:
			case <-time.After(15 * time.Second):
				t.Fatal("the node with the failing disk did not stop")
			}
			var fe *raftlog.ErrFailed
			if !errors.As(err, &fe) || !errors.Is(err, syscall.EIO) || !strings.HasPrefix(fe.Path, dc.logDir(x)) {
				t.Fatalf("OnDiskFailure: %v", err)
			}
			t.Logf("stopped: %v", err)
			select {
			case <-dc.nodes[x].Stopped():
			case <-time.After(5 * time.Second):
				t.Fatal("node not stopped")
			}
			// The others lead and serve.
			nl := dc.leader(x)
			if _, err := dc.nodes[nl].Apply(context.Background(), cmd("SET", "after", "1")); err != nil {
				t.Fatalf("SET after the failure: %v", err)
			}
			// Restarted with a working disk it catches up.
			failing[x].Store(false)
			if _, err := dc.start(x); err != nil {
				t.Fatalf("restart: %v", err)
			}
			dc.write(t, "c", 2, 10)
			dc.converged()
			if _, ok := get(dc.nodes[x], "after"); !ok {
				t.Fatal("the restarted node lacks a write made while it was down")
			}
		})
	}
}

// A sole voter that lost entries it synced has nobody to catch up from:
// it refuses to start rather than serve without them.
func TestSoleVoterLostEntries(t *testing.T) {
	dc := startDiskCluster(t, 1, func(i int, cfg *Config) { cfg.SegmentSize = 32 << 10 })
	dc.write(t, "a", 40, 1000)
	dc.stop(0)
	segs := segments(t, dc.logDir(0))
	os.Remove(segs[len(segs)-1])
	_, err := dc.start(0)
	if err == nil || !errors.Is(err, raftlog.ErrLost) || !strings.Contains(err.Error(), "only voter") || !strings.Contains(err.Error(), dc.logDir(0)) {
		t.Fatalf("start: %v", err)
	}
	t.Logf("refused: %v", err)
}

// syncBuffer is a buffer a logger may write to from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
