package fsm

import (
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/deadbolt/deadbolt/resp"
)

// Long reads. KEYS reads every key of a database, and so does the first
// SCAN of one (it builds the scan index): over a million keys that took
// seconds, all of it under the lock that applies commands, so every write
// and every other read waited, and on a single node the event loop with
// them. A Walk does such a read in steps instead. Under the lock, a step
// takes the next few thousand keys of the database's key table, whole
// parts of it at a time (keyTable.chunk); between steps
// the lock is free and the database may change. A walk registers itself
// with the database, which notes in it every key created or removed
// while it runs (walk.touched). At the end, under the lock again, each
// noted key's presence is read as it is then; every other key was
// present, or absent, for the whole walk, and the key table's chunks
// yield a key present throughout exactly once. So the keys a walk returns are
// exactly those of the database at its end: KEYS's answer is valid at
// one instant, as Redis's (which blocks the server) is. The sorting, the
// matching and the reply are built with the lock free.
//
// The walk's expiry time is the command's, as a one-step read's is.
// FLUSHDB, FLUSHALL or a snapshot installed meanwhile replace the
// database: the walk notices and reads it again in one step.

// Walk bounds (variables for tests).
var (
	walkMinKeys = 1 << 15 // smaller databases are read in one step
	walkStep    = 8192    // keys per step
)

// Walk is a long read in progress: BeginWalk, then Run.
type Walk struct {
	f       *FSM
	cmd     Command
	now     int64
	ks      *keyspace
	keys    bool // KEYS; else the SCAN that builds the index
	pattern []byte

	pos     uint64      // where the next step starts in the key table (keyTable.chunk)
	seen    []string    // live keys seen (KEYS: matching), in table order
	entries []scanEntry // SCAN: the keys seen, in SCAN's order (prepare)

	// Under the lock: keys created or removed since the walk began.
	touched map[string]struct{}

	// Finish's outcome.
	add, drop []string // KEYS: touched keys now present / absent
	res       *Result  // the answer, when Finish could give it whole
}

// BeginWalk returns a walk for cmd if it is a long read: KEYS on a large
// database, or a SCAN on one with no scan index yet. Call it with the
// lock held; nil means cmd is an ordinary read (Read).
func (f *FSM) BeginWalk(now int64, cmd Command) *Walk {
	if !f.LongRead(cmd) {
		return nil
	}
	if now < f.now {
		now = f.now
	}
	ks := f.dbs[cmd.DB]
	w := &Walk{f: f, cmd: cmd, now: now, ks: ks, keys: optEq(cmd.Args[0], "keys"), touched: make(map[string]struct{})}
	if w.keys {
		if p := cmd.Args[1]; !(len(p) == 1 && p[0] == '*') {
			w.pattern = p
		}
	}
	ks.walks = append(ks.walks, w)
	return w
}

// MayBeLongRead reports, from its name alone and without the lock,
// whether cmd may be a long read (LongRead).
func MayBeLongRead(args [][]byte) bool {
	return len(args) >= 2 && (optEq(args[0], "keys") || optEq(args[0], "scan"))
}

// LongRead reports whether cmd is a long read (BeginWalk). Call it with
// the lock held.
func (f *FSM) LongRead(cmd Command) bool {
	if cmd.DB < 0 || cmd.DB >= NumDBs || !MayBeLongRead(cmd.Args) {
		return false
	}
	ks := f.dbs[cmd.DB]
	if ks.keys.len() < walkMinKeys {
		return false
	}
	switch {
	case optEq(cmd.Args[0], "keys"):
		return len(cmd.Args) == 2
	case optEq(cmd.Args[0], "scan"):
		return len(cmd.Args) >= 2 && ks.scan == nil
	}
	return false
}

// Run does the walk, taking mu (the lock that guards f, not held on
// entry) for each step and for the end, and returns the answer.
func (w *Walk) Run(mu sync.Locker) Result {
	locked := func(f func()) {
		mu.Lock()
		defer mu.Unlock() // a panic (a bug) leaves the lock free
		f()
	}
	finished := false
	defer func() {
		if !finished { // a panic: the database forgets the walk
			locked(w.forget)
		}
	}()
	for {
		var done bool
		locked(func() { done = w.step() })
		if done {
			break
		}
		// Let the goroutines that waited for the lock, or for the only
		// core (a cluster member may have one), run before the next step.
		runtime.Gosched()
	}
	w.prepare()
	locked(w.finish)
	finished = true
	return w.result()
}

