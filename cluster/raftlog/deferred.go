package raftlog

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// Deferred syncs let raft's leader write its own entries in parallel with
// sending them to the followers, as the Raft thesis allows (§10.2.1): an
// append the caller's predicate marks as deferrable returns once written,
// and a goroutine syncs it. The store then says what is durable
// (WaitDurable); hashicorp/raft counts the leader's copy as soon as
// StoreLogs returns, so the node must hold back everything that commit
// leads to until the leader's copy is durable: applying the entries (and
// with it every reply to a client), sending the commit index to the
// followers, and membership changes. Appends that are not deferred (a
// follower's, whose acknowledgement counts) are synced before StoreLogs
// returns, as always.
type deferred struct {
	when func() bool // appends are deferred while it says so; nil: never

	mu      sync.Mutex
	cond    *sync.Cond
	written uint64    // the last index written, synced or not; changed under wmu and mu
	durable uint64    // the last index known synced; under mu
	pending *os.File  // the file with unsynced appends, if any; changed under wmu and mu
	since   time.Time // when pending was set, under mu
	err     error     // a failed deferred sync: sticky, under mu
	closed  bool      // under mu

	req      chan struct{} // capacity 1: an append is waiting for the syncer
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// syncFile is the sync of an append (a test may replace it).
var syncFile = appendSync

// syncAppends syncs appended entries in f, after Options.BeforeSync.
func (s *Store) syncAppends(f *os.File) error {
	if s.beforeSync != nil {
		if err := s.beforeSync(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	err := syncFile(f)
	s.io.sync.RecordDuration(time.Since(t0))
	return err
}

// UnsyncedFor is how long the oldest deferred append not yet synced has
// waited for its sync; 0 when none waits. A leader whose disk stalls sees
// it grow (cluster: its followers stop hearing from it, and elect another).
func (s *Store) UnsyncedFor() time.Duration {
	d := &s.def
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		return 0
	}
	return time.Since(d.since)
}

// DeferSyncWhen makes the appends made while when returns true return
// before they are synced (see deferred). Call it before the store is used.
func (s *Store) DeferSyncWhen(when func() bool) {
	d := &s.def
	d.when = when
	d.req = make(chan struct{}, 1)
	d.stop = make(chan struct{})
	d.done = make(chan struct{})
	go s.syncLoop()
}

func (s *Store) syncLoop() {
	d := &s.def
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		case <-d.req:
		}
		// With one P the sync holds it: let the goroutines the append
		// woke (raft's replication, sending the entries on) run first.
		runtime.Gosched()
		s.wmu.Lock()
		s.flushPending()
		s.wmu.Unlock()
	}
}

// flushPending syncs the appends not yet synced, or returns the error of
// a deferred sync that failed (sticky: the store refuses appends after
// it). The caller holds wmu.
func (s *Store) flushPending() error {
	d := &s.def
	d.mu.Lock()
	f, target, err := d.pending, d.written, d.err
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if f == nil {
		return nil
	}
	if err = s.syncAppends(f); err != nil {
		return s.fail(s.pathOf(f), "fdatasync", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.durable = max(d.durable, target)
	d.pending = nil
	d.cond.Broadcast()
	return nil
}

// appended records an append of entries up to last in f, synced or not.
// The caller holds wmu.
func (s *Store) appended(f *os.File, last uint64, synced bool) {
	d := &s.def
	d.mu.Lock()
	d.written = last
	if synced {
		// Every append syncs the ones before it first (StoreLogs).
		d.durable, d.pending = last, nil
		d.cond.Broadcast()
	} else {
		if d.pending == nil {
			d.since = time.Now()
		}
		d.pending = f
	}
	d.mu.Unlock()
	if !synced {
		select {
		case d.req <- struct{}{}:
		default:
		}
	}
}

// truncated records that the log now ends at last. The caller holds wmu
// and has flushed.
func (s *Store) truncated(last uint64) {
	d := &s.def
	d.mu.Lock()
	d.written = min(d.written, last)
	d.durable = min(d.durable, last)
	d.mu.Unlock()
}

// deferNow reports whether the next append may return before its sync.
func (s *Store) deferNow() bool { return s.def.when != nil && s.def.when() }

// WaitDurable waits until the entries up to index that the store holds
// are synced. It fails if a deferred sync failed, or the store closed
// first.
func (s *Store) WaitDurable(index uint64) error {
	d := &s.def
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.durable < index && d.durable < d.written {
		switch {
		case d.err != nil:
			return d.err
		case d.closed:
			return ErrClosed
		}
		d.cond.Wait()
	}
	return nil
}

// SyncHeld syncs the log up to index, if the store holds that entry
// unsynced and appends are not being deferred now. A node that leaves the
// leader's role may still hold entries it appended as leader and has not
// synced; as a follower, raft acknowledges entries it already holds
// without storing them again, but only after reading each one (GetLog) to
// compare terms. Reading through SyncHeld makes such an acknowledgement
// wait for the disk.
func (s *Store) SyncHeld(index uint64) error {
	d := &s.def
	d.mu.Lock()
	unsynced := index > d.durable && index <= d.written
	d.mu.Unlock()
	if !unsynced || s.deferNow() {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushPending()
}

// stopSyncer ends the syncer goroutine; the caller does not hold wmu (the
// syncer may be waiting for it).
func (s *Store) stopSyncer() {
	d := &s.def
	if d.stop == nil {
		return
	}
	d.stopOnce.Do(func() {
		close(d.stop)
		<-d.done
	})
}
