package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

const (
	segSuffix   = ".seg"
	headerSize  = 16
	recordHead  = 8                 // length and CRC
	fixedFields = 8 + 8 + 8 + 1 + 8 // index, term, batch, type, appended at
	// maxRecord bounds one record's payload, so that a damaged length field
	// cannot make opening allocate without limit.
	maxRecord = 1 << 30
	// DefaultSegmentSize is the size of a segment file. A segment is
	// written full of zeros before it is used, so that an append changes
	// no file metadata and its fdatasync has only the data to flush
	// (measured on the benchmark machine: 165 µs against 257 µs for an
	// append that grows the file, and 92 against 132 µs of CPU).
	DefaultSegmentSize = 16 << 20
	// spareName is the zero-filled file made ready, in the background,
	// to become the next segment.
	spareName = "spare.tmp"
	// deadSuffix ends the name of a segment a compaction has dropped:
	// renamed while appends wait, removed after (DeleteRange).
	deadSuffix = ".dead"
)

var (
	segMagic = [8]byte{'d', 'b', 'l', 'o', 'g', 0, 0, 2}
	crcTable = crc32.MakeTable(crc32.Castagnoli)

	// ErrCorrupt is returned when a segment other than the last one holds a
	// damaged record, or the segments do not follow one another.
	ErrCorrupt = errors.New("raftlog: corrupt log")
	// ErrClosed is returned by a closed store.
	ErrClosed = errors.New("raftlog: store closed")
)

// Options tune a Store. The zero value is the default.
type Options struct {
	// SegmentSize is the size of a segment file (DefaultSegmentSize if
	// 0). An append that does not fit in the current segment starts a new
	// one; an append larger than a segment grows its file.
	SegmentSize int64
	// BeforeSync, if set, runs before each sync of appended entries, and
	// its error fails the sync: fault injection for tests (a stalled or
	// failing disk).
	BeforeSync func() error
	// OnFailure, if set, is called once, on a goroutine of its own, when
	// a write or sync (of the log or of the stable store) fails the store
	// for good (failure.go).
	OnFailure func(error)
	// RepairLost: a log that lost synced entries at its end opens cut at
	// the first damaged record instead of failing with ErrLost; Lost then
	// says so, and the caller must not let the node vote until it has
	// caught up past SyncedMark (repair.go).
	RepairLost bool
}

// Store is a raft.LogStore and raft.StableStore kept in one directory. Its
// methods are safe for concurrent use; appends and deletions are serialised.
type Store struct {
	dir        string
	segSize    int64
	beforeSync func() error
	onFailure  func(error)
	repairLost bool  // Options.RepairLost
	lost       error // what opening repaired (repair.go)
	// The log's end and the synced mark as opened (repair.go).
	openEnd, openMark uint64
	mark              marker // the synced mark (synced.go)

	wmu sync.Mutex // held by StoreLogs and DeleteRange for their whole run
	buf []byte     // encoding buffer, under wmu
	// spare delivers the next segment's file, zero-filled by a goroutine
	// started when the previous one was taken (under wmu).
	spare    chan spareFile
	spareRun sync.WaitGroup
	hurry    chan struct{} // closed when an append waits for the spare being made, or on Close (under wmu)
	stopping atomic.Bool   // Close: a spare being made is given up
	// The reserve segment (reserve.go).
	reserving   atomic.Bool   // one goroutine makes it at a time
	reserveUsed atomic.Bool   // taken for want of space, not yet made again
	quit        chan struct{} // closed by Close: the reserve being made stops pausing
	// metaFirst is the first index recorded in meta, under wmu.
	metaFirst uint64
	deadSeq   uint64 // names dropped segments apart, under wmu

	mu          sync.RWMutex // guards what follows; readers hold it across their pread
	segs        []*segment
	first, last uint64 // 0, 0 when empty
	closed      bool

	stable *stable

	def deferred // appends synced after StoreLogs returns (deferred.go)
	io  ioStats  // timings for the metrics endpoint (metrics.go)
}

