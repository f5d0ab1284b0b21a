package fsm

import (
	"container/heap"
	"sort"
)

// expiryIndex orders keys with a deadline by (deadline, db, key), so that
// active expiry removes them in the same order on every node: one heap of
// (deadline, key) per database, and the earliest of their tops is next
// (the lower database first at equal deadlines). An entry is 24 bytes,
// where one heap for all databases needed a database number in each (32).
// Entries are not removed when a deadline changes; a popped entry whose
// deadline no longer matches the key is skipped.
type expiryIndex struct {
	h     [NumDBs]expiryHeap
	n     int // entries in all heaps
	after int // n after the last compaction
}

type expiryEntry struct {
	deadline int64
	key      string
}

type expiryHeap []expiryEntry

func (a expiryEntry) less(b expiryEntry) bool {
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	return a.key < b.key
}

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].less(h[j]) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = expiryEntry{}
	*h = old[:len(old)-1]
	return e
}

func (x *expiryIndex) add(db int, key string, deadline int64) {
	// heap.Push without boxing the entry in an interface
	h := &x.h[db]
	*h = append(*h, expiryEntry{deadline: deadline, key: key})
	heap.Fix(h, len(*h)-1)
	x.n++
}

// compact drops stale and duplicate entries once the heaps have grown to
// four times their size after the last compaction (keys renewed or
// deleted long before their deadline leave entries behind). Which keys
// active expiry removes, and in what order, does not change: only entries
// it would skip are dropped. The live entries are sorted, which makes
// duplicates neighbours and leaves a valid heap, without the memory a set
// of them would take.
func (x *expiryIndex) compact(dbs *[NumDBs]*keyspace) {
	if x.n < 4096 || x.n < 4*x.after {
		return
	}
	x.n = 0
	for db := range x.h {
		h := x.h[db]
		kept := h[:0]
		for _, e := range h {
			if v := dbs[db].keys.get(e.key); v != nil && v.Deadline == e.deadline {
				kept = append(kept, e)
			}
		}
		sort.Slice(kept, func(i, j int) bool { return kept[i].less(kept[j]) })
		out := kept[:0]
		for i, e := range kept {
			if i == 0 || e != kept[i-1] {
				out = append(out, e)
			}
		}
		clear(h[len(out):])
		if cap(out) > 2*len(out)+64 {
			out = append(expiryHeap(nil), out...)
		}
		x.h[db] = out
		x.n += len(out)
	}
	x.after = x.n
}

func (x *expiryIndex) dropDB(db int) {
	if db < 0 {
		*x = expiryIndex{}
		return
	}
	x.n -= len(x.h[db])
	x.h[db] = nil
}

// next returns the database whose heap holds the earliest entry, and
// false if every heap is empty.
func (x *expiryIndex) next() (int, bool) {
	best := -1
	for db := range x.h {
		if len(x.h[db]) > 0 && (best < 0 || x.h[db][0].deadline < x.h[best][0].deadline) {
			best = db
		}
	}
	return best, best >= 0
}

// NextDeadline returns the earliest deadline in the expiry index (which may
// belong to a key whose deadline has since changed), and false if none.
// The node uses it to decide when to propose active expiry.
func (f *FSM) NextDeadline() (int64, bool) {
	db, ok := f.expires.next()
	if !ok {
		return 0, false
	}
	return f.expires.h[db][0].deadline, true
}

// reap removes up to limit expired keys, earliest deadline first, and
// returns how many it removed.
func (c *Ctx) reap(limit int) int {
	n := 0
	x := &c.f.expires
	for n < limit {
		db, ok := x.next()
		if !ok || x.h[db][0].deadline > c.now {
			break
		}
		e := heap.Pop(&x.h[db]).(expiryEntry)
		x.n--
		v := c.f.dbs[db].keys.get(e.key)
		if v == nil || v.Deadline != e.deadline {
			continue // stale entry
		}
		saved := c.dbIndex
		c.selectDB(db)
		c.removeExpired(e.key, v)
		c.notify(notifyExpired, "expired", []byte(e.key))
		c.selectDB(saved)
		n++
	}
	return n
}
