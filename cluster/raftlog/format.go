package raftlog

import (
	"encoding/binary"
	"fmt"
)

// Format versions. A segment's magic and the stable store's end in a
// version (big-endian u16): a file whose magic is ours with a higher
// version was written by a newer build, and opening it fails with a
// NewerFormatError instead of calling it damage.

// NewerFormatError is returned by Open for a file a newer build wrote.
type NewerFormatError struct {
	Path      string
	Version   uint16 // the file's
	Supported uint16 // this build's
}

func (e *NewerFormatError) Error() string {
	return fmt.Sprintf("raftlog: %s: written in format version %d by a newer build (this one reads up to %d)", e.Path, e.Version, e.Supported)
}

// newerFormat reports a NewerFormatError if b starts with magic's prefix
// (all but its version) and a version above magic's.
func newerFormat(path string, b []byte, magic [8]byte) error {
	if len(b) < 8 || string(b[:6]) != string(magic[:6]) {
		return nil
	}
	v, ours := binary.BigEndian.Uint16(b[6:8]), binary.BigEndian.Uint16(magic[6:8])
	if v <= ours {
		return nil
	}
	return &NewerFormatError{Path: path, Version: v, Supported: ours}
}

// Floor is the first index the log has recorded in its meta file (0 if
// none): entries below it were compacted away, or given up for an
// installed snapshot. With LastIndex it bounds what the node has held.
func (s *Store) Floor() uint64 {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.metaFirst
}