type segment struct {
	base uint64
	f    *os.File
	offs []int64 // offs[i] is where the record of index base+i starts
	size int64   // end of the last record; only zeros follow it
	cap  int64   // the file's length
}

type spareFile struct {
	f   *os.File
	err error
}

func (s *segment) lastIndex() uint64 { return s.base + uint64(len(s.offs)) - 1 }

// recordAt returns the extent of index's record.
func (s *segment) recordAt(index uint64) (off, end int64) {
	i := index - s.base
	off = s.offs[i]
	end = s.size
	if int(i)+1 < len(s.offs) {
		end = s.offs[i+1]
	}
	return off, end
}

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
	if s.stable, err = openStable(filepath.Join(dir, "stable")); err != nil {
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

// prepareSpare starts zero-filling the next segment's file.
func (s *Store) prepareSpare() {
	s.spare = make(chan spareFile, 1)
	hurry := make(chan struct{})
	s.hurry = hurry
	s.spareRun.Add(1)
	go func() {
		defer s.spareRun.Done()
		f, err := zeroFile(filepath.Join(s.dir, spareName), s.segSize, &s.stopping, hurry)
		s.spare <- spareFile{f, err}
		if err == nil {
			s.makeReserve()
		}
	}()
}

// A spare is zero-filled a chunk at a time, each chunk sent to the disk
// (startWriteback) before the next is written, zeroPace apart: 64 MiB/s,
// a 16 MiB segment in a quarter of a second. Written at once, a segment's
// zeros reached the disk in one burst at the spare's fsync, and every
// append synced meanwhile waited behind them, on this node and on every
// other that shares the disk. On the benchmark machine that was a stall
// of 10–25 ms once per segment, and slower syncs for a while after
// (docs/BENCHMARKS_HISTORY.md, 2026-11-23). Paced, an append's sync carries
// at most a chunk of zeros. On a busy machine the pauses run long (a
// spare took about a second under the benchmark's load); they are not
// made up, since catching up wrote chunks back to back and brought
// stalls of 20–30 ms back (tried). An append that needs the spare before
// it is ready closes hurry, and the rest is written at once.
const zeroChunk = 128 << 10

// zeroPace is the pause after each chunk (a test may change it).
var zeroPace = 2 * time.Millisecond

// zeroFile creates path holding size zero bytes, on disk, unless stop is
// set meanwhile. It paces its writes until hurry is closed.
func zeroFile(path string, size int64, stop *atomic.Bool, hurry <-chan struct{}) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if err = writeZerosPaced(f, size, stop, hurry); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
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

// zeroRange writes zeros over [from, to) of f and syncs it.
func zeroRange(f *os.File, from, to int64) error {
	if err := writeZeros(f, from, to); err != nil {
		return err
	}
	return fdatasync(f)
}

// writeZeros writes zeros over [from, to) of f, a MiB at a time.
func writeZeros(f *os.File, from, to int64) error {
	zeros := make([]byte, min(max(to-from, 0), 1<<20))
	for off := from; off < to; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), to-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// writeZerosPaced writes zeros over the first size bytes of f, zeroChunk
// at a time, each sent to the disk and followed by a pause of zeroPace
// until hurry is closed; it gives up with ErrClosed if stop is set.
func writeZerosPaced(f *os.File, size int64, stop *atomic.Bool, hurry <-chan struct{}) error {
	zeros := make([]byte, min(max(size, 0), zeroChunk))
	pause := time.NewTimer(zeroPace)
	defer pause.Stop()
	paced := true
	for off := int64(0); off < size; off += zeroChunk {
		if stop.Load() {
			return ErrClosed
		}
		n := min(zeroChunk, size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		if !paced {
			continue
		}
		startWriteback(f, off, n)
		select {
		case <-pause.C:
			pause.Reset(zeroPace)
		case <-hurry:
			paced = false
		}
	}
	return nil
}

// decodeRecord decodes the record at the start of b into l and returns its
// length. With copyData false, l.Data and l.Extensions alias b.
func decodeRecord(b []byte, l *raft.Log, copyData bool) (int, error) {
	if len(b) < recordHead {
		return 0, io.ErrUnexpectedEOF
	}
	n := binary.LittleEndian.Uint32(b)
	if n < fixedFields+2 || n > maxRecord || int64(n) > int64(len(b)-recordHead) {
		return 0, fmt.Errorf("bad record length %d", n)
	}
	p := b[recordHead : recordHead+int(n)]
	if crc32.Checksum(p, crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return 0, errors.New("checksum mismatch")
	}
	l.Index = binary.LittleEndian.Uint64(p)
	l.Term = binary.LittleEndian.Uint64(p[8:])
	l.Type = raft.LogType(p[24])
	if ns := int64(binary.LittleEndian.Uint64(p[25:])); ns != 0 {
		l.AppendedAt = time.Unix(0, ns)
	} else {
		l.AppendedAt = time.Time{}
	}
	rest := p[fixedFields:]
	var err error
	if l.Data, rest, err = takeBytes(rest, copyData); err != nil {
		return 0, err
	}
	if l.Extensions, rest, err = takeBytes(rest, copyData); err != nil {
		return 0, err
	}
	if len(rest) != 0 {
		return 0, errors.New("trailing bytes in record")
	}
	return recordHead + int(n), nil
}

func takeBytes(b []byte, copyData bool) ([]byte, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errors.New("bad field length")
	}
	v := b[k : k+int(n)]
	if n == 0 {
		v = nil
	} else if copyData {
		v = slices.Clone(v)
	}
	return v, b[k+int(n):], nil
}

// appendRecord appends l's record to b; batch is the index of the first
// entry of the append that writes it.
func appendRecord(b []byte, l *raft.Log, batch uint64) []byte {
	start := len(b)
	b = append(b, make([]byte, recordHead+fixedFields)...)
	p := b[start+recordHead:]
	binary.LittleEndian.PutUint64(p, l.Index)
	binary.LittleEndian.PutUint64(p[8:], l.Term)
	binary.LittleEndian.PutUint64(p[16:], batch)
	p[24] = byte(l.Type)
	var ns int64
	if !l.AppendedAt.IsZero() {
		ns = l.AppendedAt.UnixNano()
	}
	binary.LittleEndian.PutUint64(p[25:], uint64(ns))
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	b = append(b, l.Extensions...)
	payload := b[start+recordHead:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(payload, crcTable))
	return b
}

// FirstIndex returns the first index in the log, 0 if it is empty.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.first, nil
}

