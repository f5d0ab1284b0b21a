package raftlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func open(t *testing.T, dir string, segSize int64) *Store {
	t.Helper()
	s, err := Open(dir, Options{SegmentSize: segSize})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(index, term uint64) *raft.Log {
	return &raft.Log{
		Index: index, Term: term, Type: raft.LogCommand,
		Data:       fmt.Appendf(nil, "entry %d of term %d %s", index, term, bytes.Repeat([]byte{'x'}, int(index%50))),
		AppendedAt: time.Unix(1700000000, int64(index)*1000),
	}
}

func entries(from, to, term uint64) []*raft.Log {
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, entry(i, term))
	}
	return ls
}

// checkRange asserts that s holds exactly first..last with the given terms.
func checkRange(t *testing.T, s *Store, first, last uint64, termOf func(uint64) uint64) {
	t.Helper()
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	if f != first || l != last {
		t.Fatalf("range %d..%d, want %d..%d", f, l, first, last)
	}
	for i := first; i <= last && last != 0; i++ {
		var got raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		want := entry(i, termOf(i))
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type ||
			!bytes.Equal(got.Data, want.Data) || !got.AppendedAt.Equal(want.AppendedAt) || got.Extensions != nil {
			t.Fatalf("GetLog(%d) = %+v, want %+v", i, got, want)
		}
	}
	var got raft.Log
	for _, i := range []uint64{first - 1, last + 1} {
		if i == 0 {
			continue
		}
		if err := s.GetLog(i, &got); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("GetLog(%d) outside the log: %v", i, err)
		}
	}
}

func term1(uint64) uint64 { return 1 }

// appendChunks stores from..to in appends of 5 entries, so that a small
// segment size spreads them over several segments.
func appendChunks(t *testing.T, s *Store, from, to, term uint64) {
	t.Helper()
	for i := from; i <= to; i += 5 {
		if err := s.StoreLogs(entries(i, min(i+4, to), term)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStoreAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 512) // a few entries per segment
	checkRange(t, s, 0, 0, term1)
	if err := s.StoreLogs(entries(1, 40, 1)); err != nil {
		t.Fatal(err)
	}
	for i := uint64(41); i <= 100; i++ {
		if err := s.StoreLog(entry(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	checkRange(t, s, 1, 100, term1)
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) < 5 {
		t.Fatalf("%d segments, want several with a 512-byte segment size", len(segs))
	}
	if err := s.StoreLog(entry(102, 1)); err == nil {
		t.Fatal("an entry after a gap was stored")
	}
	if err := s.StoreLog(entry(100, 1)); err == nil {
		t.Fatal("an entry below the last was stored")
	}
	s.Close()
	if err := s.StoreLog(entry(101, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("StoreLog after Close: %v", err)
	}
	s = open(t, dir, 512)
	checkRange(t, s, 1, 100, term1)
	if err := s.StoreLog(entry(101, 1)); err != nil {
		t.Fatal(err)
	}
	checkRange(t, s, 1, 101, term1)
}

// The case raft-wal v0.4.0 fails: raft truncates the suffix (a follower
// dropping a deposed leader's entries), appends the new leader's, and the
// node restarts.
func TestStoreSuffixTruncationThenReopen(t *testing.T) {
	for _, segSize := range []int64{DefaultSegmentSize, 600} {
		t.Run(fmt.Sprint(segSize), func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, segSize)
			appendChunks(t, s, 1, 60, 1)
			if err := s.DeleteRange(31, 60); err != nil {
				t.Fatal(err)
			}
			termOf := func(i uint64) uint64 {
				if i > 30 {
					return 2
				}
				return 1
			}
			checkRange(t, s, 1, 30, termOf)
			if err := s.StoreLogs(entries(31, 45, 2)); err != nil {
				t.Fatal(err)
			}
			checkRange(t, s, 1, 45, termOf)
			s.Close()
			s = open(t, dir, segSize)
			checkRange(t, s, 1, 45, termOf)
			if err := s.StoreLogs(entries(46, 50, 2)); err != nil {
				t.Fatal(err)
			}
			checkRange(t, s, 1, 50, termOf)
		})
	}
}

func TestStorePrefixDeletionSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 600)
	appendChunks(t, s, 1, 80, 1)
	before, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err := s.DeleteRange(1, 37); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(after) >= len(before) {
		t.Fatalf("segments %d before and %d after compaction", len(before), len(after))
	}
	checkRange(t, s, 38, 80, term1)
	s.Close()
	// Entries 1..37 that share a segment with 38 are still on disk, but
	// the log starts at 38.
	s = open(t, dir, 600)
	checkRange(t, s, 38, 80, term1)
}

