package fsm

import "bytes"

// Lock shapes: how a key was created, when that is how a lock client
// creates its lock. The shape is replicated state (set while applying,
// written into snapshots from version 3) because DEADBOLT LOCKS reports
// it; the counters below are not.
type lockShape uint8

const (
	shapeNone      lockShape = iota
	shapeString              // SET NX (redsync, redislock, redis-py, redlock, plain SET NX PX)
	shapeHash                // a hash created with one "<owner>:<thread>" field = 1 (Redisson lock, fair lock, fenced lock)
	shapeRW                  // a hash created with field "mode" (Redisson read-write lock)
	shapeSemaphore           // a string counter published on "redisson_sc:{name}"
	shapeLatch               // a string counter published on "redisson_countdownlatch__channel__{name}"
	shapeMax                 // first value not used
)

// createdMax is the largest state time a Value's created stamp holds
// (48 bits of Unix milliseconds: the year 10889).
const createdMax = 1<<46 - 1

func (v *Value) setCreated(ms int64) {
	u := uint64(min(max(ms, 0), createdMax))
	v.createdHi, v.createdLo = v.createdHi&^createdHiMask|uint16(u>>32), uint32(u)
}

// created is the state time at which the key took its lock shape.
func (v *Value) created() int64 {
	return int64(v.createdHi&createdHiMask)<<32 | int64(v.createdLo)
}

// LockKind is a family of locks the counters tell apart. At the moment a
// lock is taken the state machine sees only the key it creates, so a
// Redisson lock, fair lock and fenced lock all count as reentrant.
type LockKind uint8

// Lock kinds of the counters.
const (
	LockString    LockKind = iota // SET NX [PX] with a token (redsync, redislock, redis-py, node-redlock)
	LockReentrant                 // Redisson lock, fair lock, fenced lock (a hash of hold counts)
	LockReadWrite                 // Redisson read-write lock
	LockSemaphore                 // Redisson semaphore (permits taken with DECRBY, given back with INCRBY)
	NumLockKinds
)

func (k LockKind) String() string {
	switch k {
	case LockString:
		return "string"
	case LockReentrant:
		return "reentrant"
	case LockReadWrite:
		return "rwlock"
	case LockSemaphore:
		return "semaphore"
	}
	return "unknown"
}

func (s lockShape) kind() (LockKind, bool) {
	switch s {
	case shapeString:
		return LockString, true
	case shapeHash:
		return LockReentrant, true
	case shapeRW:
		return LockReadWrite, true
	case shapeSemaphore:
		return LockSemaphore, true
	}
	return 0, false
}

// HoldBucketsMs are the upper bounds (inclusive, milliseconds) of the
// hold time histogram; a last bucket, +Inf, follows them.
var HoldBucketsMs = [...]int64{1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 30000, 60000, 300000, 3600000}

// lockStats counts what this node saw happen to locks as it applied the
// log. The counters are observations, not state: they are not
// replicated, not in snapshots, start at zero when the process starts
// and survive a snapshot install; no reply depends on them. Every node
// applies the same log, so every node counts the same events. They are
// plain integers, changed only by the goroutine that applies and read
// (LockStats) by a caller that serialises with it, as Stats is: the
// apply path pays no atomic instruction for them.
type lockStats struct {
	kinds [NumLockKinds]lockKindStats
}

type lockKindStats struct {
	acquired, reentered, contended, released, expired uint64
	holdSum                                           uint64 // ms
	hold                                              [len(HoldBucketsMs) + 1]uint64
}

