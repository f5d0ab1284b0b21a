package raftlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
)

// One damaged copy of the stable file. Each set writes the same slot twice
// (stable.go), so a slot that fails its checks while the other passes is
// a write torn by a crash, or a byte damaged since; either way the other
// copy holds the last state a set returned with, and opening goes on from
// it. It does not go on silently: it rewrites the damaged copy from the
// good one in place (no new space; fdatasync), so that the file holds two
// copies again before raft's next election, and logs a warning naming the
// file, the copy and what was wrong with it. A failed rewrite fails the
// open, naming the file, as a failed set fails the store (failure.go).
// Both copies damaged stays a failed open (noValidSlot): an empty store
// would let the node vote twice in a term.

// repair rewrites a damaged copy from the valid one the state was loaded
// from, after load, and logs it; b is the file as read.
func (st *stable) repair(b []byte, logger *slog.Logger) error {
	if len(b) != 2*stableSlot {
		return nil // a new file, or one converted from the first layout
	}
	good := st.slot
	bad := 1 - good
	problem := slotProblem(b[bad*stableSlot : (bad+1)*stableSlot])
	if problem == "" || slotProblem(b[good*stableSlot:(good+1)*stableSlot]) != "" {
		return nil
	}
	op := "write"
	_, err := st.f.WriteAt(b[good*stableSlot:(good+1)*stableSlot], int64(bad*stableSlot))
	if err == nil {
		op = "fdatasync"
		err = fdatasync(st.f)
	}
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		return fmt.Errorf("raftlog: %s: copy %d of raft's term and vote was damaged (%s), and rewriting it from copy %d failed: %s: %w",
			st.path, bad+1, problem, good+1, op, err)
	}
	if logger != nil {
		logger.Warn("raftlog: one copy of raft's term and vote in the stable file was damaged; starting from the other copy, and rewrote the damaged one from it",
			"file", st.path, "copy", bad+1, "offset", bad*stableSlot, "problem", problem, "from_copy", good+1, "seq", st.seq)
	}
	return nil
}

// newerSlots refuses a slotted file that a newer build wrote (a slot of a
// newer format version). A slot that claims a newer version but fails this
// layout's checksum, beside a valid slot of this build's, is a damaged
// copy (a flipped byte in its version field), not a newer build's: every
// set writes both slots, so a newer build leaves both newer once one of
// its sets returns, and a set that did not return left the state of the
// other slot in force.
func newerSlots(path string, b []byte) error {
	if len(b) != 2*stableSlot {
		return nil
	}
	for i := range 2 {
		err := newerFormat(path, b[i*stableSlot:], stableMagic)
		if err == nil {
			continue
		}
		other := b[(1-i)*stableSlot : (2-i)*stableSlot]
		if !checksumOK(b[i*stableSlot:(i+1)*stableSlot]) && slotProblem(other) == "" {
			continue // damaged: load uses the other, repair says so
		}
		return err
	}
	return nil
}

// checksumOK reports whether a slot's checksum holds, whatever its magic.
func checksumOK(slot []byte) bool {
	n := binary.LittleEndian.Uint32(slot[16:])
	if int(n) > stableSlot-stableHead {
		return false
	}
	crc := crc32.Update(crc32.Checksum(slot[:20], crcTable), crcTable, slot[stableHead:stableHead+int(n)])
	return crc == binary.LittleEndian.Uint32(slot[20:])
}
