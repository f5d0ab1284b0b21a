package fsm

import (
	"cmp"
	"slices"
	"strings"
)

// scanIndex keeps a database's keys in SCAN's order, so that a SCAN call
// costs O(log N + COUNT) instead of hashing and sorting every key: a full
// iteration of a large database through COUNT 10 calls would otherwise be
// quadratic, and every call stalls the apply loop.
//
// It is a cache, never state: a SCAN reply depends only on the keys that
// exist (see cmdScan), so nodes whose indexes differ (one built, one not,
// one folded more recently) still answer alike. The first SCAN on the
// database builds it; then it follows the database's changes:
//   - a new key not already indexed goes into added, kept sorted and
//     small;
//   - a removed key keeps its entry, which SCAN skips while the key does
//     not exist, and which serves again if the key comes back (a lock's
//     key comes and goes all the time);
//   - SCAN folds added into sorted, dropping dead entries, once added or
//     the removals since the last fold grow large.
//
// A database that gains many keys with no SCAN to fold them drops its
// index; the next SCAN builds it again.
type scanIndex struct {
	sorted  []scanEntry // by (hash, key), each key once, some no longer existing
	added   []scanEntry // by (hash, key): keys new since the last fold
	removed int         // removals since the last fold: at most this many dead entries
}

const (
	scanFoldAdded = 1024 // SCAN folds added into sorted beyond this
	scanDropAdded = 8192 // with no SCAN, the index is dropped beyond this
)

type scanEntry struct {
	hash uint64
	key  string
}

func compareScan(a, b scanEntry) int {
	if c := cmp.Compare(a.hash, b.hash); c != 0 {
		return c
	}
	return strings.Compare(a.key, b.key)
}

// buildScanIndex orders every key of ks.
func buildScanIndex(ks *keyspace) *scanIndex {
	x := &scanIndex{sorted: make([]scanEntry, 0, ks.keys.len())}
	for k := range ks.keys.all() {
		x.sorted = append(x.sorted, scanEntry{scanHash(k), k})
	}
	slices.SortFunc(x.sorted, compareScan)
	return x
}

// noteAdded records a key that did not exist. It reports false when the
// index has fallen too far behind and should be dropped.
func (x *scanIndex) noteAdded(k string) bool {
	e := scanEntry{scanHash(k), k}
	if _, found := slices.BinarySearchFunc(x.sorted, e, compareScan); found {
		return true
	}
	i, found := slices.BinarySearchFunc(x.added, e, compareScan)
	if !found {
		x.added = slices.Insert(x.added, i, e)
	}
	return len(x.added) <= scanDropAdded
}

func (x *scanIndex) noteRemoved() { x.removed++ }

// fresh folds added into sorted, for a SCAN on ks, when added or the dead
// entries may have grown large.
func (x *scanIndex) fresh(ks *keyspace) {
	if len(x.added) <= scanFoldAdded && x.removed <= max(scanFoldAdded, len(x.sorted)/8) {
		return
	}
	merged := make([]scanEntry, 0, ks.keys.len())
	it := x.iter(ks, 0)
	for e, ok := it.next(); ok; e, ok = it.next() {
		merged = append(merged, e)
	}
	x.sorted, x.added, x.removed = merged, nil, 0
}

// iter walks the existing keys with hash >= from in SCAN order.
func (x *scanIndex) iter(ks *keyspace, from uint64) *scanIter {
	at := func(s []scanEntry) int {
		i, _ := slices.BinarySearchFunc(s, scanEntry{hash: from}, compareScan)
		return i
	}
	return &scanIter{ks: ks, a: x.sorted[at(x.sorted):], b: x.added[at(x.added):]}
}

// scanIter merges the two sorted runs (no key is in both), skipping keys
// that do not exist.
type scanIter struct {
	ks   *keyspace
	a, b []scanEntry
}

func (it *scanIter) next() (scanEntry, bool) {
	for len(it.a) > 0 || len(it.b) > 0 {
		var e scanEntry
		if len(it.b) == 0 || len(it.a) > 0 && compareScan(it.a[0], it.b[0]) < 0 {
			e, it.a = it.a[0], it.a[1:]
		} else {
			e, it.b = it.b[0], it.b[1:]
		}
		if it.ks.keys.get(e.key) != nil {
			return e, true
		}
	}
	return scanEntry{}, false
}
