package raftlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// errNotFound's text is what raft compares against ("not found").
var errNotFound = errors.New("not found")

// stable is raft's stable store: a few small keys (current term, last
// vote) written on elections. hashicorp/raft cannot go on when one of
// those writes fails (it panics when it cannot save a new term), so the
// store never needs new space for them: its file has a fixed size, two
// slots of stableSlot bytes, allocated when the file is made, and each set
// overwrites the slot not holding the newest state, fdatasyncs, then does
// the same to the other. A full disk (ENOSPC) therefore never fails a set
// on a file system that overwrites in place (a copy-on-write one may
// need new blocks for an overwrite: then it fails the store, failure.go);
// a torn write leaves the other slot, and a bit flipped in one slot later
// leaves its copy.
type stable struct {
	path string
	mu   sync.Mutex
	f    *os.File
	kv   map[string][]byte
	seq  uint64 // the newest slot's sequence number
	slot int    // the slot that holds it
	// err is the failed write or sync that ended the file (failure.go):
	// every later set returns it without writing.
	err *ErrFailed
}

// A slot: magic, u64 sequence, u32 payload length, u32 CRC-32C of those
// and the payload, then the payload (for each key in order uvarint length +
// key, uvarint length + value) and zeros. The newer of two valid slots
// holds the state.
const (
	stableSlot = 4096
	stableHead = 8 + 8 + 4 + 4
)

var stableMagic = [8]byte{'d', 'b', 's', 't', 'b', 'l', 0, 1}

// Raft saves a vote in two sets: LastVoteTerm, then LastVoteCand
// (hashicorp/raft persistVote). A set of LastVoteTerm to a new term drops
// LastVoteCand in the same slot write, so a failure or crash between the
// two leaves "no vote in the new term" (raft then reads no candidate and
// may vote), never the previous term's candidate under the new term (which
// raft would read as a vote it never gave). The format is unchanged: the
// key is simply absent, as before a node's first vote. A set of the same
// term keeps the candidate (raft never saves a vote twice in a term, but
// dropping one it gave would let it vote again).
const (
	keyLastVoteTerm = "LastVoteTerm"
	keyLastVoteCand = "LastVoteCand"
)

// errStableFull: the keys and values do not fit in a slot (raft's few
// keys take well under a hundred bytes).
var errStableFull = errors.New("raftlog: stable store: the keys do not fit in a slot")

// openStable opens the stable file at path; logger (nil: none) gets a
// warning if one copy was damaged (stablerepair.go).
func openStable(path string, logger *slog.Logger) (*stable, error) {
	st := &stable{path: path, kv: map[string][]byte{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		b = nil
	case err != nil:
		return nil, err
	}
	if err := newerSlots(path, b); err != nil {
		return nil, err
	}
	if len(b) == 2*stableSlot && (isSlot(b[:stableSlot]) || isSlot(b[stableSlot:])) {
		if err := st.load(b); err != nil {
			return nil, err
		}
	} else {
		// No file yet, or one written by an earlier build (the whole
		// state after a CRC, replaced through a temporary file): it
		// becomes a slotted file now, while opening may still fail.
		if len(b) > 0 {
			if err := st.loadV1(b); err != nil {
				if len(b) == 2*stableSlot {
					// The slotted file's size, neither copy's
					// header intact: say so rather than a V1
					// checksum.
					return nil, st.noValidSlot(b)
				}
				return nil, err
			}
		}
		st.seq, st.slot = 1, 0
		img := make([]byte, 2*stableSlot)
		if _, err := st.encodeSlot(img[:stableSlot], st.seq, "", nil, ""); err != nil {
			return nil, err
		}
		if err := writeFileAtomic(path, img); err != nil {
			return nil, err
		}
	}
	if st.f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	if err := st.repair(b, logger); err != nil {
		st.f.Close()
		return nil, err
	}
	return st, nil
}

func isSlot(b []byte) bool { return [8]byte(b[:8]) == stableMagic }

// load reads a slotted file: the newer valid slot holds the state. A slot
// whose magic is there and whose CRC fails is a write torn by a crash if
// the other slot is valid; with no valid slot the file is corrupt.
func (st *stable) load(b []byte) error {
	best := -1
	var bestSeq uint64
	var payload []byte
	for i := range 2 {
		slot := b[i*stableSlot : (i+1)*stableSlot]
		if slotProblem(slot) != "" {
			continue
		}
		seq := binary.LittleEndian.Uint64(slot[8:])
		n := binary.LittleEndian.Uint32(slot[16:])
		if best < 0 || seq > bestSeq {
			best, bestSeq, payload = i, seq, slot[stableHead:stableHead+int(n)]
		}
	}
	if best < 0 {
		return st.noValidSlot(b)
	}
	st.seq, st.slot = bestSeq, best
	return st.parse(payload)
}

// slotProblem says what is wrong with a slot: "" if it is valid.
func slotProblem(slot []byte) string {
	switch {
	case string(slot[:6]) == string(stableMagic[:6]) && !isSlot(slot):
		return fmt.Sprintf("its header's format version is damaged (reads %d)", binary.BigEndian.Uint16(slot[6:8]))
	case !isSlot(slot):
		return "its header is damaged (not a stable slot's magic bytes)"
	}
	if n := binary.LittleEndian.Uint32(slot[16:]); int(n) > stableSlot-stableHead {
		return fmt.Sprintf("its length %d is larger than a slot", n)
	}
	if !checksumOK(slot) {
		return "checksum mismatch"
	}
	return ""
}

// noValidSlot is the error for a slotted file with neither copy valid:
// the term and vote are gone (opening must fail: an empty store would let
// the node vote twice in one term).
func (st *stable) noValidSlot(b []byte) error {
	return fmt.Errorf("%w: %s: no slot with a valid checksum: both copies of raft's term and vote are damaged (copy 1 at byte 0: %s; copy 2 at byte %d: %s)",
		ErrCorrupt, st.path, slotProblem(b[:stableSlot]), stableSlot, slotProblem(b[stableSlot:]))
}

// loadV1 reads the format of earlier builds: u32 CRC-32C of the rest,
// then the fields.
func (st *stable) loadV1(b []byte) error {
	if len(b) < 4 || crc32.Checksum(b[4:], crcTable) != binary.LittleEndian.Uint32(b) {
		return fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, st.path)
	}
	return st.parse(b[4:])
}

