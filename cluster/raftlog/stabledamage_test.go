package raftlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A byte really flipped in one copy of the stable file on disk: the store
// opens from the other copy (the term and vote the last set saved), logs
// a warning naming the file and what it did, and rewrites the damaged copy,
// so that a second open finds two good copies and says nothing. Both
// copies damaged fails the open, naming the file, and writes nothing.
func TestStableOneCopyDamagedWarns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		off     int    // within the slot
		problem string // in the warning
	}{
		{"payload", stableHead + 3, "checksum mismatch"},
		{"magic", 2, "header is damaged"},
		{"version", 6, "format version is damaged"},
		{"length", 17, "larger than a slot"},
		{"checksum", 21, "checksum mismatch"},
	} {
		for copyIdx := range 2 {
			t.Run(tc.name+"/copy"+string(rune('1'+copyIdx)), func(t *testing.T) {
				dir := t.TempDir()
				s, err := Open(dir, Options{})
				if err != nil {
					t.Fatal(err)
				}
				appendChunks(t, s, 1, 10, 5)
				if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
					t.Fatal(err)
				}
				if err := s.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
					t.Fatal(err)
				}
				s.Close()
				path := filepath.Join(dir, "stable")
				good, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				at := int64(copyIdx*stableSlot + tc.off)
				b := []byte{0}
				if _, err := f.ReadAt(b, at); err != nil {
					t.Fatal(err)
				}
				b[0] ^= 0x40
				if _, err := f.WriteAt(b, at); err != nil {
					t.Fatal(err)
				}
				f.Close()

				var logs bytes.Buffer
				logger := slog.New(slog.NewTextHandler(&logs, nil))
				s, err = Open(dir, Options{Logger: logger})
				if err != nil {
					t.Fatalf("open with one copy damaged: %v", err)
				}
				if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 9 {
					t.Errorf("CurrentTerm %d %v, want 9", v, err)
				}
				if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "n2" {
					t.Errorf("LastVoteCand %q %v, want n2", v, err)
				}
				s.Close()
				line := logs.String()
				t.Logf("%s", strings.TrimSpace(line))
				for _, want := range []string{"level=WARN", "file=" + path, "copy=" + string(rune('1'+copyIdx)), tc.problem, "rewrote the damaged one"} {
					if !strings.Contains(line, want) {
						t.Errorf("the warning lacks %q: %s", want, line)
					}
				}
				if now, _ := os.ReadFile(path); !bytes.Equal(now, good) {
					t.Error("the damaged copy was not rewritten from the good one")
				}
				logs.Reset()
				s, err = Open(dir, Options{Logger: logger})
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				if logs.Len() != 0 {
					t.Errorf("a second open, both copies good, logged: %s", logs.String())
				}
			})
		}
	}

	t.Run("both", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir, 0)
		appendChunks(t, s, 1, 10, 5)
		if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
			t.Fatal(err)
		}
		s.Close()
		path := filepath.Join(dir, "stable")
		b, _ := os.ReadFile(path)
		b[stableHead+3] ^= 0x40
		b[stableSlot+2] ^= 0x40
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		_, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "both copies") {
			t.Fatalf("open with both copies damaged: %v, want ErrCorrupt naming %s and both copies", err, path)
		}
		t.Logf("%v", err)
		if now, _ := os.ReadFile(path); !bytes.Equal(now, b) {
			t.Error("a failed open wrote over the damaged file")
		}
		// Neither header intact: the same, not a first-layout checksum.
		b[2] ^= 0x40
		os.WriteFile(path, b, 0o644)
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "both copies") {
			t.Fatalf("open with both headers damaged: %v", err)
		}
	})
}

// A slot of a newer format whose checksum holds is a newer build's, not
// damage: opening refuses it by name, whether one slot or both are newer
// (only a newer slot that fails the checksum beside a valid one is taken
// for a damaged copy).
func TestStableNewerFormatStillRefused(t *testing.T) {
	for _, slots := range [][]int{{0}, {1}, {0, 1}} {
		dir := t.TempDir()
		s := open(t, dir, 0)
		if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
			t.Fatal(err)
		}
		s.Close()
		path := filepath.Join(dir, "stable")
		b, _ := os.ReadFile(path)
		for _, i := range slots {
			slot := b[i*stableSlot : (i+1)*stableSlot]
			binary.BigEndian.PutUint16(slot[6:8], 2)
			n := binary.LittleEndian.Uint32(slot[16:])
			crc := crc32.Update(crc32.Checksum(slot[:20], crcTable), crcTable, slot[stableHead:stableHead+int(n)])
			binary.LittleEndian.PutUint32(slot[20:], crc)
		}
		os.WriteFile(path, b, 0o644)
		var nf *NewerFormatError
		if _, err := Open(dir, Options{}); !errors.As(err, &nf) || nf.Path != path {
			t.Fatalf("slots %v of a newer format: %v, want a NewerFormatError naming %s", slots, err, path)
		}
	}
}
