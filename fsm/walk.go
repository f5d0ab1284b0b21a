package fsm

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/deadbolt/deadbolt/internal/gctune"
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
	walkRun     = 2048    // keys sorted, merged or listed between two yields
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
	seen    []string    // KEYS: live matching keys seen, in table order
	entries []scanEntry // SCAN: the keys seen; in SCAN's order after prepare

	// Under the lock: keys created or removed since the walk began.
	touched map[string]struct{}

	// Finish's outcome.
	add, drop []string // KEYS: touched keys now present / absent
	res       *Result  // the answer, when Finish could give it whole

	names int // KEYS: bytes of the names in seen

	allowed []func() // release the collector's allowances (allow)
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
	// What the steps allocate; what the rest does depends on how many
	// keys KEYS's pattern matches, known in prepare.
	w.allow(walkSeenAllocs(w.keys, ks.keys.len()))
	// Not grown (and copied) step by step, pattern or not: grown by
	// append, the list of 100,000 keys matched by a pattern allocated
	// about 5.5 times its size (TestWalkAllocatesWhatItTellsTheCollector).
	if w.keys {
		w.seen = make([]string, 0, ks.keys.len())
	} else {
		w.entries = make([]scanEntry, 0, ks.keys.len())
	}
	ks.walks = append(ks.walks, w)
	return w
}

// walkSeenAllocs is about what a walk over n keys allocates as it
// steps: KEYS the list of names seen (16 bytes a key); SCAN the index's
// entries and the sort's buffer (24 bytes a key each), and walkFixed for
// the rest (the reply to SCAN, the index). walkMatchedAllocs is what KEYS
// allocates once its steps have matched m keys whose names take names
// bytes: the sort's buffer (16 bytes a key) and the reply (encoded: a
// name and up to 16 bytes of framing; else a reply value and a copy of
// the name, rounded up to the allocator's size, a key), and walkFixed
// (the reply's last piece). The walk tells the collector (gctune.Allow),
// so that these do not start a collection during it: one marked the whole
// heap while other clients waited (Run). TestWalkAllocatesWhatItTellsTheCollector
// holds a walk to them.
func walkSeenAllocs(keys bool, n int) uint64 {
	if keys {
		return uint64(n)*16 + walkFixed
	}
	return uint64(n)*(24+24) + walkFixed
}

// walkMatchedAllocs: walkSeenAllocs.
func walkMatchedAllocs(encoded bool, m, names int) uint64 {
	if encoded {
		return uint64(m)*(16+16) + uint64(names) + walkFixed
	}
	return uint64(m)*(16+uint64(unsafe.Sizeof(resp.Reply{}))+16) + uint64(names) + walkFixed
}

// allow tells the collector the walk will allocate n bytes (walkAllow);
// Run's end releases all it was allowed.
func (w *Walk) allow(n uint64) {
	w.allowed = append(w.allowed, walkAllow(n))
}

// release releases what the walk was allowed (allow).
func (w *Walk) release() {
	for _, r := range w.allowed {
		r()
	}
	w.allowed = nil
}

// walkAllow is gctune.Allow (a variable for tests).
var walkAllow = gctune.Allow

// walkFixed is what a walk allocates besides its per-key lists.
const walkFixed = 64 << 10

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
		return len(cmd.Args) >= 2 && ks.scan == nil && scanArgsOK(cmd.Args)
	}
	return false
}

// scanArgsOK reports whether SCAN's arguments parse as cmdScan parses
// them: one that answers an error at once is no long read.
func scanArgsOK(args [][]byte) bool {
	if _, ok := parseCursor(args[1]); !ok {
		return false
	}
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return false
		}
		switch {
		case optEq(args[i], "count"):
			if n, ok := parseInt64(args[i+1]); !ok || n < 1 {
				return false
			}
		case optEq(args[i], "match"), optEq(args[i], "type"):
		default:
			return false
		}
	}
	return true
}