// LastIndex returns the last index in the log, 0 if it is empty.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.last, nil
}

// GetLog reads the entry at index into l.
func (s *Store) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if s.last == 0 || index < s.first || index > s.last {
		s.mu.RUnlock()
		return raft.ErrLogNotFound
	}
	i, found := slices.BinarySearchFunc(s.segs, index, func(seg *segment, idx uint64) int {
		switch {
		case seg.base > idx:
			return 1
		case seg.base < idx:
			return -1
		}
		return 0
	})
	if !found {
		i--
	}
	seg := s.segs[i]
	off, end := seg.recordAt(index)
	buf := make([]byte, end-off)
	_, err := seg.f.ReadAt(buf, off)
	s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("raftlog: read index %d: %w", index, err)
	}
	if _, err := decodeRecord(buf, l, false); err != nil {
		return fmt.Errorf("%w: index %d: %v", ErrCorrupt, index, err)
	}
	if l.Index != index {
		return fmt.Errorf("%w: index %d holds %d", ErrCorrupt, index, l.Index)
	}
	return nil
}

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, which must follow the last one stored (any
// index may start an empty log), and returns once they are on disk.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	closed, last := s.closed, s.last
	var tail *segment
	if n := len(s.segs); n > 0 {
		tail = s.segs[n-1]
	}
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	// An append starts only once the one before is synced, deferred or
	// not: recovery counts on it (doc.go, Crashes). A leader's deferred
	// sync is usually done by then, its next entry waiting for it anyway.
	if err := s.flushPending(); err != nil {
		return err
	}
	next := logs[0].Index
	if next == 0 || (last != 0 && next != last+1) {
		return fmt.Errorf("raftlog: entry %d does not follow %d", next, last)
	}
	for i, l := range logs {
		if l.Index != next+uint64(i) {
			return fmt.Errorf("raftlog: entries not consecutive at %d", l.Index)
		}
		if len(l.Data)+len(l.Extensions)+fixedFields+20 > maxRecord {
			// Opening would refuse the record: refuse it now.
			return fmt.Errorf("raftlog: entry %d is larger than %d bytes", l.Index, maxRecord)
		}
	}
	if last == 0 && s.metaFirst > next {
		// An emptied log starting again below its recorded first index.
		if err := s.lowerMark(next - 1); err != nil {
			return err
		}
		if err := writeMeta(s.dir, next); err != nil {
			return err
		}
		s.metaFirst = next
	}
	b := s.buf[:0]
	rel := make([]int64, 0, len(logs))
	for _, l := range logs {
		rel = append(rel, int64(len(b)))
		b = appendRecord(b, l, next)
	}
	if cap(b) <= 1<<20 {
		s.buf = b
	}
	newSeg := false
	if tail == nil || last == 0 || tail.size > headerSize && tail.size+int64(len(b)) > tail.cap {
		var err error
		if tail, err = s.newSegment(next); err != nil {
			return err
		}
		newSeg = true
	}
	at := tail.size
	for i := range rel {
		rel[i] += at
	}
	if newSeg {
		// The header goes with the first records, in the same write.
		var h [headerSize]byte
		copy(h[:], segMagic[:])
		binary.LittleEndian.PutUint64(h[8:], tail.base)
		b = append(h[:], b...)
		at = 0
	}
	t0 := time.Now()
	err := appendWrite(tail.f, b, at)
	s.io.appended(len(logs), time.Since(t0))
	if err != nil {
		if !IsNoSpace(err) {
			return s.fail(s.segPath(tail.base), "write", err)
		}
		s.discard(tail, newSeg, at, int64(len(b)))
		return fmt.Errorf("raftlog: append: %w", err)
	}
	deferred := s.deferNow()
	if !deferred {
		if err := s.syncAppends(tail.f); err != nil {
			// Never tried again as if it might have worked (failure.go).
			return s.fail(s.segPath(tail.base), "fdatasync", err)
		}
	}
	// Recorded before the entries can be read: from then on WaitDurable
	// waits for them.
	end := logs[len(logs)-1].Index
	s.appended(tail.f, end, !deferred)
	s.mu.Lock()
	if newSeg {
		s.segs = append(s.segs, tail)
	}
	tail.offs = append(tail.offs, rel...)
	tail.size = at + int64(len(b))
	tail.cap = max(tail.cap, tail.size)
	if s.last == 0 {
		s.first = next
	}
	s.last = end
	s.mu.Unlock()
	return nil
}

