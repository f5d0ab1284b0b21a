package cluster

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Data directories that are not this node's, or not this build's, or
// half-written: each start either refuses with an error naming the file
// and what to do, or (half-written, nothing acknowledged lost) starts and
// catches up. Never a panic, never a fresh start over existing data.
func TestBadDataDirs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snaps int
		// damage prepares node f's directory (or its Config) and returns
		// the strings the start error must hold (none: it must start).
		damage func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string
	}{
		{"another node's directory", 0, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			cfg.ID = "n9"
			return []string{filepath.Join(dc.dir(f), identityFile), `belongs to node "` + dc.ids[f] + `"`}
		}},
		{"identity of a newer format", 0, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			p := filepath.Join(dc.dir(f), identityFile)
			os.WriteFile(p, []byte("deadbolt data directory\nformat 7\nnode "+dc.ids[f]+"\n"), 0o644)
			return []string{p, "newer build"}
		}},
		{"identity emptied", 0, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			p := filepath.Join(dc.dir(f), identityFile)
			os.Truncate(p, 0)
			return []string{p, "damaged", "remove the file"}
		}},
		{"segment of a newer format", 0, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			segs := segments(t, dc.logDir(f))
			setBytes(t, segs[0], 6, []byte{0, 3})
			return []string{segs[0], "newer build"}
		}},
		{"stable store of a newer format", 0, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			// Both copies: a newer build's every set writes both slots.
			// One copy claiming a newer version beside a valid one is a
			// damaged byte, which the node starts past with a warning
			// (raftlog's TestStableOneCopyDamagedWarns).
			p := filepath.Join(dc.logDir(f), "stable")
			setBytes(t, p, 6, []byte{0, 2})
			setBytes(t, p, 4096+6, []byte{0, 2})
			return []string{p, "newer build"}
		}},
		{"snapshot of a newer format", 1, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			s := dc.snapshotDirs(t, f)
			state := filepath.Join(s[len(s)-1], "state.bin")
			setBytes(t, state, 8, []byte{99}) // the state machine's format version
			fixSnapshotCRC(t, s[len(s)-1])
			return []string{state, "newer build"}
		}},
		{"log directory removed", 0, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			os.RemoveAll(dc.logDir(f))
			return []string{filepath.Join(dc.logDir(f), "stable"), "RAFT REMOVE " + dc.ids[f]}
		}},
		{"log directory removed, no identity file (an earlier build's directory)", 1, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			os.RemoveAll(dc.logDir(f))
			os.Remove(filepath.Join(dc.dir(f), identityFile))
			return []string{filepath.Join(dc.logDir(f), "stable"), "snapshots"}
		}},
		{"half-written: a torn last append, a snapshot and a spare being written", 1, func(t *testing.T, dc *diskCluster, f int, cfg *Config) []string {
			unmarkNode(t, dc.logDir(f)) // the crash came before the mark was raised
			segs := segments(t, dc.logDir(f))
			p := segs[len(segs)-1]
			os.Truncate(p, lastRecordEnd(t, p)-5)
			os.MkdirAll(filepath.Join(dc.dir(f), "snapshots", "9-999-123.tmp"), 0o755)
			os.WriteFile(filepath.Join(dc.dir(f), "snapshots", "9-999-123.tmp", "state.bin"), []byte("DBOLTSN"), 0o644)
			os.WriteFile(filepath.Join(dc.logDir(f), "spare.tmp"), make([]byte, 1000), 0o644)
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := startDiskCluster(t, 3, func(i int, cfg *Config) { cfg.SegmentSize = 32 << 10 })
			dc.write(t, "a", 40, 1000)
			for s := 0; s < tc.snaps; s++ {
				for _, n := range dc.nodes {
					if err := n.Snapshot(); err != nil {
						t.Fatal(err)
					}
				}
				dc.write(t, "s", 5, 10)
			}
			f := (dc.leader(-1) + 1) % 3
			dc.converged()
			dc.stop(f)
			cfg := dc.cfgs[f]
			want := tc.damage(t, dc, f, &cfg)
			saved := dc.cfgs[f]
			dc.cfgs[f] = cfg
			_, err := dc.start(f)
			dc.cfgs[f] = saved
			if want == nil {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				dc.write(t, "b", 3, 10)
				dc.converged()
				return
			}
			if err == nil {
				t.Fatalf("started, want an error with %q", want)
			}
			t.Logf("refused: %v", err)
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("start: %v\nwant it to hold %q", err, w)
				}
			}
		})
	}
}

func setBytes(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// fixSnapshotCRC rewrites the CRC in a snapshot's meta.json to match its
// state.bin, as the build that wrote it would have.
func fixSnapshotCRC(t *testing.T, dir string) {
	t.Helper()
	state, err := os.ReadFile(filepath.Join(dir, "state.bin"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "meta.json")
	b, _ := os.ReadFile(p)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	crc := crc64.Checksum(state, crc64.MakeTable(crc64.ECMA))
	m["CRC"] = binary.BigEndian.AppendUint64(nil, crc)
	b, _ = json.Marshal(m)
	os.WriteFile(p, b, 0o644)
}