// Run does the walk, taking mu (the lock that guards f, not held on
// entry) for each step and for the end, and returns the answer.
func (w *Walk) Run(mu sync.Locker) Result {
	locked := func(f func()) {
		mu.Lock()
		defer mu.Unlock() // a panic (a bug) leaves the lock free
		f()
	}
	// The collector's allowance grows by what the walk allocates
	// (BeginWalk, prepare: gctune.Allow), bounded in bytes, so that the walk's own
	// allocations do not start a collection during it. Raising GOGC to its
	// maximum for the walk instead (gctune.Bulk) kept it there for as long
	// as walks overlap, so that clients looping KEYS let the heap grow to
	// several times the data (review of the long-read work).
	// The process is not idle while the walk runs: gctune's idle
	// collector, which took the walk's fresh allocations for garbage,
	// started collections during it whose marking of the whole heap held a
	// one-P member's processor for 10–38 ms at a time (runtime/trace of a
	// leader during KEYS).
	defer gctune.Busy()()
	defer w.release()
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
		walkYield()
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
		if !w.keys {
			// SCAN's entry at once: a list of the names first, then
			// of the entries, allocated 16 bytes a key more. Its hash
			// is filled in by prepare, without the lock (a step's
			// hashing took about 0.25 ms).
			w.entries = append(w.entries, scanEntry{key: k})
			return
		}
		if v.expired(w.now) || w.pattern != nil && !stringMatch(w.pattern, []byte(k), false) {
			return
		}
		w.seen = append(w.seen, k)
		w.names += len(k)
	})
	w.pos = next
	return done
}

// prepare orders what was seen, without the lock, yielding as it goes
// (sortYielding): a single-core node's event loop runs between its pieces.
func (w *Walk) prepare() {
	if w.keys {
		w.allow(walkMatchedAllocs(w.cmd.Encoded, len(w.seen), w.names))
		w.seen = sortYielding(w.seen, strings.Compare)
		w.seen = compactYielding(w.seen, func(a, b string) bool { return a == b })
		return
	}
	for i := range w.entries {
		w.entries[i].hash = scanHash(w.entries[i].key)
		if i%walkRun == walkRun-1 {
			walkYield()
		}
	}
	// A key seen twice (removed and created again meanwhile) sorts next
	// to itself: equal hashes, equal names.
	w.entries = sortYielding(w.entries, compareScan)
	w.entries = compactYielding(w.entries, func(a, b scanEntry) bool { return a.key == b.key })
}

// walkYield lets other goroutines run (a variable for tests): parkWalk.
var walkYield = parkWalk

// lastPark is when a walk last parked (parkWalk), in Unix nanoseconds.
var lastPark atomic.Int64

// parkWalk yields the processor. Mostly it is runtime.Gosched, but at
// most every walkParkEvery the walk sleeps briefly instead (a sleep under
// a millisecond lasts about one when the P goes idle, since the poller
// waits in whole milliseconds, so parking every millisecond doubled the
// walk's time): a goroutine
// that waits in the runtime's network poller (a cluster member's event
// loop, between requests) is found by the scheduler only when a P has
// nothing in its run queues, or by the runtime's monitor every 10 ms; a
// walk that only called Gosched went straight back on the queue, and on a
// member with one P the loop's PINGs waited for that monitor (runtime/trace
// of a leader during KEYS: the loop runnable 10-30 ms at a time).
func parkWalk() {
	now := time.Now().UnixNano()
	if last := lastHooks.Load(); now-last >= int64(walkHooksEvery) || now < last {
		lastHooks.Store(now)
		runYieldHooks() // event loops in the poller with sockets ready (walk_nudge.go)
	}
	if last := lastPark.Load(); now-last < int64(walkParkEvery) && now >= last {
		runtime.Gosched()
		return
	}
	lastPark.Store(now)
	time.Sleep(walkPark)
}

// How often a walk parks, and for how long, and how often its yields run
// the hooks (parkWalk; a walk yields every 0.2-0.3 ms, and the hooks' poll
// is a system call).
const (
	walkParkEvery  = 3 * time.Millisecond
	walkPark       = 20 * time.Microsecond
	walkHooksEvery = time.Millisecond
)

var lastHooks atomic.Int64

// sortYielding sorts s by cmp without holding the processor for long: it
// sorts runs of walkRun elements, then merges them pairwise, yielding
// after each run and each walkRun elements merged. One slices.Sort of a
// million keys ran 300 ms without a yield, and on a node with one P
// (GOMAXPROCS=1, the cluster's members) the event loop and raft waited
// for the runtime's 10 ms preemption over and over. It returns the sorted
// elements, in s or in a buffer of the same length.
func sortYielding[T any](s []T, cmp func(a, b T) int) []T {
	n := len(s)
	for lo := 0; lo < n; lo += walkRun {
		slices.SortFunc(s[lo:min(lo+walkRun, n)], cmp)
		walkYield()
	}
	if n <= walkRun {
		return s
	}
	buf := make([]T, n)
	moved := 0
	for width := walkRun; width < n; width *= 2 {
		for lo := 0; lo < n; lo += 2 * width {
			mid, hi := min(lo+width, n), min(lo+2*width, n)
			i, j := lo, mid
			for o := lo; o < hi; o++ {
				if j >= hi || i < mid && cmp(s[i], s[j]) <= 0 {
					buf[o] = s[i]
					i++
				} else {
					buf[o] = s[j]
					j++
				}
				if moved++; moved == walkRun {
					moved = 0
					walkYield()
				}
			}
		}
		s, buf = buf, s
	}
	clearYielding(buf) // the other copy holds no strings alive
	return s
}