// discard undoes what a failed append may have written, as far as it can:
// zeros over the attempted range, and a new segment removed.
func (s *Store) discard(seg *segment, isNew bool, at, n int64) {
	if isNew {
		seg.f.Close()
		os.Remove(s.segPath(seg.base))
		syncDir(s.dir)
		return
	}
	zeroRange(seg.f, at, at+n)
}

// newSegment turns the spare file into the segment for base, durable with
// its directory entry, and starts preparing the next spare. It does not add
// the segment to the store. Its header is written with its first records:
// a crash before those are synced leaves a last segment with no valid
// header, which opening treats as empty.
func (s *Store) newSegment(base uint64) (*segment, error) {
	close(s.hurry)
	sp := <-s.spare
	if sp.err != nil && !s.stopping.Load() {
		// Making it failed (a full disk, say), perhaps a while ago:
		// space may have returned since. Try again, unpaced.
		now := make(chan struct{})
		close(now)
		sp.f, sp.err = zeroFile(filepath.Join(s.dir, spareName), s.segSize, &s.stopping, now)
	}
	src, failed := filepath.Join(s.dir, spareName), sp
	if IsNoSpace(sp.err) {
		if f, rpath, ok := s.takeReserve(); ok {
			sp, src = spareFile{f: f}, rpath
		}
	}
	if sp.err != nil {
		s.spareFailed(sp)
		return nil, fmt.Errorf("raftlog: new segment: %w", sp.err)
	}
	path := s.segPath(base)
	err := os.Rename(src, path)
	if err == nil {
		err = syncDir(s.dir)
	}
	if failed.err != nil {
		s.spareFailed(failed) // the reserve was taken: the disk is full
	} else {
		// After the rename (it makes a new spare.tmp), and after the
		// directory's sync, which would otherwise wait behind the new
		// spare's first writes.
		s.prepareSpare()
	}
	if err != nil {
		sp.f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("raftlog: new segment: %w", err)
	}
	return &segment{base: base, f: sp.f, size: headerSize, cap: s.segSize}, nil
}

