package cluster

import (
	"bytes"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// raftFSM.Restore must set the applied index to the restored snapshot's,
// but raft hands it only the snapshot's bytes. Raft opens the snapshot it
// restores on the goroutine that then calls Restore (its FSM goroutine,
// or NewRaft's at a start), while a leader may open snapshots on other
// goroutines to send them. So raft is given its snapshot store through
// openedSnaps, which notes which snapshot each goroutine has open, and
// Restore takes the one its own goroutine opened.
type openedSnaps struct {
	raft.SnapshotStore
	mu     sync.Mutex
	opened map[uint64]*openedSnap // goroutine → the snapshot it opened, until closed
}

func newOpenedSnaps(s raft.SnapshotStore) *openedSnaps {
	return &openedSnaps{SnapshotStore: s, opened: map[uint64]*openedSnap{}}
}

func (s *openedSnaps) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return meta, rc, err
	}
	o := &openedSnap{ReadCloser: rc, s: s, g: goroutineID(), meta: meta}
	if o.g == 0 {
		// No number read from the stack trace: nothing is noted, and
		// Restore finds no snapshot (the applied index then follows
		// the next applied entry, as before the restore was noted).
		return meta, rc, nil
	}
	s.mu.Lock()
	s.opened[o.g] = o
	s.mu.Unlock()
	return meta, o, nil
}

// openedHere is the snapshot the calling goroutine has open (nil if none).
func (s *openedSnaps) openedHere() *openedSnap {
	g := goroutineID()
	if g == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened[g]
}

type openedSnap struct {
	io.ReadCloser
	s    *openedSnaps
	g    uint64
	meta *raft.SnapshotMeta
	n    atomic.Int64 // bytes read
}

func (o *openedSnap) Read(p []byte) (int, error) {
	n, err := o.ReadCloser.Read(p)
	o.n.Add(int64(n))
	return n, err
}

func (o *openedSnap) Close() error {
	o.s.mu.Lock()
	if o.s.opened[o.g] == o {
		delete(o.s.opened, o.g)
	}
	o.s.mu.Unlock()
	return o.ReadCloser.Close()
}

// goroutineID is the calling goroutine's number, from the first line of
// its stack trace ("goroutine 42 [running]:"); 0 (no goroutine's number)
// if that line cannot be read.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