// LockKindStats is one kind's counters at one moment.
type LockKindStats struct {
	Kind LockKind
	// Acquired counts locks taken when free (string and Redisson locks:
	// the key was created; semaphores: permits taken, one per DECRBY).
	Acquired uint64
	// Reentered counts holds added to a held Redisson lock by its owner
	// (or a second reader of a read lock).
	Reentered uint64
	// Contended counts attempts that found the lock held: a SET NX that
	// found the key, a lock script that read the lease (PTTL) of a held
	// Redisson lock it did not change, or one that found a string lock it
	// did not change with EXISTS (node-redlock). Semaphores: not counted.
	Contended uint64
	// Released counts locks deleted before their lease ran out
	// (semaphores: permits given back, one per INCRBY).
	Released uint64
	// Expired counts locks whose lease ran out while held: the owner died
	// or stalled. (Semaphores: not counted.)
	Expired uint64
	// HoldBuckets are cumulative counts of locks released or expired
	// after holding them for at most HoldBucketsMs[i] ms; the last, +Inf,
	// equals HoldCount. HoldSumMs is their total hold time.
	HoldBuckets [len(HoldBucketsMs) + 1]uint64
	HoldCount   uint64
	HoldSumMs   uint64
}

// LockStats returns this node's lock counters, one entry per LockKind in
// order. It reads state the applier changes: the caller serialises it
// with Apply (the drivers' LockStats do).
func (f *FSM) LockStats() []LockKindStats {
	out := make([]LockKindStats, NumLockKinds)
	for i := range f.lockStats.kinds {
		k := &f.lockStats.kinds[i]
		o := &out[i]
		*o = LockKindStats{Kind: LockKind(i), Acquired: k.acquired, Reentered: k.reentered,
			Contended: k.contended, Released: k.released, Expired: k.expired, HoldSumMs: k.holdSum}
		var cum uint64
		for b, n := range k.hold {
			cum += n
			o.HoldBuckets[b] = cum
		}
		o.HoldCount = cum
	}
	return out
}

func (s *lockStats) observeHold(k LockKind, ms int64) {
	ms = max(ms, 0)
	b := 0
	for b < len(HoldBucketsMs) && ms > HoldBucketsMs[b] {
		b++
	}
	st := &s.kinds[k]
	st.hold[b]++
	st.holdSum += uint64(ms)
}

// lockTaken gives a value that was just created the way a lock client
// creates its lock its shape and creation time, and counts the
// acquisition.
func (c *Ctx) lockTaken(v *Value, s lockShape) {
	v.lock = s
	v.setCreated(c.now)
	if k, ok := s.kind(); ok {
		c.f.lockStats.kinds[k].acquired++
	}
}

// lockGone counts a lock-shaped key removed: released (deleted), or its
// lease expired.
func (c *Ctx) lockGone(v *Value, expired bool) {
	k, ok := v.lock.kind()
	if !ok || k == LockSemaphore {
		return
	}
	st := &c.f.lockStats
	end := c.now
	if expired {
		st.kinds[k].expired++
		end = v.Deadline // the hold ended when the lease ran out
	} else {
		st.kinds[k].released++
	}
	st.observeHold(k, end-v.created())
}

// lockContended counts a SET NX that found key present.
func (c *Ctx) lockContended(cur *Value) {
	k, ok := cur.lock.kind()
	if !ok {
		k = LockString
	}
	c.f.lockStats.kinds[k].contended++
}

// lockLeaseRead is called when a command applied through the log reads a
// key's TTL. A lock script reads the lease of a lock it found held to
// tell the caller how long to wait; if this command changed the key (a
// write lock's re-entry reads the lease to extend it), it was no
// contention.
func (c *Ctx) lockLeaseRead(v *Value) {
	if v.Version > c.startVersion {
		return
	}
	if k, ok := v.lock.kind(); ok && k != LockString && k != LockSemaphore {
		c.f.lockStats.kinds[k].contended++
	}
}

// lockExistsRead is called when a script applied through the log finds a
// string lock with EXISTS: node-redlock's take checks EXISTS on each of its
// keys and gives up, writing nothing, on the first that is held. If this
// command changed the key, it was no contention.
func (c *Ctx) lockExistsRead(v *Value) {
	if v.Version > c.startVersion {
		return
	}
	if k, ok := v.lock.kind(); ok && k == LockString {
		c.f.lockStats.kinds[k].contended++
	}
}