func (st *stable) parse(rest []byte) error {
	for len(rest) > 0 {
		var k, v []byte
		var err error
		if k, rest, err = takeBytes(rest, true); err == nil {
			v, rest, err = takeBytes(rest, true)
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, st.path, err)
		}
		st.kv[string(k)] = v
	}
	return nil
}

// encodeSlot writes into slot the state with key set to val (key "": the
// state as it is) and without the key drop ("": none) under sequence seq.
func (st *stable) encodeSlot(slot []byte, seq uint64, key string, val []byte, drop string) (int, error) {
	b := slot[:stableHead:stableSlot]
	for _, k := range slices.Sorted(maps.Keys(st.kv)) {
		if k == key || (drop != "" && k == drop) {
			continue
		}
		b = appendField(appendField(b, []byte(k)), st.kv[k])
	}
	if key != "" {
		b = appendField(appendField(b, []byte(key)), val)
	}
	if len(b) > stableSlot {
		return 0, errStableFull
	}
	n := len(b)
	if &b[0] != &slot[0] {
		copy(slot, b)
	}
	clear(slot[n:])
	copy(slot, stableMagic[:])
	binary.LittleEndian.PutUint64(slot[8:], seq)
	binary.LittleEndian.PutUint32(slot[16:], uint32(n-stableHead))
	crc := crc32.Update(crc32.Checksum(slot[:20], crcTable), crcTable, slot[stableHead:n])
	binary.LittleEndian.PutUint32(slot[20:], crc)
	return n, nil
}

func (st *stable) get(key string) ([]byte, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	v, ok := st.kv[key]
	if !ok {
		return nil, errNotFound
	}
	return slices.Clone(v), nil
}

// set writes the state with key set to val over the older slot, in place
// (no new block is needed), and syncs it.
func (st *stable) set(key string, val []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.f == nil {
		return ErrClosed
	}
	if st.err != nil {
		return st.err
	}
	drop := ""
	if old, ok := st.kv[keyLastVoteTerm]; key == keyLastVoteTerm && (!ok || !bytes.Equal(old, val)) {
		drop = keyLastVoteCand // one write for the new term and "no candidate yet"
	}
	slot := make([]byte, stableSlot)
	if _, err := st.encodeSlot(slot, st.seq+1, key, val, drop); err != nil {
		return err
	}
	// Both slots, one after the other, each synced: a torn write of
	// either leaves the other whole (the state before the set, or after
	// it), and once the set returns a damaged slot (a flipped bit) has an
	// identical copy, so the term and vote never fall back to an older
	// state that raft may have acted past.
	//
	// A failed write or fdatasync ends the file for good (failure.go):
	// what it holds is known only by reading it again, at a restart.
	target := 1 - st.slot
	for _, i := range []int{target, st.slot} {
		op := "write"
		_, err := st.f.WriteAt(slot, int64(i*stableSlot))
		if err == nil {
			op = "fdatasync"
			err = fdatasync(st.f)
		}
		if err != nil {
			if pe, ok := err.(*os.PathError); ok {
				err = pe.Err // ErrFailed names the file
			}
			st.err = &ErrFailed{Path: st.path, Op: op, Err: err, Key: key}
			return st.err
		}
	}
	st.seq, st.slot = st.seq+1, target
	st.kv[key] = slices.Clone(val)
	if drop != "" {
		delete(st.kv, drop)
	}
	return nil
}

func (st *stable) close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.f == nil {
		return nil
	}
	err := st.f.Close()
	st.f = nil
	return err
}

func appendField(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// The meta file holds the log's first index: u64 index, u32 CRC-32C of it.
func readMeta(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 12 || crc32.Checksum(b[:8], crcTable) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("%w: %s", ErrCorrupt, path)
	}
	return binary.LittleEndian.Uint64(b), nil
}

func writeMeta(dir string, first uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, first)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	return writeFileAtomic(filepath.Join(dir, "meta"), b)
}

// writeFileAtomic replaces path with b so that a crash leaves either the
// old or the new content.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("raftlog: write %s: %w", filepath.Base(path), err)
	}
	return nil
}
