package raftlog

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStableSet is what one set of the stable store costs: raft's
// term and vote, on elections, and the synced mark, about once a second
// while appends go on (synced.go). A set writes both slots, one after the
// other, each followed by fdatasync (stable.go). The other cases are
// references in the same run: one slot written and synced (so the second
// slot's share is two-slots less one-slot), and the whole state written
// to a temporary file, synced, renamed and the directory synced, as the
// layout before the slots did (which needed new space on every set).
// Run it on the file system of a data directory (TMPDIR): on a tmpfs an
// fdatasync costs nothing.
func BenchmarkStableSet(b *testing.B) {
	term := func(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }
	b.Run("two-slots", func(b *testing.B) {
		st, err := openStable(filepath.Join(b.TempDir(), "stable"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer st.close()
		i := uint64(0)
		for b.Loop() {
			i++
			if err := st.set("CurrentTerm", term(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(2, "fdatasyncs/op")
	})
	b.Run("one-slot", func(b *testing.B) {
		st, err := openStable(filepath.Join(b.TempDir(), "stable"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer st.close()
		slot := make([]byte, stableSlot)
		i := uint64(0)
		for b.Loop() {
			i++
			if _, err := st.encodeSlot(slot, st.seq+i, "CurrentTerm", term(i), ""); err != nil {
				b.Fatal(err)
			}
			if _, err := st.f.WriteAt(slot, int64(int(i%2)*stableSlot)); err != nil {
				b.Fatal(err)
			}
			if err := fdatasync(st.f); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(1, "fdatasyncs/op")
	})
	b.Run("replace-file", func(b *testing.B) {
		dir := b.TempDir()
		path := filepath.Join(dir, "stable")
		st := &stable{kv: map[string][]byte{"LastVoteTerm": term(1), "LastVoteCand": []byte("n1"), syncedKey: term(1)}}
		slot := make([]byte, stableSlot)
		i := uint64(0)
		for b.Loop() {
			i++
			n, err := st.encodeSlot(slot, i, "CurrentTerm", term(i), "")
			if err != nil {
				b.Fatal(err)
			}
			if err := writeFileAtomic(path, slot[:n]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(2, "fsyncs/op")
		os.Remove(path)
	})
}

// BenchmarkStoreLogsMarked is BenchmarkStoreLogs (an append of one entry,
// synced) with the synced mark raised at its real rate (every second) and
// a hundred times as often: what the stable file's fdatasyncs, on their
// own goroutine, take from the log's appends on the same disk.
func BenchmarkStoreLogsMarked(b *testing.B) {
	for _, every := range []time.Duration{markEvery, markEvery / 100} {
		b.Run("mark-every-"+every.String(), func(b *testing.B) {
			saved := markEvery
			markEvery = every
			defer func() { markEvery = saved }()
			s, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			data := bytes.Repeat([]byte{'x'}, 2000)
			next := uint64(1)
			s.stable.mu.Lock()
			seq0 := s.stable.seq
			s.stable.mu.Unlock()
			start := time.Now()
			for b.Loop() {
				if err := s.StoreLogs([]*raft.Log{{Index: next, Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
					b.Fatal(err)
				}
				next++
			}
			s.stable.mu.Lock()
			sets := s.stable.seq - seq0
			s.stable.mu.Unlock()
			b.ReportMetric(float64(sets)/time.Since(start).Seconds(), "marks/s")
		})
	}
}
