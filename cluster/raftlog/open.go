package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/raft"
)

// Opening a store: the stable store and meta first, then leftovers of a
// spare or a compaction, then every segment read and checked record by
// record. A torn tail of the last segment is zeroed; damage anywhere else,
// or in synced entries, fails opening (or is cut, with RepairLost).

// Open opens the store in dir, creating the directory if needed, and checks
// every segment (see the package documentation for what a damaged record
// means).
func Open(dir string, opts Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Store{dir: dir, segSize: opts.SegmentSize, beforeSync: opts.BeforeSync, onFailure: opts.OnFailure, repairLost: opts.RepairLost, quit: make(chan struct{})}
	s.def.cond = sync.NewCond(&s.def.mu)
	if s.segSize <= 0 {
		s.segSize = DefaultSegmentSize
	}
	if err := checkStable(dir); err != nil {
		return nil, err
	}
	var err error
	if s.stable, err = openStable(filepath.Join(dir, "stable"), opts.Logger); err != nil {
		return nil, err
	}
	if err := s.loadMark(); err != nil {
		s.stable.close()
		return nil, err
	}
	if err := s.openRest(); err != nil {
		s.stable.close()
		return nil, err
	}
	if err := s.checkMark(); err != nil && !s.repairLost {
		s.closeSegs(s.segs)
		s.stable.close()
		return nil, err
	}
	s.prepareSpare()
	s.startMarker()
	return s, nil
}

// openRest is Open after the stable store: meta, leftovers, segments.
func (s *Store) openRest() error {
	var err error
	if s.metaFirst, err = readMeta(filepath.Join(s.dir, "meta")); err != nil {
		return err
	}
	for _, name := range []string{spareName, reserveTmpName} {
		if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	// Segments a compaction dropped and a crash kept from being removed.
	dead, err := filepath.Glob(filepath.Join(s.dir, "*"+deadSuffix))
	if err != nil {
		return err
	}
	if err := removeDead(s.dir, dead); err != nil {
		return err
	}
	if err := s.load(); err != nil {
		s.closeSegs(s.segs) // those kept before a late failure
		return err
	}
	return nil
}

func (s *Store) load() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var bases []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, segSuffix) {
			continue
		}
		base, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 10, 64)
		if err != nil || base == 0 {
			return fmt.Errorf("%w: unexpected file %s", ErrCorrupt, name)
		}
		bases = append(bases, base)
	}
	slices.Sort(bases)
	changed := false
	var segs []*segment
	for i, base := range bases {
		seg, err := s.openSegment(base, i == len(bases)-1)
		if err != nil {
			s.closeSegs(segs)
			return err
		}
		if len(seg.offs) == 0 {
			// Created, but its first append never completed.
			seg.f.Close()
			if base <= s.mark.mark {
				lost := fmt.Errorf("%w: %s: no valid header, but it held index %d, which was synced", ErrLost, s.segPath(base), base)
				if !s.repairLost {
					s.closeSegs(segs)
					return lost
				}
				s.noteLost(lost) // repair.go: dropped, caught up later
			}
			if err := os.Remove(s.segPath(base)); err != nil {
				s.closeSegs(segs)
				return err
			}
			changed = true
			continue
		}
		segs = append(segs, seg)
	}
	// Segments that hold only entries below the first index are left
	// over from a compaction that stopped half way, whichever of its
	// removals reached the disk.
	var drop []*segment
	for len(segs) > 0 && segs[0].lastIndex() < s.metaFirst {
		drop = append(drop, segs[0])
		segs = segs[1:]
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].base != segs[i-1].lastIndex()+1 {
			err := fmt.Errorf("%w: segment %d does not follow index %d", ErrCorrupt, segs[i].base, segs[i-1].lastIndex())
			s.closeSegs(segs)
			s.closeSegs(drop)
			return err
		}
	}
	s.segs = segs
	if len(segs) > 0 {
		s.first = max(s.metaFirst, segs[0].base)
		s.last = segs[len(segs)-1].lastIndex()
	}
	if len(drop) > 0 {
		return s.removeSegs(drop) // syncs the directory
	}
	if changed {
		return syncDir(s.dir)
	}
	return nil
}

func (s *Store) segPath(base uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%020d%s", base, segSuffix))
}

