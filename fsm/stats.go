package fsm

// Stats counts a database's keys and the keys among them with a deadline,
// for INFO keyspace. Keys past their deadline that are not yet reaped
// count, as in Redis. It reads state only; the caller serialises it with
// Apply. An index outside 0..NumDBs-1 has no keys.
func (f *FSM) Stats(db int) (keys, expires int) {
	if db < 0 || db >= NumDBs {
		return 0, 0
	}
	ks := f.dbs[db]
	for _, v := range ks.keys.all() {
		if v.Deadline != 0 {
			expires++
		}
	}
	return ks.keys.len(), expires
}

// Summary counts what the metrics endpoint reports of the state machine.
type Summary struct {
	Keys, Expires        int // in every database; Expires: keys with a deadline
	Scripts              int // cached script bodies
	Functions, Libraries int
	// Bytes is the logical size of the data: key names and the bytes of
	// every value as clients wrote them (a sorted set's score counts 8),
	// without the structures that hold them.
	Bytes int64
	// LocksHeld counts, by LockKind, the lock-shaped keys present and not
	// past their deadline at the state machine's clock (the time of the
	// last entry applied): string and Redisson locks held, semaphores
	// that exist (whatever their permits).
	LocksHeld [NumLockKinds]int
	// MaxmemoryUsed is the size maxmemory limits (MEMORY USAGE's
	// estimate summed over the keys, maxmemory.go), Maxmemory the limit
	// (0 for none: the size is then not counted, and 0).
	MaxmemoryUsed, Maxmemory int64
}

// Summary counts the whole state machine: it visits every key and every
// element of each value. The caller serialises it with Apply.
func (f *FSM) Summary() Summary {
	s := Summary{Scripts: len(f.scripts), Functions: len(f.functions), Libraries: len(f.libraries),
		MaxmemoryUsed: f.mem.total, Maxmemory: f.mem.limit}
	for _, ks := range f.dbs {
		s.Keys += ks.keys.len()
		for k, v := range ks.keys.all() {
			if v.Deadline != 0 {
				s.Expires++
			}
			s.Bytes += int64(len(k)) + v.payload()
			if lk, ok := v.lock.kind(); ok && !v.expired(f.now) {
				s.LocksHeld[lk]++
			}
		}
	}
	return s
}

// payload is the bytes a value holds, as clients wrote them.
func (v *Value) payload() int64 {
	var n int64
	switch {
	case v.Kind == KindHash:
		v.hash().peekEach(func(f, val []byte) bool {
			n += int64(len(f) + len(val))
			return true
		})
	case v.list() != nil:
		for i := range v.list().Len() {
			n += int64(len(v.list().Index(i)))
		}
	case v.set() != nil:
		for m := range v.set().members {
			n += int64(len(m))
		}
	case v.zset() != nil:
		for m := range v.zset().scores {
			n += int64(len(m)) + 8
		}
	default:
		n = int64(len(v.Str))
	}
	return n
}
