package raftlog

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data and the metadata needed to read it (its
// size), not its timestamps.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// startWriteback asks the kernel to start writing f's dirty pages in
// [off, off+n) to the disk, without waiting for them
// (sync_file_range(2), SYNC_FILE_RANGE_WRITE). It is a hint: an error is
// ignored, and a later sync makes the data durable.
func startWriteback(f *os.File, off, n int64) {
	const syncFileRangeWrite = 2
	syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
}
