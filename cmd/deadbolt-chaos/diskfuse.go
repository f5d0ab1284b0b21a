package main

import (
	"os"
	"path/filepath"

	"github.com/deadbolt/deadbolt/internal/faultfs"
)

// Real I/O errors for disk-eio: where this machine has FUSE, each node's
// data directory is reached through a loopback of its own
// (internal/faultfs) over its tmpfs: DIR/fuse shows DIR/disk, and the data
// directory is DIR/fuse/data. disk-eio then makes the kernel answer the
// node's own fdatasync of its log segments with EIO; without FUSE it
// falls back to the node's test-only --disk-fail-file, and its detail
// says which ran. Through FUSE the fault hits the log's segments, or one
// time in three its stable file (raft's term and vote, and the synced
// mark): the node must stop the same way, without raft's panic
// (cluster/stablefail.go). The loopback is served by the harness's own
// goroutines and goes away with it.

// segments and stableFile are the globs of the files a disk-eio fault
// fails.
const (
	segments   = "*.seg"
	stableFile = "stable"
)

// mountFUSE puts a fault-injecting loopback of mp, n's tmpfs, at
// n.dir/fuse and moves n's data directory into it. It reports why not if
// it cannot, and n keeps its data directory on the tmpfs.
func (h *harness) mountFUSE(n *node, mp string) error {
	dir := filepath.Join(n.dir, "fuse")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := faultfs.Mount(dir, mp)
	if err != nil {
		os.Remove(dir)
		return err
	}
	d := h.disk
	d.mu.Lock()
	d.fuse[n] = f
	d.mu.Unlock()
	n.dataDir = filepath.Join(dir, "data")
	return nil
}

// fuseOf is n's fault-injecting loopback, nil if it has none.
func (d *diskFaults) fuseOf(n *node) *faultfs.FS {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fuse[n]
}

// clearFUSE ends every loopback's faults.
func (d *diskFaults) clearFUSE() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.fuse {
		f.Clear()
	}
}

// unmountFUSE unmounts every loopback (the nodes stopped first).
func (h *harness) unmountFUSE() {
	d := h.disk
	d.mu.Lock()
	mounted := d.fuse
	d.fuse = map[*node]*faultfs.FS{}
	d.mu.Unlock()
	for n, f := range mounted {
		if err := f.Unmount(); err != nil {
			h.logf("%s: %v", n.id, err)
		}
	}
}