// After an installed snapshot raft empties the log (the store is
// monotonic) and starts again past the snapshot, perhaps below the old
// last index.
func TestStoreDeleteAllThenRestartElsewhere(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 600)
	appendChunks(t, s, 1, 50, 1)
	if !s.IsMonotonic() {
		t.Fatal("the store must be monotonic")
	}
	if err := s.DeleteRange(1, 50); err != nil {
		t.Fatal(err)
	}
	checkRange(t, s, 0, 0, term1)
	if segs, _ := filepath.Glob(filepath.Join(dir, "*.seg")); len(segs) != 0 {
		t.Fatalf("segments left: %v", segs)
	}
	if err := s.StoreLogs(entries(41, 45, 3)); err != nil { // below the deleted 50
		t.Fatal(err)
	}
	termOf := func(uint64) uint64 { return 3 }
	checkRange(t, s, 41, 45, termOf)
	s.Close()
	s = open(t, dir, 600)
	checkRange(t, s, 41, 45, termOf)
	if err := s.DeleteRange(41, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(200, 210, 3)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 600)
	checkRange(t, s, 200, 210, termOf)
}

func TestStoreDeleteFromMiddleRefused(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(3, 5); err == nil {
		t.Fatal("deleting from the middle succeeded")
	}
	checkRange(t, s, 1, 10, term1)
}

// A crash during an append leaves part of a record at the end of the last
// segment: opening drops it, and appending goes on from there.
func TestStoreTornTail(t *testing.T) {
	// (Not 1: the last byte of a record without extensions is a zero,
	// which the zero-filled segment already holds.)
	for _, cut := range []int{2, 4, 9, 20} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, 0)
			if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
				t.Fatal(err)
			}
			s.Close()
			// Right after the last record, where the next append goes.
			end := int64(headerSize)
			for _, l := range entries(1, 10, 1) {
				end += int64(len(appendRecord(nil, l, 1)))
			}
			rec := appendRecord(nil, entry(11, 1), 11)
			seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
			f, err := os.OpenFile(seg, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(rec[:len(rec)-cut], end)
			f.Close()
			s = open(t, dir, 0)
			checkRange(t, s, 1, 10, term1)
			if err := s.StoreLogs(entries(11, 12, 1)); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = open(t, dir, 0)
			checkRange(t, s, 1, 12, term1)
		})
	}
}

func TestStoreCorruptionBeforeTheTailFails(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 600)
	appendChunks(t, s, 1, 60, 1)
	s.Close()
	seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+recordHead+20] ^= 0xff
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{SegmentSize: 600}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a damaged first segment: %v", err)
	}
}

// A crash in the middle of a suffix deletion, after the later segments were
// removed but before the cut: the log is the old one's prefix.
func TestStoreSegmentsMustFollow(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 600)
	appendChunks(t, s, 1, 60, 1)
	s.Close()
	unmark(t, dir) // a crash: the synced mark had not been raised
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	slices.Sort(segs)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	// Removing the last segment (what a suffix deletion does first)
	// leaves a valid shorter log.
	os.Remove(segs[len(segs)-1])
	s = open(t, dir, 600)
	last, _ := s.LastIndex()
	if last == 0 || last >= 60 {
		t.Fatalf("last index %d after removing the last segment", last)
	}
	checkRange(t, s, 1, last, term1)
	s.Close()
	// A hole in the middle is not a log.
	os.Remove(segs[1])
	if _, err := Open(dir, Options{SegmentSize: 600}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a missing middle segment: %v", err)
	}
}

