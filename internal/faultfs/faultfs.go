//go:build linux

// Package faultfs is a FUSE loopback file system for fault injection: it
// mounts a backing directory on another and passes every call through,
// except that fsync (and, if asked, write) of chosen files fails with EIO
// until the fault is cleared. The error comes from the kernel: a program
// whose files are on the mount gets EIO from its own fdatasync(2) or
// write(2), with no hook inside the program. Device-mapper's error and
// flakey targets would fail the block device underneath instead; this
// kernel has no device-mapper, but it has FUSE.
//
// Directory syncs (FSYNCDIR) pass through: the faults are on files.
//
// The file system is served by the process that mounts it. A close(2)
// asks the server to flush the file and waits for the answer, so a
// process that dies with files of its own open on its own mount would
// hang as a zombie, its closes at exit waiting for the server it was
// (until /sys/fs/fuse/connections/N/abort): a failing in-process test
// would hang until go test's timeout. So the server answers the first
// flush with ENOSYS, after which the kernel sends none on this mount (a
// loopback has nothing to flush: writes reach the backing file at once).
// Other processes' files are safe anyway: a dead server's requests fail
// with ENOTCONN.
package faultfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is one mounted fault-injecting file system.
type FS struct {
	// Dir is where it is mounted; Backing the directory it passes through to.
	Dir, Backing string

	server *fuse.Server
	mu     sync.Mutex
	sync   *rule // nil: fsyncs pass
	write  *rule // nil: writes pass
	faults atomic.Int64
	once   sync.Once
	uerr   error
}

// rule chooses the files a fault hits.
type rule struct{ pattern string }

// matches reports whether the file at rel (relative to the mount) is hit:
// every file for an empty pattern, else those whose base name matches
// the glob pattern (filepath.Match).
func (r *rule) matches(rel string) bool {
	if r == nil {
		return false
	}
	if r.pattern == "" {
		return true
	}
	ok, _ := filepath.Match(r.pattern, filepath.Base(rel))
	return ok
}

// Available says whether this machine can mount a FUSE file system here:
// the kernel knows fuse and /dev/fuse opens for reading and writing. The
// error says what is missing.
func Available() error {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return fmt.Errorf("faultfs: %v", err)
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == "fuse" {
			found = true
		}
	}
	if !found {
		return errors.New("faultfs: the kernel has no fuse file system (not in /proc/filesystems)")
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("faultfs: cannot open /dev/fuse: %v", err)
	}
	f.Close()
	return nil
}

// Mount mounts a loopback of backing on dir (both must exist) and serves
// it on goroutines of this process until Unmount. Faults start cleared.
func Mount(dir, backing string) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("faultfs: %s: %v", backing, err)
	}
	f := &FS{Dir: dir, Backing: backing}
	lr := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, fs: f}
	lr.RootNode = root
	zero := time.Duration(0)
	srv, err := fs.Mount(dir, root, &fs.Options{
		// No attribute or entry caching: sizes and names are the backing
		// directory's at every call, as a program that stats its files
		// after writing them expects.
		AttrTimeout:  &zero,
		EntryTimeout: &zero,
		MountOptions: fuse.MountOptions{
			FsName:        "faultfs",
			Name:          "faultfs",
			DisableXAttrs: true,
			// mount(2) itself when root; else the fusermount helper.
			DirectMount: true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("faultfs: mount %s on %s: %v", backing, dir, err)
	}
	f.server = srv
	return f, nil
}

// FailSync makes every fsync and fdatasync of a file whose base name
// matches pattern (a filepath.Match glob; "" for every file) fail with
// EIO until Clear.
func (f *FS) FailSync(pattern string) {
	f.mu.Lock()
	f.sync = &rule{pattern}
	f.mu.Unlock()
}

// FailWrite makes every write to a file whose base name matches pattern
// ("" for every file) fail with EIO until Clear.
func (f *FS) FailWrite(pattern string) {
	f.mu.Lock()
	f.write = &rule{pattern}
	f.mu.Unlock()
}

// Clear ends every fault: calls pass through again.
func (f *FS) Clear() {
	f.mu.Lock()
	f.sync, f.write = nil, nil
	f.mu.Unlock()
}

// Faults is how many calls failed with an injected EIO so far.
func (f *FS) Faults() int64 { return f.faults.Load() }

// Unmount unmounts the file system; if the kernel refuses (a file on it is
// still open), it detaches it lazily so that the mount point goes away now
// and the file system when its last file closes.
func (f *FS) Unmount() error {
	f.once.Do(func() {
		err := f.server.Unmount() // waits for the server to end
		if err == nil {
			return
		}
		// Busy: detach it. The server's goroutines end when the kernel
		// lets the connection go, after the last open file closes.
		if derr := syscall.Unmount(f.Dir, syscall.MNT_DETACH); derr != nil {
			f.uerr = fmt.Errorf("faultfs: unmount %s: %v; lazy unmount: %v", f.Dir, err, derr)
		}
	})
	return f.uerr
}

// hit says whether a call on the file at rel fails now, and counts it.
func (f *FS) hit(r func() *rule, rel string) bool {
	f.mu.Lock()
	ok := r().matches(rel)
	f.mu.Unlock()
	if ok {
		f.faults.Add(1)
	}
	return ok
}

// node is a loopback node whose fsync and write can fail.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeFsyncer     = (*node)(nil)
	_ fs.NodeWritever    = (*node)(nil)
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
)

// WrapChild makes every node below the root a faulting one too.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, fs: n.fs}
	}
	return ops
}

func (n *node) rel() string { return n.Path(nil) }

// file is an open file that the kernel may not bypass: without
// PassthroughFd, reads and writes come to this server (FUSE passthrough
// would send them straight to the backing file, out of a fault's reach).
type file struct{ *fs.LoopbackFile }

// PassthroughFd refuses passthrough.
func (*file) PassthroughFd() (int, bool) { return -1, false }

// Flush answers ENOSYS: the kernel then sends no more flushes on this
// mount, and a close no longer waits for the server (the package comment).
func (*file) Flush(ctx context.Context) syscall.Errno { return syscall.ENOSYS }

func wrap(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &file{lf}
	}
	return fh
}

// Open opens the backing file, with no passthrough.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	return wrap(fh), fl, errno
}

// Create creates and opens the backing file, with no passthrough.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, wrap(fh), fl, errno
}

// Fsync fails with EIO while a sync fault covers this file, else syncs
// the backing file.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.fs.hit(func() *rule { return n.fs.sync }, n.rel()) {
		return syscall.EIO
	}
	if s, ok := f.(fs.FileFsyncer); ok {
		return s.Fsync(ctx, flags)
	}
	return syscall.ENOTSUP
}

// Writev fails with EIO while a write fault covers this file, else
// writes to the backing file.
func (n *node) Writev(ctx context.Context, f fs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	if n.fs.hit(func() *rule { return n.fs.write }, n.rel()) {
		return 0, syscall.EIO
	}
	if w, ok := f.(fs.FileWritever); ok {
		return w.Writev(ctx, data, off)
	}
	w, ok := f.(fs.FileWriter)
	if !ok {
		return 0, syscall.ENOTSUP
	}
	if len(data) == 1 {
		return w.Write(ctx, data[0], off)
	}
	var buf []byte
	for _, d := range data {
		buf = append(buf, d...)
	}
	return w.Write(ctx, buf, off)
}
