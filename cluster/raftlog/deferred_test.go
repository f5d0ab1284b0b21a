package raftlog

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// gatedSync replaces the append sync for a test: each sync waits for the
// gate to be open and returns fail's error, if set.
type gatedSync struct {
	open  chan struct{}
	syncs atomic.Int64
	fail  atomic.Pointer[error]
}

func gateSyncs(t *testing.T) *gatedSync {
	g := &gatedSync{open: make(chan struct{})}
	old := syncFile
	syncFile = func(f *os.File) error {
		<-g.open
		g.syncs.Add(1)
		if e := g.fail.Load(); e != nil {
			return *e
		}
		return old(f)
	}
	t.Cleanup(func() { syncFile = old })
	return g
}

// waitDone runs WaitDurable(index) on a goroutine; its result arrives on the
// channel.
func waitDone(s *Store, index uint64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.WaitDurable(index) }()
	return ch
}

func mustWait(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting")
		return nil
	}
}

func mustBlock(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("returned %v before the sync", err)
	case <-time.After(50 * time.Millisecond):
	}
}

// A deferred append returns before its sync; its entries can be read at
// once, and WaitDurable waits for the sync. An append that is not deferred
// is synced before it returns, and so is everything written before it.
// Close syncs what is left, so a reopened store has it all.
func TestDeferredAppends(t *testing.T) {
	g := gateSyncs(t)
	dir := t.TempDir()
	s, err := Open(dir, Options{SegmentSize: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	var leader atomic.Bool
	leader.Store(true)
	s.DeferSyncWhen(leader.Load)

	if err := s.StoreLogs(entries(1, 3, 1)); err != nil { // returns with the gate shut
		t.Fatal(err)
	}
	checkRange(t, s, 1, 3, term1)
	w := waitDone(s, 3)
	mustBlock(t, w)
	if err := s.WaitDurable(0); err != nil {
		t.Fatal(err)
	}
	close(g.open)
	if err := mustWait(t, w); err != nil {
		t.Fatal(err)
	}

	leader.Store(false)
	n := g.syncs.Load()
	if err := s.StoreLogs(entries(4, 4, 1)); err != nil {
		t.Fatal(err)
	}
	if g.syncs.Load() != n+1 {
		t.Fatal("an append that is not deferred returned without its sync")
	}
	if err := mustWait(t, waitDone(s, 4)); err != nil {
		t.Fatal(err)
	}

	leader.Store(true)
	appendChunks(t, s, 5, 60, 1) // several segments: a new one syncs the last first
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitDurable(60); err != nil {
		t.Fatalf("after Close: %v", err)
	}
	s = open(t, dir, 1<<12)
	checkRange(t, s, 1, 60, term1)
}

// A suffix deletion syncs the deferred appends first, and what is durable
// never includes a deleted entry: WaitDurable for an index past the end
// does not wait for entries written later at that index.
func TestDeferredTruncation(t *testing.T) {
	g := gateSyncs(t)
	s := open(t, t.TempDir(), 1<<12)
	s.DeferSyncWhen(func() bool { return true })
	close(g.open)
	if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, waitDone(s, 10)); err != nil {
		t.Fatal(err)
	}
	g.open = make(chan struct{}) // shut the gate again
	if err := s.StoreLogs(entries(6, 8, 2)); err != nil {
		t.Fatal(err)
	}
	w := waitDone(s, 8)
	mustBlock(t, w)
	close(g.open)
	if err := mustWait(t, w); err != nil {
		t.Fatal(err)
	}
	checkRange(t, s, 1, 8, func(i uint64) uint64 {
		if i >= 6 {
			return 2
		}
		return 1
	})
}

// A failed deferred sync is sticky: WaitDurable reports it and the store
// refuses appends.
func TestDeferredSyncFails(t *testing.T) {
	g := gateSyncs(t)
	s := open(t, t.TempDir(), 1<<12)
	s.DeferSyncWhen(func() bool { return true })
	bad := errors.New("disk on fire")
	g.fail.Store(&bad)
	if err := s.StoreLogs(entries(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	w := waitDone(s, 2)
	close(g.open)
	if err := mustWait(t, w); !errors.Is(err, bad) {
		t.Fatalf("WaitDurable: %v, want %v", err, bad)
	}
	if err := s.StoreLogs(entries(3, 3, 1)); !errors.Is(err, bad) {
		t.Fatalf("append after a failed sync: %v", err)
	}
}

// SyncHeld: while appends are deferred a read does not wait; once they are
// not (the node no longer leads), reading an entry held unsynced waits for
// its sync, and reading one that is synced, or not held, does not.
func TestSyncHeld(t *testing.T) {
	g := gateSyncs(t)
	s := open(t, t.TempDir(), 1<<12)
	var leader atomic.Bool
	leader.Store(true)
	s.DeferSyncWhen(leader.Load)
	if err := s.StoreLogs(entries(1, 3, 1)); err != nil { // the gate is shut
		t.Fatal(err)
	}
	if err := s.SyncHeld(3); err != nil { // as leader: no wait
		t.Fatal(err)
	}
	leader.Store(false)
	if err := s.SyncHeld(4); err != nil { // not held: no wait
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { held <- s.SyncHeld(2) }()
	mustBlock(t, held)
	close(g.open)
	if err := mustWait(t, held); err != nil {
		t.Fatal(err)
	}
	g.open = make(chan struct{}) // shut again: nothing is left to sync
	if err := s.SyncHeld(3); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, waitDone(s, 3)); err != nil {
		t.Fatal(err)
	}
}

// An append waits for the sync of a deferred one before it writes, so
// that recovery can count on each append following a synced log: the
// second append returns only once the gate lets the first one's sync
// through.
func TestAppendWaitsForDeferredSync(t *testing.T) {
	g := gateSyncs(t)
	s := open(t, t.TempDir(), 1<<12)
	s.DeferSyncWhen(func() bool { return true })
	if err := s.StoreLogs(entries(1, 2, 1)); err != nil { // the gate is shut
		t.Fatal(err)
	}
	opened := false
	defer func() {
		if !opened { // a failure above: let Close's sync through
			close(g.open)
		}
	}()
	second := make(chan error, 1)
	go func() { second <- s.StoreLogs(entries(3, 3, 1)) }()
	mustBlock(t, second)
	close(g.open)
	opened = true
	if err := mustWait(t, second); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, waitDone(s, 3)); err != nil {
		t.Fatal(err)
	}
	checkRange(t, s, 1, 3, term1)
}

// UnsyncedFor grows while a deferred append waits for its sync (a stalled
// disk) and is 0 once the sync is done, and for appends synced before they
// return. BeforeSync runs before each sync, and its error fails it.
func TestUnsyncedForAndBeforeSync(t *testing.T) {
	g := gateSyncs(t)
	var calls atomic.Int64
	var fail atomic.Pointer[error]
	s, err := Open(t.TempDir(), Options{SegmentSize: 1 << 12, BeforeSync: func() error {
		calls.Add(1)
		if e := fail.Load(); e != nil {
			return *e
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var leader atomic.Bool
	leader.Store(true)
	s.DeferSyncWhen(leader.Load)

	if got := s.UnsyncedFor(); got != 0 {
		t.Fatalf("UnsyncedFor of an empty store = %v", got)
	}
	if err := s.StoreLogs(entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if got := s.UnsyncedFor(); got < 30*time.Millisecond {
		t.Fatalf("UnsyncedFor with the sync stalled = %v, want at least 30ms", got)
	}
	if calls.Load() == 0 {
		t.Fatal("BeforeSync was not called before the deferred sync")
	}
	close(g.open)
	if err := mustWait(t, waitDone(s, 3)); err != nil {
		t.Fatal(err)
	}
	if got := s.UnsyncedFor(); got != 0 {
		t.Fatalf("UnsyncedFor after the sync = %v", got)
	}
	leader.Store(false)
	if err := s.StoreLogs(entries(4, 4, 1)); err != nil {
		t.Fatal(err)
	}
	if got := s.UnsyncedFor(); got != 0 {
		t.Fatalf("UnsyncedFor after a synced append = %v", got)
	}
	boom := errors.New("disk gone")
	fail.Store(&boom)
	if err := s.StoreLogs(entries(5, 5, 1)); !errors.Is(err, boom) {
		t.Fatalf("an append whose BeforeSync fails: %v, want %v", err, boom)
	}
}
