package fsm

// Key versions make WATCH replicable. Every change to a key stamps it with
// the next value of f.version. WATCH records the version a key has; EXEC
// carries those versions into the log, and the transaction is applied only
// if every watched key still has the version it had, on every node alike.
//
// A deleted key keeps its version in a tombstone, so that a key created
// and deleted again between WATCH and EXEC still aborts the transaction.
// Tombstones are bounded: the oldest are dropped, and a key without a
// tombstone reports the highest version ever dropped (the floor). That can
// abort a transaction that Redis would have run (EXEC then returns nil and
// the client retries), never the reverse.

const maxTombstones = 1 << 16

type tombKey struct {
	db  int
	key string
}

type tombstones struct {
	byKey map[tombKey]uint64
	order []tombEntry // oldest first; an entry is stale once its key's tombstone moved on
	head  int
	floor uint64
}

type tombEntry struct {
	k tombKey
	v uint64
}

// expiredTomb: versions from here up are the tombstones of expired keys.
const expiredTomb = 1 << 63

func (t *tombstones) add(db int, key string, version uint64) {
	if t.byKey == nil {
		t.byKey = make(map[tombKey]uint64)
	}
	k := tombKey{db, key}
	t.byKey[k] = version
	t.order = append(t.order, tombEntry{k, version})
	for len(t.byKey) > maxTombstones {
		old := t.order[t.head]
		t.order[t.head] = tombEntry{}
		t.head++
		if v, ok := t.byKey[old.k]; ok && v == old.v {
			delete(t.byKey, old.k)
			// A key removed by expiry has the complement of its last
			// version (removeExpired): not a point in the sequence, and
			// no floor for the keys that never changed.
			if v < expiredTomb {
				t.floor = max(t.floor, v)
			}
		}
	}
	if len(t.order)-t.head > 2*len(t.byKey)+1024 {
		t.order = t.liveEntries()
		t.head = 0
	}
}

// liveEntries returns the queue without stale entries, oldest first.
func (t *tombstones) liveEntries() []tombEntry {
	out := make([]tombEntry, 0, len(t.byKey))
	for _, e := range t.order[t.head:] {
		if v, ok := t.byKey[e.k]; ok && v == e.v {
			out = append(out, e)
		}
	}
	return out
}

// reset drops every tombstone; absent keys all report version v.
func (t *tombstones) reset(v uint64) {
	t.byKey = nil
	t.order = nil
	t.head = 0
	t.floor = v
}

func (t *tombstones) version(db int, key string) uint64 {
	if v, ok := t.byKey[tombKey{db, key}]; ok {
		return v
	}
	return t.floor
}

// keyVersion is the version WATCH records for a key. A key that is
// present but past its deadline reports a value distinct from its live
// version, so that expiry between WATCH and EXEC aborts the transaction.
func (f *FSM) keyVersion(db int, key string, now int64) uint64 {
	v := f.dbs[db].keys.get(key)
	if v == nil {
		return f.tombs.version(db, key)
	}
	if v.expired(now) {
		return ^v.Version
	}
	return v.Version
}

// KeyVersion is keyVersion for WATCH, at the given time (or the state
// machine's own, if later).
func (f *FSM) KeyVersion(db int, key string, now int64) uint64 {
	return f.keyVersion(db, key, max(now, f.now))
}