// compactYielding is slices.CompactFunc (runs of elements equal by eq
// become one) yielding after each walkRun elements: one CompactFunc over
// a million SCAN entries held a cluster member's only processor for
// 11.6 ms (runtime/trace of a leader during SCAN's walk, 2026-11-26).
func compactYielding[T any](s []T, eq func(a, b T) bool) []T {
	if len(s) < 2 {
		return s
	}
	n := 1
	for i := 1; i < len(s); i++ {
		if !eq(s[n-1], s[i]) {
			s[n] = s[i]
			n++
		}
		if i%walkRun == 0 {
			walkYield()
		}
	}
	clearYielding(s[n:]) // the tail holds no strings alive
	return s[:n]
}

// clearYielding zeroes s in pieces of walkClear elements, yielding
// between them: clearing 24 MB of SCAN entries (memory with pointers,
// zeroed without a preemption point) is a few milliseconds.
func clearYielding[T any](s []T) {
	for len(s) > 0 {
		k := min(len(s), walkClear)
		clear(s[:k])
		s = s[k:]
		if len(s) > 0 {
			walkYield()
		}
	}
}

// walkClear is how many elements clearYielding zeroes between yields (a
// variable for tests).
var walkClear = 64 << 10

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

// result builds the answer without the lock, yielding as it goes. For a
// caller that takes it encoded (Command.Encoded) KEYS's reply is encoded
// here, in pieces of about walkPiece bytes, the same bytes as the array
// of bulk strings would be in every protocol: no reply value per key, no
// copy of each name, no single buffer of the whole reply for the event
// loop to copy, and a yield between pieces.
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
			gone[k] = struct{}{} // merged back below, once
		}
		slices.Sort(w.add)
		merged := make([]string, 0, len(keys)+len(w.add))
		i := 0
		for n, k := range keys {
			if _, g := gone[k]; g {
				continue
			}
			for i < len(w.add) && w.add[i] < k {
				merged = append(merged, w.add[i])
				i++
			}
			merged = append(merged, k)
			if n%walkRun == walkRun-1 {
				walkYield()
			}
		}
		keys = append(merged, w.add[i:]...)
	}
	if w.cmd.Encoded {
		return Result{Reply: resp.NewEncoded(encodeKeys(keys)), DB: w.cmd.DB}
	}
	out := make([]resp.Reply, len(keys))
	for i, k := range keys {
		out[i] = resp.BulkString(k)
		if i%walkRun == walkRun-1 {
			walkYield()
		}
	}
	return Result{Reply: resp.ArrayReply(out...), DB: w.cmd.DB}
}

// walkPiece is the size of the pieces an encoded KEYS reply is built in (a
// variable for tests).
var walkPiece = 64 << 10

// encodeKeys encodes keys as an array of bulk strings in pieces of about
// walkPiece bytes (a longer name takes a piece of its own size), yielding
// after each piece.
func encodeKeys(keys []string) [][]byte {
	var pieces [][]byte
	cur := make([]byte, 0, walkPiece)
	cur = append(strconv.AppendInt(append(cur, '*'), int64(len(keys)), 10), '\r', '\n')
	for _, k := range keys {
		need := len(k) + 24 // "$", the length, two CRLFs
		if len(cur) > 0 && len(cur)+need > walkPiece {
			pieces = append(pieces, cur)
			cur = make([]byte, 0, max(walkPiece, need))
			walkYield()
		}
		cur = append(strconv.AppendInt(append(cur, '$'), int64(len(k)), 10), '\r', '\n')
		cur = append(append(cur, k...), '\r', '\n')
	}
	return append(pieces, cur)
}

// walkTouched notes, for the walks of ks in progress, that key k was
// created or removed.
func (ks *keyspace) walkTouched(k string) {
	for _, w := range ks.walks {
		w.touched[k] = struct{}{}
	}
}