// lockHashWrite recognises a hash lock at HINCRBY/HSET: a new hash whose
// first field is "mode" set to read or write (read-write lock) or an
// "<owner>:<thread>" hold count set to 1 (Redisson lock); on a lock hash,
// a hold count going up. (count is the field's new value.)
func (c *Ctx) lockHashWrite(v *Value, isNew bool, field []byte, count []byte, fieldExisted bool) {
	if isNew {
		switch {
		case string(field) == "mode" && (string(count) == "read" || string(count) == "write"):
			c.lockTaken(v, shapeRW)
		case string(count) == "1" && bytes.IndexByte(field, ':') >= 0:
			c.lockTaken(v, shapeHash)
		}
		return
	}
	k, ok := v.lock.kind()
	if !ok || k == LockString {
		return
	}
	if fieldExisted {
		c.f.lockStats.kinds[k].reentered++
	} else if string(field) != "mode" {
		c.f.lockStats.kinds[k].acquired++ // another reader
	}
}

// lockCounterChange counts permits taken (incr < 0) and given back on a
// semaphore.
func (c *Ctx) lockCounterChange(v *Value, incr int64) {
	if v.lock != shapeSemaphore {
		return
	}
	if incr < 0 {
		c.f.lockStats.kinds[LockSemaphore].acquired++
	} else if incr > 0 {
		c.f.lockStats.kinds[LockSemaphore].released++
	}
}

// Channels whose messages name the semaphore or latch they belong to.
const (
	semChannelPrefix   = "redisson_sc:"
	latchChannelPrefix = "redisson_countdownlatch__channel__"
)

// lockPublished marks a string counter as a semaphore or a count-down
// latch when a message goes to its channel: Redisson publishes there when
// it sets the permits or the count, and on release.
func (c *Ctx) lockPublished(channel []byte) {
	var shape lockShape
	var rest []byte
	switch {
	case len(channel) > len(semChannelPrefix) && string(channel[:len(semChannelPrefix)]) == semChannelPrefix:
		shape, rest = shapeSemaphore, channel[len(semChannelPrefix):]
	case len(channel) > len(latchChannelPrefix) && string(channel[:len(latchChannelPrefix)]) == latchChannelPrefix:
		shape, rest = shapeLatch, channel[len(latchChannelPrefix):]
	default:
		return
	}
	v := c.db.keys.getBytes(objectName(rest))
	if v == nil {
		v = c.db.keys.getBytes(rest) // a name with a hash tag of its own
	}
	if v == nil || v.Kind != KindString || v.lock != shapeNone || v.expired(c.now) {
		return
	}
	v.lock = shape
	v.setCreated(c.now)
}

// objectName is the object a Redisson key or channel suffix names:
// "{name}" stands for name when name has no brace of its own, as the
// clients build "prefix:{name}" for such names and "prefix:name" for
// names that carry a hash tag.
func objectName(s []byte) []byte {
	if len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' && bytes.IndexByte(s[1:len(s)-1], '{') < 0 && bytes.IndexByte(s[1:len(s)-1], '}') < 0 {
		return s[1 : len(s)-1]
	}
	return s
}

// companionName builds the name of a key or channel that belongs to
// object name: "prefix:{name}", or "prefix:name" when the name has a
// hash tag.
func companionName(prefix, name string) string {
	if bytes.IndexByte([]byte(name), '{') >= 0 {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// suffixedName is "{name}:suffix", or "name:suffix" when the name has a
// hash tag.
func suffixedName(name, suffix string) string {
	if bytes.IndexByte([]byte(name), '{') >= 0 {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// fits reports whether a key of kind k can have shape s (a snapshot is
// checked with it).
func (s lockShape) fits(k Kind) bool {
	switch s {
	case shapeNone:
		return true
	case shapeString, shapeSemaphore, shapeLatch:
		return k == KindString
	case shapeHash, shapeRW:
		return k == KindHash
	}
	return false
}

// hasLockShapes reports whether any key has a lock shape, which only a
// version 3 snapshot carries.
func (f *FSM) hasLockShapes() bool {
	for _, ks := range f.dbs {
		for _, v := range ks.keys.all() {
			if v.lock != shapeNone {
				return true
			}
		}
	}
	return false
}
