package raftlog

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// DowngradeStable writes the slotted stable store in the first layout (a
// CRC-32C of the rest, then the keys), without the synced mark, and a
// store opened on it again has raft's keys.
func TestDowngradeStable(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 512)
	if err := s.StoreLogs(entries(1, 20, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
	s.Close() // Close raises the synced mark
	slotted, err := DowngradeStable(dir)
	if err != nil || !slotted {
		t.Fatalf("DowngradeStable = %v, %v; want true, nil", slotted, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "stable"))
	if err != nil {
		t.Fatal(err)
	}
	// The first layout, read as builds before the slotted file read it.
	if len(b) < 4 || crc32.Checksum(b[4:], crcTable) != binary.LittleEndian.Uint32(b) {
		t.Fatalf("not the first layout: % x", b)
	}
	st := &stable{path: "stable", kv: map[string][]byte{}}
	if err := st.parse(b[4:]); err != nil {
		t.Fatal(err)
	}
	if string(st.kv["LastVoteCand"]) != "n2" || len(st.kv["CurrentTerm"]) == 0 {
		t.Fatalf("keys lost: %q", st.kv)
	}
	if _, ok := st.kv[syncedKey]; ok {
		t.Fatal("the synced mark was kept")
	}
	// Again: already in the first layout.
	if slotted, err := DowngradeStable(dir); err != nil || slotted {
		t.Fatalf("second DowngradeStable = %v, %v; want false, nil", slotted, err)
	}
	s = open(t, dir, 512)
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
		t.Fatalf("CurrentTerm after a downgrade = %d, %v", term, err)
	}
	checkRange(t, s, 1, 20, term1)
}
