package fsm

import (
	"errors"
	"fmt"
)

// ErrSnapshotNewer is returned by CheckSnapshotHeader for a snapshot whose
// format version is newer than this build reads.
var ErrSnapshotNewer = errors.New("fsm: snapshot written by a newer version")

// SnapshotVersion is the newest snapshot format version this build writes
// (and reads).
const SnapshotVersion = snapshotVersion

// SnapshotHeaderSize is how many bytes CheckSnapshotHeader looks at.
const SnapshotHeaderSize = len(snapshotMagic) + 1

// CheckSnapshotHeader checks the start of a snapshot (at least
// SnapshotHeaderSize bytes): the magic, and a format version this build
// reads. It reads nothing else: a snapshot whose header passes may still
// fail to restore.
func CheckSnapshotHeader(head []byte) error {
	if len(head) < SnapshotHeaderSize || string(head[:len(snapshotMagic)]) != snapshotMagic {
		return fmt.Errorf("%w: bad header", ErrSnapshotFormat)
	}
	switch v := head[len(snapshotMagic)]; {
	case v > snapshotVersion:
		return fmt.Errorf("%w: format version %d, this build reads up to %d", ErrSnapshotNewer, v, snapshotVersion)
	case v < 1:
		return fmt.Errorf("%w: unsupported version %d", ErrSnapshotFormat, v)
	}
	return nil
}