// spareFailed keeps sp, a spare that could not be made, as the next one:
// none is made in the background until an append needs it and it can be
// made (newSegment); on a full disk making it would take the last free
// blocks, again and again, from whatever else needs them (a snapshot).
func (s *Store) spareFailed(sp spareFile) {
	s.spare = make(chan spareFile, 1)
	s.spare <- sp
	s.hurry = make(chan struct{})
}

// DeleteRange deletes the entries from min to max inclusive. raft deletes
// either a prefix (compaction) or a suffix (conflicting entries); a range
// strictly inside the log is refused.
//
// The segments a compaction drops are renamed while appends wait, and
// removed once they may go on: removing a 16 MiB file took 19 ms on the
// benchmark machine (its file system discards the freed blocks), a stall
// for every append of the node while the write lock was held.
func (s *Store) DeleteRange(min, max uint64) error {
	dead, err := s.deleteRange(min, max)
	if rerr := removeDead(s.dir, dead); err == nil {
		err = rerr
	}
	return err
}

// deleteRange is DeleteRange under the write lock; it returns the files of
// the segments a compaction dropped, for the caller to remove.
func (s *Store) deleteRange(min, max uint64) (dead []string, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	closed, first, last := s.closed, s.first, s.last
	s.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if last == 0 || min > max || max < first || min > last {
		return nil, nil
	}
	if err := s.flushPending(); err != nil {
		return nil, err
	}
	switch {
	case min <= first:
		// A prefix, perhaps all of it. The new first index is durable
		// before any file goes, so that a crash never brings a deleted
		// entry back.
		if err := writeMeta(s.dir, max+1); err != nil {
			return nil, err
		}
		s.metaFirst = max + 1
		s.mu.Lock()
		var drop []*segment
		if max >= last {
			drop, s.segs = s.segs, nil
			s.first, s.last = 0, 0
			defer s.truncated(0)
		} else {
			for len(s.segs) > 0 && s.segs[0].lastIndex() <= max {
				drop = append(drop, s.segs[0])
				s.segs = s.segs[1:]
			}
			s.first = max + 1
		}
		s.mu.Unlock()
		return s.retire(drop)
	case max >= last:
		// A suffix: whole segments from the back, then the segment that
		// holds min is cut, all durable before StoreLogs writes after it.
		// The synced mark goes down first, and stays down (mark.mu) until
		// the store's durable index has too.
		s.mark.mu.Lock()
		defer s.mark.mu.Unlock()
		if s.mark.mark > min-1 {
			if err := s.setMark(min-1, s.termAt(min-1)); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		var drop []*segment
		for len(s.segs) > 0 && s.segs[len(s.segs)-1].base >= min {
			drop = append(drop, s.segs[len(s.segs)-1])
			s.segs = s.segs[:len(s.segs)-1]
		}
		var cut *segment
		var cutAt, cutEnd int64
		if n := len(s.segs); n > 0 && s.segs[n-1].lastIndex() >= min {
			cut = s.segs[n-1]
			cutAt, _ = cut.recordAt(min)
			cutEnd = cut.size
			cut.offs = cut.offs[:min-cut.base]
			cut.size = cutAt
		}
		s.last = min - 1
		if len(s.segs) == 0 {
			s.first, s.last = 0, 0
		}
		s.mu.Unlock()
		// One at a time from the back, each unlink durable before the
		// next: removals reaching the disk out of order would leave a hole.
		for _, seg := range drop {
			if err := s.removeSegs([]*segment{seg}); err != nil {
				return nil, err
			}
		}
		s.truncated(min - 1)
		if cut != nil {
			if err := zeroRange(cut.f, cutAt, cutEnd); err != nil {
				return nil, fmt.Errorf("raftlog: truncate: %w", err)
			}
		}
		return nil, nil
	}
	return nil, fmt.Errorf("raftlog: cannot delete %d..%d from the middle of %d..%d", min, max, first, last)
}

// retire closes the segments a compaction dropped and renames their files
// out of the log's way, returning the new names. The new first index is
// already durable: whichever of the renames a crash keeps, opening drops
// the segments below it, and removes dead files. The caller holds wmu.
func (s *Store) retire(segs []*segment) ([]string, error) {
	s.closeSegs(segs)
	var dead []string
	for _, seg := range segs {
		s.deadSeq++
		name := filepath.Join(s.dir, fmt.Sprintf("%020d.%d%s", seg.base, s.deadSeq, deadSuffix))
		if err := os.Rename(s.segPath(seg.base), name); err != nil {
			return dead, fmt.Errorf("raftlog: remove segment: %w", err)
		}
		dead = append(dead, name)
	}
	return dead, nil
}

// removeFile removes a dropped segment's file (a test may replace it).
var removeFile = os.Remove

// removeDead removes the files of dropped segments, then syncs dir.
func removeDead(dir string, files []string) error {
	if len(files) == 0 {
		return nil
	}
	for _, f := range files {
		if err := removeFile(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("raftlog: remove segment: %w", err)
		}
	}
	return syncDir(dir)
}

// removeSegs closes and removes segs in the order given, then syncs the
// directory.
func (s *Store) removeSegs(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	for _, seg := range segs {
		seg.f.Close()
		if err := os.Remove(s.segPath(seg.base)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("raftlog: remove segment: %w", err)
		}
	}
	return syncDir(s.dir)
}

func (s *Store) closeSegs(segs []*segment) {
	for _, seg := range segs {
		seg.f.Close()
	}
}

// IsMonotonic tells raft to empty the log after installing a snapshot
// instead of leaving a gap in it (raft.MonotonicLogStore).
func (s *Store) IsMonotonic() bool { return true }

// Close syncs what deferred appends left unsynced and closes the files.
// Further calls fail with ErrClosed.
func (s *Store) Close() error {
	s.stopSyncer()
	s.stopMarker()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	flushErr := s.flushPending()
	if flushErr == nil && !s.isClosed() {
		flushErr = s.raiseMark()
	}
	s.def.mu.Lock()
	s.def.closed = true
	s.def.cond.Broadcast()
	s.def.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.stable.close(); flushErr == nil {
		flushErr = err
	}
	s.closeSegs(s.segs)
	s.segs = nil
	s.stopping.Store(true)
	close(s.hurry) // a spare being made stops pausing, and sees stopping
	close(s.quit)  // as does the reserve
	s.spareRun.Wait()
	if sp := <-s.spare; sp.f != nil {
		sp.f.Close()
	}
	return flushErr
}

// Set, Get, SetUint64 and GetUint64 are raft's stable store.

func (s *Store) Set(key, val []byte) error { return s.setStable(string(key), val) }

func (s *Store) Get(key []byte) ([]byte, error) { return s.stable.get(string(key)) }

func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.setStable(string(key), binary.BigEndian.AppendUint64(nil, val))
}

func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.stable.get(string(key))
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: stable key %q is not a uint64", ErrCorrupt, key)
	}
	return binary.BigEndian.Uint64(v), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
