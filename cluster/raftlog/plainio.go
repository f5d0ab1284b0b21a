package raftlog

import "sync/atomic"

// plainIO makes appends use the syscall package's calls instead of raw
// ones (appendio_linux.go). A test whose log is on a FUSE mount that the
// test process serves itself (internal/faultfs) needs it: a raw call
// blocked on that mount keeps its goroutine's P and counts as running, so
// a stop of the world for the collector waits for it, and the server's
// goroutines that would answer it cannot run: the process hangs.
var plainIO atomic.Bool

// PlainSyscallsForTest makes appends use plain system calls until the
// test ends, for a test that serves the FUSE mount its log is on.
func PlainSyscallsForTest(tb interface{ Cleanup(func()) }) {
	plainIO.Store(true)
	tb.Cleanup(func() { plainIO.Store(false) })
}
