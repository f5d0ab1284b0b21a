//go:build linux

package server

import (
	"syscall"
	"unsafe"

	"github.com/deadbolt/deadbolt/fsm"
)

// A loop in the runtime's poller (a cluster node's) is found runnable when
// the scheduler polls the network: when the node's only P has nothing else
// to run, or every 10 ms from the runtime's monitor. While a long read
// walks the keyspace the P always has something else (fsm/walk_nudge.go),
// so every walk's yield runs nudge: if the loop's epoll set has events
// ready, the loop is woken as a post wakes it, and runs at the walk's
// next yield instead of at the monitor's next poll.

// nudgeDuringWalks registers the loop's nudge with the walks, if the loop
// waits in the poller; the function returned removes it.
func (l *eventLoop) nudgeDuringWalks() (remove func()) {
	if l.epoll == nil {
		return func() {} // blocked in epoll_wait: the kernel wakes it
	}
	return fsm.OnWalkYield(l.nudge)
}

// pollFd is struct pollfd.
type pollFd struct {
	fd             int32
	events, revent int16
}

const pollIn = 0x1

// nudge wakes the loop if its epoll set has events ready, without taking
// them (ppoll on the epoll descriptor, no wait). A loop that is running
// meanwhile finds the deadline at its next wait, clears it and polls: an
// extra turn, nothing lost.
// The poll goes through the runtime's hold on the descriptor (Control):
// a walk that loaded the hooks before the loop removed its nudge may still
// call it after the loop closed epfd, and then Control refuses instead of
// polling a closed or reused descriptor.
func (l *eventLoop) nudge() {
	if l.woken.Load() {
		return // a post's wake-up is on its way
	}
	ready := false
	err := l.epoll.Control(func(fd uintptr) {
		fds := [1]pollFd{{fd: int32(fd), events: pollIn}}
		var zero syscall.Timespec
		n, _, errno := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		ready = errno == 0 && n == 1 && fds[0].revent&pollIn != 0
	})
	if err != nil || !ready {
		return
	}
	l.nudges.Add(1)
	l.epf.SetReadDeadline(wakeDeadline)
}
