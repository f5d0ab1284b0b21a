package fsm

import (
	"sort"
	"unsafe"
)

// Kind is the type of a value, as TYPE reports it.
type Kind uint8

// Value kinds.
const (
	KindString Kind = iota + 1
	KindHash
	KindList
	KindSet
	KindZSet
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindHash:
		return "hash"
	case KindList:
		return "list"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	}
	return "none"
}

// Value is one key's value. Exactly one of the payload fields is used,
// according to Kind.
type Value struct {
	Kind Kind
	// lock and the created stamp describe a key that was created the way
	// a lock client creates its lock (locks.go); they fill what was
	// padding after Kind, so a Value is no larger for them. The top two
	// bits of createdHi are OBJECT ENCODING's history (enc, encoding.go).
	lock      lockShape
	createdHi uint16
	createdLo uint32
	Str       []byte // a string, or a small hash packed (hashpack.go)
	// agg is the aggregate: *List, *Set, *ZSet, or *Hash for a hash
	// past its packed form. One field for the four keeps a Value at 80
	// bytes (a size class of Go's allocator) instead of 96.
	agg      any
	Deadline int64  // expiry in Unix ms; 0 means none
	Version  uint64 // f.version when the key last changed
	name     string // the key it was stored under, shared with expiry and tombstone entries
}

func (v *Value) bigHash() *Hash { h, _ := v.agg.(*Hash); return h }
func (v *Value) list() *List    { l, _ := v.agg.(*List); return l }
func (v *Value) set() *Set      { s, _ := v.agg.(*Set); return s }
func (v *Value) zset() *ZSet    { z, _ := v.agg.(*ZSet); return z }

// takeName returns key as a string for v's name. A string of up to
// sharedNameMax bytes moves into the same allocation as the name, behind
// it, so that such a key is two heap objects (its Value, and the name with
// the value) rather than three: every collection marks a third fewer
// objects for a keyspace of short strings, and the allocator rounds one
// size up instead of two (a million `SET key:<i> v`: 2.0 million heap
// objects instead of 3.0, 112 MB of heap instead of 127, and a whole
// collection at GOMAXPROCS=1 in 81–88 ms instead of 88–94). The value's
// slice is capped at its length, so APPEND reallocates it; only the bit
// commands write into a string's bytes in place, within its length
// (cmd_bit.go). A value replaced later in place (INCR, APPEND, SETRANGE,
// a SETBIT that copies) makes the key three objects again and leaves its
// old bytes, at most sharedNameMax of them, behind the name for as long as
// something holds the name: the key, its expiry entry, a WATCH tombstone
// (at most 65,536), the scan index, a walk in progress. A snapshot's
// restore lays keys out the same way.
//
// A small hash's packed bytes (hashpack.go) of up to sharedNameMax move in
// the same way, and are then the hash's own (packOwned: the copy is new,
// nothing holds it); a new hash is built in the state machine's scratch
// (hashForWrite) until here, so a lock's hash costs the Value and this one
// allocation.
func (v *Value) takeName(key []byte) string {
	hash := v.Kind == KindHash && v.bigHash() == nil
	if v.Kind != KindString && !hash || len(v.Str) > sharedNameMax {
		return string(key)
	}
	buf := make([]byte, len(key)+len(v.Str))
	copy(buf, key)
	copy(buf[len(key):], v.Str)
	v.Str = buf[len(key):len(buf):len(buf)]
	if hash {
		v.agg = packOwned{}
	}
	return unsafe.String(unsafe.SliceData(buf), len(key))
}

// sharedNameMax is the longest string value takeName moves in with its
// key's name.
const sharedNameMax = 64

// keyString returns key as a string: v's name when that is key, so that
// no copy is made.
func (v *Value) keyString(key []byte) string {
	if v != nil && v.name == string(key) {
		return v.name
	}
	return string(key)
}

// keyspace is one logical database.
type keyspace struct {
	keys *keyTable
	scan *scanIndex // nil until a SCAN needs it
	// walks are the long reads in progress on it (walk.go).
	walks []*Walk
}

func newKeyspace() *keyspace {
	return &keyspace{keys: newKeyTable()}
}

