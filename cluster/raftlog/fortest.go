package raftlog

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/hashicorp/raft"
)

// Read-only helpers for other packages' tests, which damage a stopped
// node's log and must know where its records are. Nothing in the store
// calls them.

// SegmentEndForTest reads the segment file at path as opening does and
// returns where its records end (the offset after the last record that
// decodes, with the index due) and how many there are. It changes nothing:
// a torn tail or stale bytes after the records are not counted, and not
// zeroed.
func SegmentEndForTest(path string) (end int64, records int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	if len(data) < headerSize || [8]byte(data[:8]) != segMagic {
		return 0, 0, fmt.Errorf("%w: %s: bad header", ErrCorrupt, path)
	}
	base := binary.LittleEndian.Uint64(data[8:16])
	off := int64(headerSize)
	for off+4 <= int64(len(data)) && binary.LittleEndian.Uint32(data[off:]) != 0 {
		var l raft.Log
		n, err := decodeRecord(data[off:], &l, false)
		if err != nil || l.Index != base+uint64(records) {
			break
		}
		records++
		off += int64(n)
	}
	return off, records, nil
}