func TestStable(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 0)
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v (raft wants the text \"not found\")", err)
	}
	if _, err := s.Get([]byte("LastVoteCand")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v", err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("node-b")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 8); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 0)
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 8 {
		t.Fatalf("CurrentTerm = %d, %v", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-b" {
		t.Fatalf("LastVoteCand = %q, %v", v, err)
	}
	s.Close()
	// A torn write leaves the other slot: the state before the set (7), or
	// after it. A bit flipped in a slot after the set leaves its copy: the
	// state after it (8), never the one before, which raft may have acted
	// past (a vote given in term 8 forgotten).
	p := filepath.Join(dir, "stable")
	img8, _ := os.ReadFile(p)
	if len(img8) != 2*stableSlot {
		t.Fatalf("stable file has %d bytes, want %d", len(img8), 2*stableSlot)
	}
	readTerm := func(img []byte) uint64 {
		t.Helper()
		os.WriteFile(p, img, 0o644)
		s := open(t, dir, 0)
		defer s.Close()
		v, err := s.GetUint64([]byte("CurrentTerm"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var img7 []byte
	{
		d7 := t.TempDir()
		s7 := open(t, d7, 0)
		s7.SetUint64([]byte("CurrentTerm"), 7)
		s7.Set([]byte("LastVoteCand"), []byte("node-b"))
		s7.Close()
		img7, _ = os.ReadFile(filepath.Join(d7, "stable"))
	}
	for i := range 2 {
		flipped := slices.Clone(img8)
		flipped[i*stableSlot+stableHead] ^= 1
		if v := readTerm(flipped); v != 8 {
			t.Fatalf("slot %d flipped after the set: CurrentTerm %d, want 8", i, v)
		}
		torn := slices.Clone(img7)
		copy(torn[i*stableSlot:(i+1)*stableSlot], img8[i*stableSlot:(i+1)*stableSlot])
		torn[i*stableSlot+stableHead+2] ^= 1
		if v := readTerm(torn); v != 7 {
			t.Fatalf("slot %d torn during the set: CurrentTerm %d, want 7", i, v)
		}
	}
	b := slices.Clone(img8)
	newest := 0
	b[newest*stableSlot+stableHead] ^= 1
	// Both slots damaged is an error, not an empty store (which would
	// let the node vote twice in one term).
	b[(1-newest)*stableSlot+stableHead] ^= 1
	os.WriteFile(p, b, 0o644)
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a damaged stable file: %v", err)
	}
}

// TestStableOldFormat: a stable file of earlier builds (a CRC, then the
// fields, replaced whole on each set) is read and rewritten in slots.
func TestStableOldFormat(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	b = appendField(appendField(make([]byte, 4), []byte("CurrentTerm")), binary.BigEndian.AppendUint64(nil, 41))
	b = appendField(appendField(b, []byte("LastVoteCand")), []byte("node-c"))
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], crcTable))
	if err := os.WriteFile(filepath.Join(dir, "stable"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, 0)
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 41 {
		t.Fatalf("CurrentTerm = %d, %v", v, err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 0)
	defer s.Close()
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("CurrentTerm = %d, %v", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-c" {
		t.Fatalf("LastVoteCand = %q, %v", v, err)
	}
	// A damaged old file is still an error.
	b[len(b)-1] ^= 1
	dir2 := t.TempDir()
	os.WriteFile(filepath.Join(dir2, "stable"), b, 0o644)
	if _, err := Open(dir2, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a damaged old stable file: %v", err)
	}
}

// TestStoreAgainstModel drives the store and raft's in-memory store with
// the same random appends, suffix and prefix deletions and reopens, and
// compares them after every step.
func TestStoreAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			dir := t.TempDir()
			segSize := int64(300 + rng.IntN(3000))
			s := open(t, dir, segSize)
			model := raft.NewInmemStore()
			term := uint64(1)
			for step := 0; step < 400; step++ {
				first, _ := model.FirstIndex()
				last, _ := model.LastIndex()
				switch op := rng.IntN(10); {
				case op < 6: // append
					n := uint64(1 + rng.IntN(20))
					from := last + 1
					if last == 0 {
						from = 1 + uint64(rng.IntN(500))
					}
					ls := entries(from, from+n-1, term)
					if err := s.StoreLogs(ls); err != nil {
						t.Fatal(err)
					}
					model.StoreLogs(ls)
				case op == 6 && last > 0: // suffix
					min := first + uint64(rng.IntN(int(last-first+1)))
					if err := s.DeleteRange(min, last); err != nil {
						t.Fatal(err)
					}
					model.DeleteRange(min, last)
					term++
				case op == 7 && last > 0: // prefix, sometimes all of it
					max := first + uint64(rng.IntN(int(last-first+2)))
					if err := s.DeleteRange(first, max); err != nil {
						t.Fatal(err)
					}
					model.DeleteRange(first, max)
				case op == 8:
					s.Close()
					s = open(t, dir, segSize)
				}
				compareModel(t, s, model)
			}
		})
	}
}

func compareModel(t *testing.T, s *Store, model *raft.InmemStore) {
	t.Helper()
	mf, _ := model.FirstIndex()
	ml, _ := model.LastIndex()
	if ml < mf { // the in-memory store keeps stale bounds once emptied
		mf, ml = 0, 0
	}
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	if f != mf || l != ml {
		t.Fatalf("range %d..%d, model %d..%d", f, l, mf, ml)
	}
	for i := f; i <= l && l != 0; i++ {
		var got, want raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		model.GetLog(i, &want)
		if got.Term != want.Term || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("index %d: term %d, model %d", i, got.Term, want.Term)
		}
	}
}

