package raftlog

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// Zero-filled files: the spare that becomes the next segment, made in the
// background and paced so its zeros do not stall the appends being synced,
// and the zeroing of a range (a torn tail, a failed append).

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
