package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// A record's encoding (appendRecord, decodeRecord) and reading entries
// back (FirstIndex, LastIndex, GetLog).

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
