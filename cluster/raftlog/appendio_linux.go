//go:build linux && !race

package raftlog

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// An append's pwrite and fdatasync are raw system calls: the goroutine
// keeps its P (the scheduler's processor) while the disk works. A call
// through the syscall package gives the P up if it lasts more than a few
// tens of microseconds, as an fdatasync always does. With few Ps that
// costs two thread switches per append (another thread takes the P,
// this one waits to get it back), and it wakes the runtime's monitor
// thread, which then polls every 20 µs for a while; on the benchmark
// machine the node spent a fifth of its CPU on that. A raft node has
// little to do while its log is being synced: the leader's loop waits
// for the append, and a follower's reply waits for it. The cost of
// holding the P is that the node's other goroutines wait too, and a
// stop of the world for the garbage collector waits for the sync (and a
// test that serves its log's FUSE mount itself turns them off: plainio.go).

// appendWrite writes b at off in f.
func appendWrite(f *os.File, b []byte, off int64) error {
	if plainIO.Load() {
		_, err := f.WriteAt(b, off)
		return err
	}
	fd := f.Fd()
	for len(b) > 0 {
		r, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		switch e {
		case 0:
			if r == 0 {
				return io.ErrShortWrite
			}
			b, off = b[r:], off+int64(r)
		case syscall.EINTR:
		default:
			return &os.PathError{Op: "write", Path: f.Name(), Err: e}
		}
	}
	return nil
}

// appendSync is fdatasync(2) for an append.
func appendSync(f *os.File) error {
	if plainIO.Load() {
		return fdatasync(f)
	}
	fd := f.Fd()
	for {
		_, _, e := syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
		default:
			return &os.PathError{Op: "sync", Path: f.Name(), Err: e}
		}
	}
}
