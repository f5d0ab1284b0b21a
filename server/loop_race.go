//go:build linux && race

package server

import "syscall"

// Under the race detector the event loop reads and writes through the
// syscall package, whose annotations tell the detector that what one
// goroutine did before a write happened before what another does after
// reading it (the way tests check a fake backend after its reply).

func rawRead(fd int, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(fd, p)
	if err != nil {
		return -1, err.(syscall.Errno)
	}
	return n, 0
}

func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(fd, p)
	if err != nil {
		return -1, err.(syscall.Errno)
	}
	return n, 0
}
