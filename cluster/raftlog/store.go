package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
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
	// Logger, if set, gets the store's warnings: damage opening found and
	// repaired (a damaged copy of the stable file, stablerepair.go).
	Logger *slog.Logger
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
	segsMade    atomic.Uint64 // segments newSegment made (SegmentsMade)
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
