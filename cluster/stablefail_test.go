//go:build linux

package cluster

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/internal/faultfs"
)

// Embedded use of a node whose stable store (raft's term and vote) fails
// with a real EIO (internal/faultfs): raft would panic on the failed term
// save and take the whole program with it. A follower's stable file fails
// and the leader stops: the election makes the follower save a new term;
// the node stops instead, tells OnDiskFailure with the error naming the
// file, and its Close returns (raft's goroutines ended: no deadlock, none
// left). Started again on the failing disk, NewNode returns the error;
// once the disk works it starts and catches up.
//
// The nodes' files are on mounts this test process serves, so their log
// appends use plain system calls (raftlog.PlainSyscallsForTest: a raw call
// blocked on such a mount holds up the collector's stop of the world while
// the server that would answer it waits for a P). The process test
// (cmd/deadbolt, TestProcessFUSEStableFailure) runs the real raw path.
func TestStableFailureStopsNode(t *testing.T) {
	raftlog.PlainSyscallsForTest(t) // this process serves the mounts: no raw calls on them
	var mounts [3]*faultfs.FS
	for i := range mounts {
		mounts[i] = faultfs.MountTest(t) // unmounted after the nodes close
	}
	failed := make(chan error, 3)
	dc := startDiskCluster(t, 3, func(i int, cfg *Config) {
		cfg.DataDir = mounts[i].Dir
		cfg.OnDiskFailure = func(err error) { failed <- err }
		// No clock ticks: an idle leader's tick reaching the follower
		// after waitMarkAtEnd would make the mark's save (about a second
		// later) the next write of its stable file, not the term's.
		cfg.Clock = stoppedClock{time.Unix(1_700_000_000, 0)}
	})
	dc.write(t, "a", 10, 100)
	li := dc.leader(-1)
	v := (li + 1) % 3
	// The follower's synced mark (also in the stable file) is raised about
	// a second after its last append: once it is there, and with no clock
	// ticks nothing more is appended, the election's term save is the next
	// write of the file, the one that fails.
	waitMarkAtEnd(t, dc.nodes[v])
	mounts[v].FailSync("stable")
	dc.stop(li)

	var err error
	select {
	case err = <-failed:
	case <-time.After(20 * time.Second):
		t.Fatal("the node whose stable store fails did not stop")
	}
	var fe *raftlog.ErrFailed
	stable := filepath.Join(dc.logDir(v), "stable")
	if !errors.As(err, &fe) || fe.Path != stable || fe.Op != "fdatasync" || !errors.Is(err, syscall.EIO) {
		t.Fatalf("OnDiskFailure: %v, want the failed fdatasync of %s", err, stable)
	}
	// The term's save, the one raft panics on without stableGuard (not
	// the synced mark's, which stops the node whatever the guard does).
	if fe.Key != keyCurrentTerm {
		t.Fatalf("OnDiskFailure: %v, want the failed save of %s", err, keyCurrentTerm)
	}
	t.Logf("stopped: %v", err)
	closed := make(chan struct{})
	go func() { dc.nodes[v].Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close of the failed node did not return")
	}

	if _, err := dc.start(v); err == nil || !errors.As(err, &fe) || fe.Path != stable {
		t.Fatalf("start on the failing disk: %v, want the failed stable file", err)
	}
	mounts[v].Clear()
	if _, err := dc.start(li); err != nil {
		t.Fatalf("restart %d: %v", li, err)
	}
	if _, err := dc.start(v); err != nil {
		t.Fatalf("restart %d on a working disk: %v", v, err)
	}
	dc.write(t, "b", 5, 10)
	dc.converged()
	for _, i := range []int{li, v} {
		if _, ok := get(dc.nodes[i], "a9"); !ok {
			t.Fatalf("node %d lacks a write acknowledged before the failure", i)
		}
	}
}

// waitMarkAtEnd waits until n's synced mark has reached its last log
// index: no set of the mark is due until the log grows again.
func waitMarkAtEnd(t *testing.T, n *Node) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mark, last := n.SyncedMark(), n.Status().LastIndex
		if last > 0 && mark >= last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the synced mark is %d, below the last index %d, after 20 s", mark, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
