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
	"sync"
)

// errNotFound's text is what raft compares against ("not found").
var errNotFound = errors.New("not found")

// stable is raft's stable store: a few small keys (current term, last vote)
// written on elections. Every set rewrites the whole file through a
// temporary file, fsync and rename.
type stable struct {
	path string
	mu   sync.Mutex
	kv   map[string][]byte
}

// The stable file: u32 CRC-32C of the rest, then for each key in order
// uvarint length + key, uvarint length + value.
func openStable(path string) (*stable, error) {
	st := &stable{path: path, kv: map[string][]byte{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) < 4 || crc32.Checksum(b[4:], crcTable) != binary.LittleEndian.Uint32(b) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, path)
	}
	rest := b[4:]
	for len(rest) > 0 {
		var k, v []byte
		if k, rest, err = takeBytes(rest, true); err == nil {
			v, rest, err = takeBytes(rest, true)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
		}
		st.kv[string(k)] = v
	}
	return st, nil
}

func (st *stable) get(key string) ([]byte, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	v, ok := st.kv[key]
	if !ok {
		return nil, errNotFound
	}
	return slices.Clone(v), nil
}

func (st *stable) set(key string, val []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	b := make([]byte, 4)
	for _, k := range slices.Sorted(maps.Keys(st.kv)) {
		if k == key {
			continue
		}
		b = appendField(appendField(b, []byte(k)), st.kv[k])
	}
	b = appendField(appendField(b, []byte(key)), val)
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], crcTable))
	if err := writeFileAtomic(st.path, b); err != nil {
		return err
	}
	st.kv[key] = slices.Clone(val)
	return nil
}

func appendField(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// The meta file holds the log's first index: u64 index, u32 CRC-32C of it.
func readMeta(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 12 || crc32.Checksum(b[:8], crcTable) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("%w: %s", ErrCorrupt, path)
	}
	return binary.LittleEndian.Uint64(b), nil
}

func writeMeta(dir string, first uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, first)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	return writeFileAtomic(filepath.Join(dir, "meta"), b)
}

// writeFileAtomic replaces path with b so that a crash leaves either the
// old or the new content.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("raftlog: write %s: %w", filepath.Base(path), err)
	}
	return nil
}
