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