// openSegment reads and checks one segment. Its records end at a zero
// length, or at the end of the file. In the last segment a damaged record
// is the remains of an append that never completed: it and what follows
// are zeroed. In any other segment it is an error, as is anything but
// zeros after the end.
func (s *Store) openSegment(base uint64, isLast bool) (*segment, error) {
	path := s.segPath(base)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) (*segment, error) {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, path, fmt.Sprintf(format, a...))
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	seg := &segment{base: base, f: f, size: headerSize, cap: int64(len(data))}
	if len(data) < headerSize || [8]byte(data[:8]) != segMagic || binary.LittleEndian.Uint64(data[8:16]) != base {
		if err := newerFormat(path, data, segMagic); err != nil {
			f.Close()
			return nil, err
		}
		if isLast && s.repairLost && base <= s.mark.mark && !allZero(data[:min(len(data), headerSize)]) {
			// Damaged, and it held synced entries: dropped, caught up
			// later (repair.go).
			s.noteLost(fmt.Errorf("%w: %s: bad header, and it held index %d, which was synced", ErrLost, path, base))
			seg.offs = nil
			return seg, nil
		}
		if !isLast || !allZero(data[:min(len(data), headerSize)]) {
			return fail("bad header")
		}
		// The first append to a new segment writes the header with its
		// records and never completed: nothing in it was acknowledged.
		seg.offs = nil
		return seg, nil
	}
	off := int64(headerSize)
	var prevTerm uint64
	for off+4 <= int64(len(data)) && binary.LittleEndian.Uint32(data[off:]) != 0 {
		var l raft.Log
		n, err := decodeRecord(data[off:], &l, false)
		if err == nil && l.Index != base+uint64(len(seg.offs)) {
			err = fmt.Errorf("index %d where %d was due", l.Index, base+uint64(len(seg.offs)))
		}
		if err == nil && l.Term < prevTerm {
			err = fmt.Errorf("term %d after term %d", l.Term, prevTerm)
		}
		if err != nil {
			if !isLast {
				return fail("offset %d: %v", off, err)
			}
			if want := base + uint64(len(seg.offs)); want <= s.mark.mark {
				// Synced: not the torn tail of an append.
				lost := fmt.Errorf("%w: %s: offset %d: %v, in index %d, which was synced", ErrLost, path, off, err, want)
				if !s.repairLost {
					f.Close()
					return nil, lost
				}
				s.noteLost(lost) // repair.go: cut here, caught up later
			} else if p, ok := laterAppend(data, off, base+uint64(len(seg.offs))); ok {
				// Not a torn tail: an append that came after this
				// record's own finished, so this one was acknowledged.
				if !s.repairLost {
					return fail("offset %d: %v, before a later append's record at %d", off, err, p)
				}
				// Cut here too, and the mark raised first to the later
				// record, so that the node catches up past it.
				later := binary.LittleEndian.Uint64(data[p+recordHead:])
				if err := s.raiseMarkTo(later, binary.LittleEndian.Uint64(data[p+recordHead+8:])); err != nil {
					f.Close()
					return nil, err
				}
				s.noteLost(fmt.Errorf("%w: %s: offset %d: %v, before a later append's record (index %d) at %d", ErrLost, path, off, err, later, p))
			}
			break // the torn tail of an append, zeroed below
		}
		prevTerm = l.Term
		seg.offs = append(seg.offs, off)
		off += int64(n)
	}
	seg.size = off
	// Only zeros may follow the last record: new appends write over them,
	// and nothing left of an old write may ever read as a record.
	dirty := int64(len(data))
	for dirty > off && data[dirty-1] == 0 {
		dirty--
	}
	if dirty > off {
		if !isLast {
			return fail("data after the last record at %d", off)
		}
		if err := zeroRange(f, off, dirty); err != nil {
			f.Close()
			return nil, err
		}
	}
	return seg, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// laterAppend looks in data after off, where the record of index want is
// damaged, for a whole record written by a later append than want's (one
// whose first index is above want). Records of want's own append may
// survive a torn write; a later append's may not, since appends wait for
// the one before to be synced. It reports the first such record's offset.
func laterAppend(data []byte, off int64, want uint64) (int64, bool) {
	for p := off + 1; p+recordHead+fixedFields <= int64(len(data)); p++ {
		q := data[p+recordHead:]
		idx, batch := binary.LittleEndian.Uint64(q), binary.LittleEndian.Uint64(q[16:])
		if idx <= want || batch <= want || batch > idx {
			continue
		}
		var l raft.Log
		if _, err := decodeRecord(data[p:], &l, false); err == nil && l.Index == idx {
			return p, true
		}
	}
	return 0, false
}
