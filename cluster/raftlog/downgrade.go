package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// DowngradeStable rewrites the stable store of the log directory dir in
// its first layout (format 1: a CRC-32C, then the keys and values, the
// whole file replaced on each set), which builds from before the slotted
// file (2026-11-26) read; they refuse the slotted one as a checksum
// mismatch. The synced mark is left out: a build that does not keep it
// would leave it stale, and a newer build opening the directory again
// would take entries the older one rightly gave up for lost ones. The log
// must not be open. A newer build opening the file again turns it back
// into the slotted layout. It reports whether the file was slotted.
func DowngradeStable(dir string) (bool, error) {
	path := filepath.Join(dir, "stable")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st := &stable{path: path, kv: map[string][]byte{}}
	slotted := len(b) == 2*stableSlot && (isSlot(b[:stableSlot]) || isSlot(b[stableSlot:]))
	if err := newerSlots(path, b); err != nil {
		return false, err
	}
	if slotted {
		err = st.load(b)
	} else if len(b) > 0 {
		err = st.loadV1(b)
	}
	if err != nil {
		return false, err
	}
	delete(st.kv, syncedKey)
	out := make([]byte, 4)
	for _, k := range slices.Sorted(maps.Keys(st.kv)) {
		out = appendField(appendField(out, []byte(k)), st.kv[k])
	}
	binary.LittleEndian.PutUint32(out, crc32.Checksum(out[4:], crcTable))
	if err := writeFileAtomic(path, out); err != nil {
		return false, fmt.Errorf("raftlog: downgrade %s: %w", path, err)
	}
	return slotted, nil
}
