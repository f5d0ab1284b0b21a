//go:build unix

package raftlog

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// diskModel keeps, for each file the store syncs, its content as of the
// last sync: what a power cut would leave of it. Files are told apart by
// inode, since a segment is renamed after it was opened.
type diskModel struct {
	mu     sync.Mutex
	synced map[uint64][]byte
	cut    bool
}

func modelSyncs(t *testing.T) *diskModel {
	m := &diskModel{synced: map[uint64][]byte{}}
	record := func(f *os.File) error {
		if err := appendSync(f); err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		b := make([]byte, st.Size)
		if _, err := f.ReadAt(b, 0); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if !m.cut {
			m.synced[st.Ino] = b
		}
		return nil
	}
	old := syncFile
	syncFile = record
	t.Cleanup(func() { syncFile = old })
	return m
}

// powerCut stops recording and writes, into a copy of dir, what the disk
// would hold: each segment as of its last sync, or all zeros (as it was
// made) if it was never synced; other files as they are.
func (m *diskModel) powerCut(t *testing.T, dir string) string {
	t.Helper()
	m.mu.Lock()
	m.cut = true
	synced := m.synced
	m.mu.Unlock()
	out := t.TempDir()
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if os.IsNotExist(err) {
			return nil // renamed away meanwhile (the reserve, made in the background)
		}
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		dst := filepath.Join(out, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if filepath.Ext(path) == segSuffix {
			if s, ok := synced[info.Sys().(*syscall.Stat_t).Ino]; ok {
				b = s
			} else {
				b = make([]byte, len(b))
			}
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// What WaitDurable has confirmed survives a power cut at any moment:
// appends deferred (the leader's) and synced (a follower's) interleave
// over many small segments, a goroutine confirms indexes as they become
// durable, and the copy of the disk made at a random moment must open with
// every confirmed entry intact.
func TestWaitDurableSurvivesPowerCut(t *testing.T) {
	for round := range 20 {
		m := modelSyncs(t)
		dir := t.TempDir()
		s, err := Open(dir, Options{SegmentSize: 1 << 12})
		if err != nil {
			t.Fatal(err)
		}
		var leader atomic.Bool
		s.DeferSyncWhen(leader.Load)
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		cutAt := 20 + rng.IntN(200)

		var confirmed atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := uint64(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if l, _ := s.LastIndex(); l < i {
					i-- // not written yet (WaitDurable would not wait for it)
					runtime.Gosched()
					continue
				}
				if err := s.WaitDurable(i); err != nil {
					return
				}
				confirmed.Store(i)
			}
		})
		next := uint64(1)
		for next <= uint64(cutAt) {
			leader.Store(rng.IntN(4) != 0)
			n := uint64(1 + rng.IntN(6))
			if err := s.StoreLogs(entries(next, next+n-1, 1)); err != nil {
				t.Fatal(err)
			}
			next += n
		}
		sure := confirmed.Load()
		disk := m.powerCut(t, dir)
		close(stop)
		s.Close()
		wg.Wait()

		r, err := Open(disk, Options{SegmentSize: 1 << 12})
		if err != nil {
			t.Fatalf("round %d: open after the power cut: %v", round, err)
		}
		last, _ := r.LastIndex()
		if last < sure {
			t.Fatalf("round %d: after the power cut the log ends at %d, but %d was confirmed durable", round, last, sure)
		}
		if sure > 0 {
			checkRange(t, r, 1, last, term1)
		}
		r.Close()
	}
}
