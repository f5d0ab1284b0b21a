package main

import (
	"context"
	"encoding/json"
	"hash/crc64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/fsm"
)

// TestProcessNewerFormatsRefused: a build that meets a log entry or a
// snapshot of a format it does not know refuses to start, naming what it
// met, and applies nothing of it: this build against an envelope and a
// snapshot version above its own, the older build (oldCommit) against
// this build's envelope version 3 (a restricted ACL user's command), and
// the build before version 4 (preFlagsCommit) against a folding FCALL,
// alone and in a batch.
func TestProcessNewerFormatsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	newBin := buildBinary(t)
	ctx := context.Background()

	// stopped returns the data directory of a one-node cluster of bin
	// that took writes and a snapshot, then stopped.
	stopped := func(t *testing.T, bin string) (*proc, string) {
		p := &proc{id: "f1", addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir()}
		p.start(t, bin, p.id+"="+p.raft)
		t.Cleanup(p.kill)
		waitServing(t, p)
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
		defer c.Close()
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, "RAFT", "SNAPSHOT").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, "k2", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		stopGracefully(t, p)
		return p, filepath.Join(p.dir, "data")
	}
	// appendEntry appends an entry holding data to the stopped node's log.
	appendEntry := func(t *testing.T, data string, entry []byte) uint64 {
		s, err := raftlog.Open(filepath.Join(data, "log"), raftlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		last, err := s.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		var l raft.Log
		if err := s.GetLog(last, &l); err != nil {
			t.Fatal(err)
		}
		if err := s.StoreLogs([]*raft.Log{{Index: last + 1, Term: l.Term, Type: raft.LogCommand, Data: entry}}); err != nil {
			t.Fatal(err)
		}
		return last + 1
	}
	// refused starts bin on p's directory and wants it to exit, saying all of want.
	refused := func(t *testing.T, bin string, p *proc, want ...string) {
		cmd := exec.Command(bin, "--id", p.id, "--addr", p.addr, "--raft-addr", p.raft, "--data-dir", filepath.Join(p.dir, "data"), "--peers", p.id+"="+p.raft)
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("still running after 60 s:\n%s", out)
		}
		if err == nil {
			t.Fatalf("exited 0:\n%s", out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Fatalf("the refusal does not say %q:\n%s", w, out)
			}
		}
		t.Logf("refused: %s", lastLine(out))
	}

	t.Run("newer envelope", func(t *testing.T) {
		p, data := stopped(t, newBin)
		next := appendEntry(t, data, []byte{9, 0, 0})
		refused(t, newBin, p, "log entry "+itoa(next), "version 9", "written by a newer build")
	})
	t.Run("newer snapshot", func(t *testing.T) {
		p, data := stopped(t, newBin)
		states, _ := filepath.Glob(filepath.Join(data, "snapshots", "*", "state.bin"))
		if len(states) == 0 {
			t.Fatal("no snapshot")
		}
		for _, s := range states {
			b, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			// As a newer build would write it: the version byte, and
			// raft's checksum of the file in meta.json to match.
			b[fsm.SnapshotHeaderSize-1] = fsm.SnapshotVersion + 1
			if err := os.WriteFile(s, b, 0o644); err != nil {
				t.Fatal(err)
			}
			metaPath := filepath.Join(filepath.Dir(s), "meta.json")
			mb, err := os.ReadFile(metaPath)
			if err != nil {
				t.Fatal(err)
			}
			var meta map[string]any
			if err := json.Unmarshal(mb, &meta); err != nil {
				t.Fatal(err)
			}
			h := crc64.New(crc64.MakeTable(crc64.ECMA))
			h.Write(b)
			meta["CRC"] = h.Sum(nil)
			if mb, err = json.Marshal(meta); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(metaPath, mb, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		refused(t, newBin, p, "state.bin", "format version "+itoa(uint64(fsm.SnapshotVersion+1)), "newer")
	})
	t.Run("older build, envelope version 3", func(t *testing.T) {
		oldBin := buildOld(t)
		p, data := stopped(t, oldBin)
		env := cluster.AppendEntry(nil, cluster.Entry{Time: 1, Cmd: fsm.Command{Args: [][]byte{[]byte("SET"), []byte("k"), []byte("evil")}, User: "locker"}})
		appendEntry(t, data, env)
		if _, err := raftlog.DowngradeStable(filepath.Join(data, "log")); err != nil {
			t.Fatal(err)
		}
		// The older build knows no version 3: it stops at the entry
		// (a panic naming it, in that build) rather than apply it.
		refused(t, oldBin, p, "does not decode", "unknown version")
	})
	t.Run("build before version 4, a folding FCALL", func(t *testing.T) {
		// That build knows ErrNewerEnvelope: it names the version and
		// stops, having applied nothing of the entry.
		preBin := buildPreFlags(t)
		p, data := stopped(t, preBin)
		env := cluster.AppendEntry(nil, cluster.Entry{Time: 1, Cmd: fsm.Command{Args: [][]byte{[]byte("FCALL"), []byte("abc"), []byte("0")}, FoldFunctionNames: true}})
		if env[0] != 4 {
			t.Fatalf("a marked FCALL in envelope %d", env[0])
		}
		next := appendEntry(t, data, env)
		refused(t, preBin, p, "log entry "+itoa(next), "version 4", "written by a newer build")
	})
	t.Run("build before version 4, a batch holding a folding FCALL", func(t *testing.T) {
		// A group (pipeline.go) is a batch (version 2) of envelopes: one
		// of version 4 in it stops that build at the whole entry, by
		// name, before the SET beside it is applied.
		preBin := buildPreFlags(t)
		p, data := stopped(t, preBin)
		set := cluster.AppendEntry(nil, cluster.Entry{Time: 1, Cmd: fsm.Command{Args: [][]byte{[]byte("SET"), []byte("k"), []byte("evil")}}})
		fc := cluster.AppendEntry(nil, cluster.Entry{Time: 1, Cmd: fsm.Command{Args: [][]byte{[]byte("FCALL"), []byte("abc"), []byte("0")}, FoldFunctionNames: true}})
		batch := cluster.AppendBatch(nil, set, fc)
		if set[0] != 1 || fc[0] != 4 || batch[0] != 2 {
			t.Fatalf("envelopes %d and %d in a batch %d", set[0], fc[0], batch[0])
		}
		next := appendEntry(t, data, batch)
		refused(t, preBin, p, "log entry "+itoa(next), "batch command 1", "version 4", "written by a newer build")
	})
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