func BenchmarkStoreLogs(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte{'x'}, 2000) // a batch of ~30 lock commands
	next := uint64(1)
	for b.Loop() {
		if err := s.StoreLogs([]*raft.Log{{Index: next, Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// A crash after a spare file became a segment but before its first append
// was synced leaves a last segment with no header: it held nothing that
// was acknowledged, and opening drops it.
func TestStoreNewSegmentWithoutHeader(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	if err := s.StoreLogs(entries(1, 5, 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.seg", 6)), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, 4096)
	checkRange(t, s, 1, 5, term1)
	if err := s.StoreLogs(entries(6, 7, 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 4096)
	checkRange(t, s, 1, 7, term1)
	s.Close()
	// A damaged header is not a new segment: it may have held
	// acknowledged entries.
	seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1)) // the last one
	b, _ := os.ReadFile(seg)
	b[3] ^= 0xff
	os.WriteFile(seg, b, 0o644)
	if _, err := Open(dir, Options{SegmentSize: 4096}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a damaged header: %v", err)
	}
}

// Segments are zero-filled ahead of use and records end at a zero length;
// after a suffix deletion, the shorter entries that replace the deleted
// ones must not let what is left of those read as records again.
func TestStoreZeroFilledSuffix(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	long := func(i, term uint64) *raft.Log {
		l := entry(i, term)
		l.Data = bytes.Repeat([]byte{'y'}, 300)
		return l
	}
	var old []*raft.Log
	for i := uint64(1); i <= 20; i++ {
		old = append(old, long(i, 1))
	}
	if err := s.StoreLogs(old); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))); st.Size() != 1<<20 {
		t.Fatalf("segment of %d bytes, want it preallocated to %d", st.Size(), 1<<20)
	}
	if err := s.DeleteRange(11, 20); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(11, 12, 2)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, 1<<20)
	if last, _ := s.LastIndex(); last != 12 {
		t.Fatalf("last index %d after reopening, want 12", last)
	}
	var l raft.Log
	if err := s.GetLog(12, &l); err != nil || l.Term != 2 {
		t.Fatalf("entry 12: %+v, %v", l, err)
	}
}

// Anything but zeros after the last record of a segment that is not the
// last one is damage, not a torn append.
func TestStoreGarbageAfterEndOfEarlierSegment(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 600)
	appendChunks(t, s, 1, 30, 1)
	s.Close()
	seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
	b, _ := os.ReadFile(seg)
	b[len(b)-1] = 0xee
	os.WriteFile(seg, b, 0o644)
	if _, err := Open(dir, Options{SegmentSize: 600}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v", err)
	}
}

// A damaged record in the last segment is the torn tail of the last append
// only if no later append's record follows it; otherwise entries that were
// acknowledged are damaged, and opening fails rather than drop them.
func TestStoreDamageBeforeLaterAppendFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage uint64 // index of the damaged entry
		ok     bool
	}{
		{"acknowledged", 10, false}, // entries 11.. came in later appends
		{"torn last append", 22, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, 1<<20)
			for i := uint64(1); i <= 20; i++ {
				if err := s.StoreLog(entry(i, 1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.StoreLogs(entries(21, 25, 1)); err != nil { // one append
				t.Fatal(err)
			}
			s.Close()
			unmark(t, dir) // a crash: the synced mark had not been raised
			seg := filepath.Join(dir, fmt.Sprintf("%020d.seg", 1))
			b, _ := os.ReadFile(seg)
			off := int64(headerSize)
			for i := uint64(1); i < tc.damage; i++ {
				off += int64(len(appendRecord(nil, entry(i, 1), 1)))
			}
			b[off+recordHead+40] ^= 0x55 // inside the payload: CRC fails
			os.WriteFile(seg, b, 0o644)
			s2, err := Open(dir, Options{SegmentSize: 1 << 20})
			if !tc.ok {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("open: %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if last, _ := s2.LastIndex(); last != tc.damage-1 {
				t.Fatalf("last index %d, want %d", last, tc.damage-1)
			}
		})
	}
}

// A compaction that removed several segments and crashed before its
// directory sync may leave any of them: those below the first index are
// dropped whatever order their removals reached the disk in.
func TestStoreCompactionLeftoversInAnyOrder(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 600)
	appendChunks(t, s, 1, 60, 1)
	s.Close()
	unmark(t, dir) // a crash: the synced mark had not been raised
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	slices.Sort(segs)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	var keep uint64 // the base of the third segment: the new first index
	fmt.Sscanf(filepath.Base(segs[2]), "%d.seg", &keep)
	if err := writeMeta(dir, keep); err != nil {
		t.Fatal(err)
	}
	os.Remove(segs[1]) // the second went, the first did not
	s = open(t, dir, 600)
	checkRange(t, s, keep, 60, term1)
	if left, _ := filepath.Glob(filepath.Join(dir, "*.seg")); len(left) != len(segs)-2 {
		t.Fatalf("%d segments left, want %d", len(left), len(segs)-2)
	}
}