// sortedKeys returns the database's key names in byte order (including
// keys that are expired but not yet reaped).
func (ks *keyspace) sortedKeys() []string {
	out := make([]string, 0, ks.keys.len())
	for k := range ks.keys.all() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (v *Value) expired(now int64) bool {
	return v.Deadline != 0 && v.Deadline <= now
}

// lookup returns the live value of key, or nil. An expired key is absent;
// when the command is applied through the log (not a read on the side) it
// is also removed, which every node does at the same point.
func (c *Ctx) lookup(key []byte) *Value {
	v := c.db.keys.getBytes(key)
	if v == nil {
		return nil
	}
	if c.f.mem.memOn() {
		c.memNote(v.keyString(key)) // its size before the command (maxmemory.go; not on the read path)
	}
	if v.expired(c.now) {
		if !c.readOnly {
			c.removeExpired(v.keyString(key), v)
			c.notify(notifyExpired, "expired", key)
		}
		return nil
	}
	return v
}

// lookupKind returns the live value of key if it has the given kind. ok is
// false when the key exists with another kind; the caller replies
// WRONGTYPE.
func (c *Ctx) lookupKind(key []byte, kind Kind) (v *Value, ok bool) {
	v = c.lookup(key)
	if v != nil && v.Kind != kind {
		return nil, false
	}
	return v, true
}

// put stores v under key as a new value (no deadline unless v has one)
// and marks the key changed.
func (c *Ctx) put(key []byte, v *Value) {
	c.mustWrite()
	k := v.takeName(key)
	if c.f.mem.memOn() {
		c.memNote(k)
	}
	c.f.version++
	v.Version = c.f.version
	v.name = k
	// Whether the key is new matters to a SCAN in progress and to "new"
	// events only: no lookup otherwise (SET's path).
	x := c.db.scan
	if x != nil || c.f.notify&notifyNew != 0 || len(c.db.walks) > 0 {
		existed := c.db.keys.get(k) != nil
		if x != nil && !existed && !x.noteAdded(k) {
			c.db.scan = nil
		}
		if !existed && len(c.db.walks) > 0 {
			c.db.walkTouched(k)
		}
		if !existed {
			defer c.notify(notifyNew, "new", key)
		}
	}
	c.db.keys.set(v)
	if v.Deadline != 0 {
		c.f.expires.add(c.dbIndex, k, v.Deadline)
		c.f.expires.compact(&c.f.dbs)
	}
}

// touch marks a key changed in place (HSET on an existing hash, ...).
func (c *Ctx) touch(v *Value) {
	c.mustWrite()
	c.f.version++
	v.Version = c.f.version
}

// setDeadline sets or clears (0) a key's expiry; the caller touches the
// key.
func (c *Ctx) setDeadline(key []byte, v *Value, deadline int64) {
	c.mustWrite()
	v.Deadline = deadline
	if deadline != 0 {
		c.f.expires.add(c.dbIndex, v.keyString(key), deadline)
		c.f.expires.compact(&c.f.dbs)
	}
}

// del removes key if it exists and is live; it reports whether it did.
func (c *Ctx) del(key []byte) bool {
	v := c.lookup(key)
	if v == nil {
		return false
	}
	c.remove(v.keyString(key))
	return true
}

// remove deletes a key unconditionally, leaving a tombstone for WATCH.
func (c *Ctx) remove(k string) {
	c.removeAs(k, 0, false)
}

// removeAs deletes a key, leaving a tombstone at version tomb (0: a new
// version); expired tells the lock counters why it went.
func (c *Ctx) removeAs(k string, tomb uint64, expired bool) {
	c.mustWrite()
	v := c.db.keys.get(k)
	if v == nil {
		return
	}
	if c.f.mem.memOn() {
		c.memNote(k)
	}
	if v.lock != 0 {
		c.lockGone(v, expired)
	}
	c.db.keys.del(k)
	if c.db.scan != nil {
		c.db.scan.noteRemoved()
	}
	if len(c.db.walks) > 0 {
		c.db.walkTouched(k)
	}
	c.f.version++
	if tomb == 0 {
		tomb = c.f.version
	}
	c.f.tombs.add(c.dbIndex, k, tomb)
}

// removeExpired deletes a key past its deadline. Its tombstone keeps the
// version WATCH saw for it while it was expired but present (keyVersion),
// so that a WATCH taken after the key had expired is not broken by the
// removal, as in Redis 7.0; one taken while it was live is.
func (c *Ctx) removeExpired(k string, v *Value) {
	c.removeAs(k, ^v.Version, true)
}

// removeIfEmpty deletes an aggregate that has no elements left, as Redis
// does after HDEL, LPOP, SREM, ZREM and friends.
func (c *Ctx) removeIfEmpty(key []byte, v *Value) {
	if v.len() == 0 {
		c.remove(v.keyString(key))
		c.notify(notifyGeneric, "del", key)
	}
}

func (v *Value) len() int {
	switch v.Kind {
	case KindString:
		return len(v.Str)
	case KindHash:
		return v.hash().Len()
	case KindList:
		return v.list().Len()
	case KindSet:
		return v.set().Len()
	case KindZSet:
		return v.zset().Len()
	}
	return 0
}

// mustWrite guards the read path: a handler that changes state while
// serving a read outside the log is a bug that would make replicas
// diverge.
func (c *Ctx) mustWrite() {
	if c.readOnly {
		panic("fsm: state change on the read path")
	}
}

// flush empties one database (or all with db < 0). Every key in it counts
// as changed for WATCH.
//
// As in Redis 7.0, a flush changes the version of the keys it removes and
// of no other: a WATCH of a key that did not exist survives it. Each
// removed key gets a tombstone at the flush's version, in (db, key) order
// so that every node keeps the same ones. Past maxTombstones keys that
// would drop tombstones anyway, so every absent key takes the flush's
// version instead (the floor): that aborts transactions Redis would run,
// which a client retries, and never runs one Redis would abort.
func (c *Ctx) flush(db int) {
	c.mustWrite()
	c.f.version++
	removed := 0
	for i := range c.f.dbs {
		if db < 0 || i == db {
			removed += c.f.dbs[i].keys.len()
		}
	}
	if removed > maxTombstones {
		c.f.tombs.reset(c.f.version)
	}
	for i := range c.f.dbs {
		if db >= 0 && i != db {
			continue
		}
		if removed <= maxTombstones {
			keys := make([]string, 0, c.f.dbs[i].keys.len())
			for k := range c.f.dbs[i].keys.all() {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				c.f.tombs.add(i, k, c.f.version)
			}
		}
		c.f.dbs[i] = newKeyspace()
	}
	c.db = c.f.dbs[c.dbIndex]
	c.f.expires.dropDB(db)
	c.memFlushed(db)
}
