//go:build linux && !race

package cluster

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawConn is a TCP connection whose reads and writes are raw, non-blocking
// read(2) and write(2) calls, made through the socket's RawConn: when the
// socket is not ready the goroutine parks in the runtime's poller as a
// net.Conn's would. What it saves is the scheduler's system call
// bookkeeping, and with it the wake-ups of the runtime's monitor thread,
// which every such call ends while it sleeps and which then polls every
// 20 µs for a while. With raft's traffic on every batch, that polling was
// a fifth of a node's CPU. Deadlines keep working: the RawConn honours
// them.
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// fastConn returns c with raw reads and writes, or c itself if it is not a
// TCP connection.
func fastConn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawConn{TCPConn: tc, rc: rc}
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno := 0, syscall.Errno(0)
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opErr("read", err)
	case errno != 0:
		return 0, c.opErr("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	n, errno := 0, syscall.Errno(0)
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, c.opErr("write", err)
	case errno != 0:
		return n, c.opErr("write", errno)
	}
	return n, nil
}

// opErr wraps err the way net.Conn's own methods do, so that callers
// checking for timeouts (net.Error) see what they expect.
func (c *rawConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