// TestStoreSparePacedUntilNeeded: the next segment's spare is zero-filled
// a chunk at a time with pauses, and an append that needs it (or Close)
// ends the pauses instead of waiting for them.
func TestStoreSparePacedUntilNeeded(t *testing.T) {
	defer func(p time.Duration) { zeroPace = p }(zeroPace)
	zeroPace = time.Hour
	dir := t.TempDir()
	const segSize = 4 * zeroChunk
	s := open(t, dir, segSize)
	spare := filepath.Join(dir, spareName)

	// The first chunk is written, then the filler pauses (for an hour).
	size := func() int64 {
		st, err := os.Stat(spare)
		if err != nil {
			return -1
		}
		return st.Size()
	}
	for deadline := time.Now().Add(10 * time.Second); size() < zeroChunk; {
		if time.Now().After(deadline) {
			t.Fatalf("spare of %d bytes after 10 s, want a first chunk of %d", size(), zeroChunk)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if got := size(); got != zeroChunk {
		t.Fatalf("spare of %d bytes while paused, want %d", got, zeroChunk)
	}

	// Appends that fill the first segment and start a second: each needs
	// a spare that is pausing, and must not wait for the pause.
	finishes(t, "appends that need a pausing spare", func() error {
		for i := uint64(1); i <= 6; i++ {
			l := entry(i, 1)
			l.Data = bytes.Repeat([]byte{'z'}, zeroChunk)
			if err := s.StoreLogs([]*raft.Log{l}); err != nil {
				return err
			}
		}
		return nil
	})
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) < 2 {
		t.Fatalf("segments %q, want at least two", segs)
	}
	for _, p := range segs {
		if st, _ := os.Stat(p); st.Size() < segSize {
			t.Errorf("%s: %d bytes, want at least %d", p, st.Size(), segSize)
		}
	}
	var got raft.Log
	if err := s.GetLog(6, &got); err != nil || len(got.Data) != zeroChunk {
		t.Fatalf("GetLog(6): %d bytes, %v", len(got.Data), err)
	}

	// Close does not wait for the pausing spare either.
	finishes(t, "Close with a pausing spare", s.Close)
}

// finishes runs f, and fails the test if f returns an error or has not
// returned after 30 s (what names what waited).
func finishes(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting after 30 s", what)
	}
}

// TestStoreCompactionRemovesFilesOutsideTheLock: the segments a compaction
// drops are removed after appends may go on again, and a crash that keeps
// their files leaves nothing behind once the store is opened.
func TestStoreCompactionRemovesFilesOutsideTheLock(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 600)
	appendChunks(t, s, 1, 60, 1)
	entered, release := make(chan string, 16), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before the store's Close, should the test fail
	defer func(f func(string) error) { removeFile = f }(removeFile)
	removeFile = func(name string) error {
		entered <- name
		<-release
		return os.Remove(name)
	}
	done := make(chan error, 1)
	go func() { done <- s.DeleteRange(1, 40) }()
	var first string
	select {
	case first = <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no segment file removed")
	}
	if !strings.HasSuffix(first, deadSuffix) {
		t.Fatalf("removing %s, want a file renamed out of the log", first)
	}
	// The removal is under way: appends and reads go on meanwhile.
	finishes(t, "an append during a compaction's file removal", func() error {
		return s.StoreLogs(entries(61, 65, 1))
	})
	checkRange(t, s, 41, 65, term1)
	releaseOnce()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+deadSuffix)); len(left) != 0 {
		t.Fatalf("files left: %q", left)
	}
	s.Close()

	// A crash between the rename and the removal: opening removes the
	// dead file and reads the log as it was.
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	slices.Sort(segs)
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, "00000000000000000001.7"+deadSuffix)
	if err := os.WriteFile(dead, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, 600)
	checkRange(t, s, 41, 65, term1)
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dead file after opening: %v", err)
	}
}
