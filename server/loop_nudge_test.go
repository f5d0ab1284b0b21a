//go:build linux

package server

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
)

// TestEventLoopNudge: a loop waiting in the runtime's poller registers a
// nudge with the walks of long reads, and a walk's yields wake it when
// its epoll set has events ready, as a post would (its wait returns at
// once); with nothing ready they leave it alone. Without the nudge such a
// loop on a one-P cluster member waited for the runtime's monitor (10 ms)
// while a KEYS or SCAN walked the keyspace. A loop blocked in epoll_wait
// registers nothing (the kernel wakes it).
//
// What each mode registers (the loop's descriptors, its nudge) is removed
// by t.Cleanup, also when the test fails half-way: a nudge left in the
// walks' hooks would run in every later test's walks.
func TestEventLoopNudge(t *testing.T) {
	t.Run("poller", func(t *testing.T) { testEventLoopNudge(t, waitPoller) })
	t.Run("blocking", func(t *testing.T) { testEventLoopNudge(t, waitBlocking) })
}

func testEventLoopNudge(t *testing.T, mode int32) {
	testLoopWait.Store(mode)
	t.Cleanup(func() { testLoopWait.Store(0) }) // also when newTestServer fails
	s := newTestServer(t)
	l, err := newEventLoop(s.Server) // a second loop, not running: its wait is ours
	testLoopWait.Store(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l.epf != nil {
			l.epf.Close()
		} else {
			syscall.Close(l.epfd)
		}
		syscall.Close(l.wakefd)
	})
	if got, want := l.epoll != nil, mode == waitPoller; got != want {
		t.Fatalf("mode %d: loop in the poller: %v, want %v", mode, got, want)
	}
	remove := l.nudgeDuringWalks()
	t.Cleanup(remove) // removing twice is harmless

	walk := func() {
		f := fsm.New(fsm.Options{})
		for i := range 40_000 { // a long read: more than a walk's minimum
			f.Apply(1, fsm.Command{Args: [][]byte{[]byte("SET"), []byte("k" + strconv.Itoa(i)), []byte("v")}})
		}
		var mu sync.Mutex
		mu.Lock()
		w := f.BeginWalk(1, fsm.Command{Args: [][]byte{[]byte("KEYS"), []byte("*")}})
		mu.Unlock()
		if w == nil {
			t.Fatal("KEYS * over 40 000 keys: not a walk")
		}
		w.Run(&mu)
	}
	walk() // nothing ready
	if n := l.nudges.Load(); n != 0 {
		t.Fatalf("mode %d: %d nudges with nothing ready", mode, n)
	}
	one := [8]byte{1}
	if _, err := syscall.Write(l.wakefd, one[:]); err != nil { // an event ready in the set
		t.Fatal(err)
	}
	walk()
	n := l.nudges.Load()
	switch {
	case mode == waitBlocking && n != 0:
		t.Fatalf("a blocking loop was nudged %d times", n)
	case mode == waitPoller && n == 0:
		t.Fatal("a walk's yields did not nudge the loop with an event ready")
	case mode == waitPoller:
		// The loop's wait returns at once: a waiting Read on the
		// epoll file sees the wake deadline.
		err := l.epoll.Read(func(uintptr) bool { return false })
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the nudged loop's wait: %v, want a wake-up", err)
		}
	}
	remove()
	walk()
	if n2 := l.nudges.Load(); n2 != n {
		t.Fatalf("mode %d: nudged %d times after removal", mode, n2-n)
	}
}

// A running loop in the poller registers its nudge with the walks and
// removes it when it ends (the wiring in eventLoop.run that
// TestEventLoopNudge, which calls nudgeDuringWalks itself, does not see).
func TestRunningLoopRegistersNudge(t *testing.T) {
	before := fsm.WalkYieldHooks()
	testLoopWait.Store(waitPoller)
	f := fsm.New(fsm.Options{})
	local := cluster.NewLocal(f, &cluster.ManualClock{}, NewHub())
	defer func() { local.Close(); f.Close() }()
	srv := New(Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(newTestLog(t), nil))}, local, NewHub())
	if err := srv.Listen(); err != nil {
		testLoopWait.Store(0)
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	c := dial(t, srv.Addr().String()) // the first connection starts the loop
	c.send("PING")
	if r := c.read(); string(r.Str) != "PONG" {
		t.Fatalf("PING: %v", r)
	}
	testLoopWait.Store(0)
	srv.mu.Lock()
	lp := srv.loop
	srv.mu.Unlock()
	if lp == nil || lp.epoll == nil {
		t.Fatal("no loop in the runtime's poller")
	}
	if n := fsm.WalkYieldHooks(); n != before+1 {
		t.Fatalf("a running loop in the poller: %d hooks, want %d", n, before+1)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := fsm.WalkYieldHooks(); n != before {
		t.Fatalf("after the loop ended: %d hooks, want %d", n, before)
	}
}
