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
	for _, v := range ks.keys {
		if v.Deadline != 0 {
			expires++
		}
	}
	return len(ks.keys), expires
}

// Summary counts what the metrics endpoint reports of the state machine.
type Summary struct {
	Keys, Expires        int // in every database; Expires: keys with a deadline
	Scripts              int // cached script bodies
	Functions, Libraries int
}

// Summary counts the whole state machine's keys (visiting each key, as
// Stats does), scripts and functions. The caller serialises it with Apply.
func (f *FSM) Summary() Summary {
	s := Summary{Scripts: len(f.scripts), Functions: len(f.functions), Libraries: len(f.libraries)}
	for db := range NumDBs {
		k, e := f.Stats(db)
		s.Keys += k
		s.Expires += e
	}
	return s
}
