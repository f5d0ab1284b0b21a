package fsm

import (
	"strconv"
	"testing"
)

// WATCH of a key that had already expired is not broken when expiry
// removes the key (Redis 7.0); WATCH of a live key that then expires is.
func TestWatchExpiredKeySurvivesReap(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	f.Apply(1000, args("SET gone v PX 10"))
	f.Apply(1000, args("SET live v PX 50"))
	atExpiry := f.KeyVersion(0, "gone", 2000) // expired, not yet removed
	whileLive := f.KeyVersion(0, "live", 1000)
	f.Apply(2000, ReapCommand(10))
	if got := f.KeyVersion(0, "gone", 2000); got != atExpiry {
		t.Errorf("the removal of an expired key changed the version WATCH saw: %d, was %d", got, atExpiry)
	}
	if got := f.KeyVersion(0, "live", 2000); got == whileLive {
		t.Error("a live key that expired kept the version WATCH saw")
	}
}

// When the tombstone of an expired key is dropped (too many tombstones),
// the floor that absent keys report does not jump to it: a key watched
// while absent, then created and deleted, still aborts the transaction
// once its own tombstone is dropped too.
func TestExpiredTombstoneLeavesTheFloor(t *testing.T) {
	var ts tombstones
	ts.reset(5)
	fill := func(from int) {
		for i := range maxTombstones + 1 {
			ts.add(1, "k"+strconv.Itoa(from+i), uint64(from+i))
		}
	}
	ts.add(0, "gone", ^uint64(7)) // an expired key's tombstone
	fill(10)                      // ... dropped
	watched := ts.version(0, "absent")
	ts.add(0, "absent", uint64(20+maxTombstones)) // created and deleted since the WATCH
	fill(30 + maxTombstones)                      // ... and its tombstone dropped too
	if got := ts.version(0, "absent"); got == watched {
		t.Errorf("a key changed since the WATCH reports the version it was watched at (%d)", got)
	}
	if ts.floor >= expiredTomb {
		t.Errorf("the floor took an expired key's tombstone: %d", ts.floor)
	}
}