// forget unregisters the walk from its database.
func (w *Walk) forget() {
	w.ks.walks = slices.DeleteFunc(w.ks.walks, func(x *Walk) bool { return x == w })
}

// step takes the next keys, under the lock; it reports whether the table
// is exhausted (or the database replaced).
func (w *Walk) step() bool {
	if w.f.dbs[w.cmd.DB] != w.ks {
		return true
	}
	next, done := w.ks.keys.chunk(w.pos, walkStep, func(k string, v *Value) {
		if w.keys && (v.expired(w.now) || w.pattern != nil && !stringMatch(w.pattern, []byte(k), false)) {
			return
		}
		w.seen = append(w.seen, k)
	})
	w.pos = next
	return done
}

// prepare orders what was seen, without the lock.
func (w *Walk) prepare() {
	slices.Sort(w.seen)
	w.seen = slices.Compact(w.seen)
	if !w.keys {
		w.entries = make([]scanEntry, len(w.seen))
		for i, k := range w.seen {
			w.entries[i] = scanEntry{scanHash(k), k}
		}
		slices.SortFunc(w.entries, compareScan)
		w.seen = nil
	}
}

// finish ends the walk under the lock: it reads the touched keys as they
// are now and, for SCAN, installs the index and answers.
func (w *Walk) finish() {
	w.forget()
	if w.f.dbs[w.cmd.DB] != w.ks {
		// The database was replaced (FLUSHDB, a snapshot): read it now.
		res := w.f.Read(w.now, w.cmd)
		w.res = &res
		return
	}
	for k := range w.touched {
		v := w.ks.keys.get(k)
		live := v != nil && (!w.keys || !v.expired(w.now) && (w.pattern == nil || stringMatch(w.pattern, []byte(k), false)))
		if live {
			w.add = append(w.add, k)
		} else {
			w.drop = append(w.drop, k)
		}
	}
	if w.keys {
		return
	}
	if w.ks.scan == nil {
		w.ks.scan = w.scanIndex()
	}
	res := w.f.Read(w.now, w.cmd)
	w.res = &res
}

// scanIndex makes the scan index of the keys seen, ordered by prepare,
// and of the touched keys' state, under the lock: O(touched · log N).
func (w *Walk) scanIndex() *scanIndex {
	x := &scanIndex{sorted: w.entries}
	w.entries = nil
	// Keys seen and removed since stay as dead entries, as after a DEL.
	x.removed = len(w.drop)
	for _, k := range w.add {
		e := scanEntry{scanHash(k), k}
		if _, found := slices.BinarySearchFunc(x.sorted, e, compareScan); !found {
			x.added = append(x.added, e)
		}
	}
	slices.SortFunc(x.added, compareScan)
	return x
}

// result builds the answer without the lock.
func (w *Walk) result() Result {
	if w.res != nil {
		return *w.res
	}
	keys := w.seen
	if len(w.drop) > 0 || len(w.add) > 0 {
		gone := make(map[string]struct{}, len(w.drop)+len(w.add))
		for _, k := range w.drop {
			gone[k] = struct{}{}
		}
		for _, k := range w.add {
			gone[k] = struct{}{} // added back below, once
		}
		keys = slices.DeleteFunc(keys, func(k string) bool { _, g := gone[k]; return g })
		keys = append(keys, w.add...)
		slices.SortFunc(keys, strings.Compare)
	}
	out := make([]resp.Reply, len(keys))
	for i, k := range keys {
		out[i] = resp.BulkString(k)
		if i%walkStep == walkStep-1 {
			runtime.Gosched()
		}
	}
	return Result{Reply: resp.ArrayReply(out...), DB: w.cmd.DB}
}

// walkTouched notes, for the walks of ks in progress, that key k was
// created or removed.
func (ks *keyspace) walkTouched(k string) {
	for _, w := range ks.walks {
		w.touched[k] = struct{}{}
	}
}
