//go:build linux

package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/deadbolt/deadbolt/resp"
)

// eventLoop serves every connection of a server whose backend answers
// without waiting (the single node) from one goroutine, as Redis's event
// loop does: it waits on epoll for all sockets at once, reads what has
// arrived, runs the complete requests and writes the replies, with
// non-blocking system calls that bypass the Go scheduler. A goroutine per
// connection costs, per request, one more read (the one that finds the
// socket empty), a park and a wake-up; on two cores that was more CPU than
// the command itself.
//
// The loop owns its connections' sockets and request readers, and each
// connection's per-command state except while a command that may wait
// (mayBlock: WAIT, DEBUG SLEEP) runs on a goroutine of its own; the
// connection is busy until that goroutine hands it back. Other goroutines
// talk to the loop through post: a new connection, output to write
// (pub/sub messages), a busy command's end, a connection to close.
type eventLoop struct {
	s      *Server
	async  AsyncApplier // the backend, if its writes wait (the cluster)
	reader AsyncReader  // the backend, if its reads can start without waiting
	// grouper is the backend if it commits pipelined writes together
	// (pipeline.go).
	grouper GroupApplier
	long    LongReader // the backend, if synchronous and it tells long reads
	epfd    int
	wakefd  int // eventfd that wakes epoll_wait for posted tasks
	// epoll is epfd registered with the Go runtime's poller, nil if that
	// failed: the loop then blocks in epoll_wait instead. epf holds epfd
	// once register has run; post wakes a loop parked in the poller by
	// setting epf's read deadline in the past.
	epoll syscall.RawConn
	epf   *os.File

	// Loop goroutine only.
	conns      map[int32]*conn
	dirty      []*conn   // connections with output to write this pass
	spareDirty []*conn   // the emptied list of the pass before (flush)
	ready      []*conn   // connections whose buffered requests may run again
	now        time.Time // when this pass began: the commands' arrival time
	events     [128]syscall.EpollEvent

	mu      sync.Mutex
	tasks   []loopTask
	spare   []loopTask    // the loop's: the last batch of tasks, emptied, for the next
	stopped bool          // taskStop was run; under mu
	woken   atomic.Bool   // tasks were posted since the last runTasks began
	nudges  atomic.Uint64 // wake-ups by a walk's yield (loop_nudge_linux.go)
}

// testLoopWait, set by a test, makes new loops wait in the runtime's
// poller (waitPoller) or in epoll_wait (waitBlocking) whatever their
// backend.
var testLoopWait atomic.Int32

const (
	waitPoller   = 1
	waitBlocking = 2
)

// testHookDrained, set by a test, runs in runTasks between draining the
// eventfd (a loop in the poller has none to drain) and clearing woken:
// the window a lost wake-up would come from.
var testHookDrained func()

const epollIn = syscall.EPOLLIN | syscall.EPOLLRDHUP

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	r, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errno != 0 {
		syscall.Close(epfd)
		return nil, errno
	}
	l := &eventLoop{s: s, epfd: epfd, wakefd: int(r), conns: make(map[int32]*conn)}
	l.async, _ = s.backend.(AsyncApplier)
	l.reader, _ = s.backend.(AsyncReader)
	if l.async != nil {
		l.grouper, _ = s.backend.(GroupApplier)
	} else {
		l.long, _ = s.backend.(LongReader)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wakefd)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wakefd, &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(l.wakefd)
		return nil, err
	}
	switch testLoopWait.Load() {
	case waitPoller:
		l.register()
	case waitBlocking:
	default:
		if l.async != nil {
			l.register()
		}
	}
	return l, nil
}

// register puts the loop's epoll descriptor in the Go runtime's poller
// (an epoll set is readable while it has events ready), so that an idle
// loop parks like any goroutine instead of blocking its thread in
// epoll_wait. Loops of a cluster node do this: the node's raft goroutines
// need the P while the loop is idle, and a blocking system call costs,
// with one P, two thread switches per wait (the runtime hands the P to
// another thread while the call blocks, and the loop's thread must get it
// back when events arrive); it also keeps the runtime's monitor thread
// waking every 20 µs, since each blocking call tells it to look for Ps to
// take back. A single node's loop has the process to itself and blocks: a
// thread asleep in epoll_wait is woken by the kernel directly, where the
// poller adds a second epoll set and a goroutine wake-up (one client's
// round trip took 15 % longer).
//
// Another goroutine's post wakes such a loop by setting the epoll file's
// read deadline in the past, which makes the parked loop runnable at
// once, as a channel send would. Making the epoll set readable (the
// eventfd) wakes it only when the scheduler next polls the network, and
// with one busy P that is when every other goroutine has blocked. On a
// cluster leader the results of a committed entry are posted to the loop,
// and through the eventfd they waited behind the next entry's append, its
// sync (which holds the P) and the replication goroutines: 290–430 µs on
// average from post to the loop, 20 µs with the deadline, and about 13 %
// more lock pairs per second at 64 clients (more in 6 of 7 alternating
// rounds).
func (l *eventLoop) register() {
	if err := syscall.SetNonblock(l.epfd, true); err != nil {
		return
	}
	// From here the file owns epfd (and would close it when collected):
	// the loop keeps it and closes epfd through it.
	l.epf = os.NewFile(uintptr(l.epfd), "epoll")
	rc, err := l.epf.SyscallConn()
	if err != nil {
		return
	}
	// Only a descriptor in the poller takes deadlines.
	if err := l.epf.SetReadDeadline(time.Time{}); err != nil {
		return
	}
	l.epoll = rc
}

// wakeDeadline is a read deadline in the past: setting it makes a read
// waiting on the epoll file return at once.
var wakeDeadline = time.Unix(1, 0)

// detach takes the socket out of a net.Conn: the loop gets a duplicate of
// its descriptor (same socket, still non-blocking) and the net.Conn, with
// its registration in the Go runtime's poller, is closed.
func detach(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errors.New("server: not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			derr = errno
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	nc.Close()
	return fd, nil
}

// post hands a task to the loop and wakes it. After the loop has
// stopped, tasks are dropped: the loop closed every connection, and its
// eventfd (written under mu, so never after the loop closes it) is gone.
func (l *eventLoop) post(t loopTask) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.tasks = append(l.tasks, t)
	if l.woken.CompareAndSwap(false, true) {
		if l.epoll != nil {
			l.epf.SetReadDeadline(wakeDeadline)
			return
		}
		one := [8]byte{1}
		rawWrite(l.wakefd, one[:])
	}
}

func (l *eventLoop) run() {
	defer l.s.wg.Done()
	defer func() {
		if l.epf != nil {
			l.epf.Close() // leaves the runtime's poller and closes epfd
		} else {
			syscall.Close(l.epfd)
		}
	}()
	defer syscall.Close(l.wakefd)
	defer l.nudgeDuringWalks()() // removed before epfd closes
	for {
		n := l.wait()
		l.now = time.Now()
		if l.epoll != nil && l.woken.Load() && l.runTasks() {
			return
		}
		for i := 0; i < n; i++ {
			ev := l.events[i]
			if ev.Fd == int32(l.wakefd) {
				if l.runTasks() {
					return
				}
				continue
			}
			c := l.conns[ev.Fd]
			if c == nil {
				continue
			}
			if ev.Events&(syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				l.close(c) // reset, or shut down both ways: nothing more to say
				continue
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP) != 0 {
				l.readable(c)
			}
			if ev.Events&syscall.EPOLLOUT != 0 {
				l.markDirty(c)
			}
		}
		l.flush()
	}
}

// wait returns the number of ready events. It polls first: under load
// something is always ready, and a raw call skips the scheduler's
// bookkeeping for a system call that may block. With nothing ready it
// parks in the runtime's poller until the epoll set becomes readable.
func (l *eventLoop) wait() int {
	if l.epoll != nil {
		for {
			n := 0
			var errno syscall.Errno
			// woken is read after the poll: a task posted after that
			// finds woken clear and sets the deadline.
			err := l.epoll.Read(func(fd uintptr) bool {
				n, errno = l.poll()
				return n > 0 || errno != 0 && errno != syscall.EINTR || l.woken.Load()
			})
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// A post's wake-up. Cleared before woken is read again,
				// so a later post's deadline is not lost.
				l.epf.SetReadDeadline(time.Time{})
				continue
			}
			if err == nil && errno == 0 {
				return n
			}
			if err == nil {
				err = errno
			}
			l.s.cfg.Logger.Error("server: epoll_wait failed", "err", err)
			time.Sleep(10 * time.Millisecond) // not a hot loop of errors
			return 0
		}
	}
	if n, errno := l.poll(); errno == 0 && n > 0 {
		return n
	}
	for {
		n, err := syscall.EpollWait(l.epfd, l.events[:], -1)
		if err == nil {
			return n
		}
		if err != syscall.EINTR {
			l.s.cfg.Logger.Error("server: epoll_wait failed", "err", err)
			time.Sleep(10 * time.Millisecond) // not a hot loop of errors
			return 0
		}
	}
}

// poll returns the events ready now, without waiting.
func (l *eventLoop) poll() (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd),
		uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), 0
}

// runTasks runs what other goroutines posted. It reports whether the
// loop must stop.
func (l *eventLoop) runTasks() bool {
	// Drain the eventfd before clearing woken: a post that finds woken
	// set has already queued its task, which the take below collects; a
	// post after the clear writes the eventfd (or sets the deadline)
	// again. The other order could swallow a wake-up and leave a task
	// waiting forever.
	if l.epoll == nil {
		var drain [8]byte
		rawRead(l.wakefd, drain[:])
	}
	if testHookDrained != nil {
		testHookDrained()
	}
	l.woken.Store(false)
	l.mu.Lock()
	tasks := l.tasks
	l.tasks, l.spare = l.spare, nil
	l.mu.Unlock()
	for _, t := range tasks {
		c := t.c
		switch t.kind {
		case taskAdd:
			if c.lc.closed {
				continue // killed before it was added; its fd may be reused
			}
			c.lc.events = epollIn
			ev := syscall.EpollEvent{Events: epollIn, Fd: int32(c.lc.fd)}
			if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.lc.fd, &ev); err != nil {
				l.s.cfg.Logger.Error("server: epoll_ctl failed", "err", err)
				l.close(c)
				continue
			}
			l.conns[int32(c.lc.fd)] = c
			if c.lc.tls != nil {
				l.decryptTLS(c) // what the handshake read beyond itself
			}
		case taskWrite:
			l.markDirty(c)
		case taskResume:
			c.lc.busy = false
			if !c.lc.closed {
				l.process(c)
			}
		case taskApplied:
			c.lc.busy, c.lc.pending = false, false
			if !c.lc.closed {
				c.applied(t.res, t.err, t.raw)
				l.process(c)
			}
		case taskGroupApplied:
			c.lc.busy = false
			if !c.lc.closed {
				c.groupApplied(t.group, t.err)
				l.process(c)
			}
		case taskKill:
			l.close(c)
		case taskCall:
			t.fn()
		case taskStop:
			l.mu.Lock()
			l.stopped = true
			l.mu.Unlock()
			for _, c := range l.conns {
				l.close(c)
			}
			return true
		}
	}
	if cap(tasks) <= maxSpareTasks {
		clear(tasks) // no connection or result stays reachable from it
		l.spare = tasks[:0]
	}
	return false
}

// maxSpareTasks bounds the task batch runTasks keeps for reuse (a batch
// per committed entry on a cluster leader: growing a new one each time was
// a fifth of the leader's allocations).
const maxSpareTasks = 1024

// readable reads what has arrived on c and runs the requests it completes.
// A client that shuts down its sending side (EOF) still gets the replies
// to what it sent before: the connection stops reading and closes once
// those are written.
func (l *eventLoop) readable(c *conn) {
	if c.lc.tls != nil {
		l.readableTLS(c)
		return
	}
	if c.lc.closed || c.lc.eof {
		return
	}
	n, errno := rawRead(c.lc.fd, c.rd.Space())
	switch {
	case n > 0:
		c.rd.Commit(n)
		if int64(c.rd.Buffered()) > c.srv.adm.queryLimit.Load() {
			l.close(c) // a busy client piling up requests
			return
		}
		l.process(c)
	case n == 0:
		c.lc.eof = true
		l.process(c)
	case errno != syscall.EAGAIN && errno != syscall.EINTR:
		l.close(c) // broken
	}
}

// process runs c's buffered requests until one is incomplete, c must
// close, a command has to wait on a goroutine of its own, or SHUTDOWN
// halted c (what it sends afterwards is read and never run).
func (l *eventLoop) process(c *conn) {
	for !c.lc.busy && !c.closing && !c.halted && !c.lc.throttled {
		args := c.lc.held
		c.lc.held = nil
		if args == nil {
			var err error
			args, err = c.rd.Next()
			if c.tooLarge(args, err) {
				continue // answered, in its place if a group is open
			}
			if err != nil {
				var pe *resp.ProtocolError
				if errors.As(err, &pe) {
					c.reply(resp.Err("ERR " + pe.Error()))
				}
				c.closing = true
				break
			}
			if args == nil {
				break
			}
			if c.lc.group != nil && !c.groupable(args) {
				// The end of a run of pipelined writes: they go first.
				c.lc.held = args
				break
			}
		}
		c.touch(l.now)
		c.srv.stats.commands.Add(1)
		c.qbuf = c.rd.Buffered()
		cs, isConn := lookupConn(args[0])
		if isConn && cs.flags&mayBlock != 0 && c.multi == nil ||
			l.async != nil && !c.asyncKeyspace(isConn, args) && !c.answeredLocally(cs, isConn) ||
			!isConn && c.longRead(args) {
			// A command that may wait: WAIT, DEBUG SLEEP, and with a
			// backend whose commands wait (the cluster) anything but a
			// write that can start with StartApply or a request the
			// connection answers from its own state.
			c.lc.busy = true
			l.s.wg.Add(1)
			go func() {
				defer l.s.wg.Done()
				c.run(args)
				l.post(loopTask{kind: taskResume, c: c})
			}()
			break
		}
		c.lc.async = l.async != nil
		c.run(args)
		c.lc.async = false
		if c.outLen()+len(c.lc.wbuf)-c.lc.woff > maxPendingOutput {
			c.lc.throttled = true // write lifts it once the output drains
		}
	}
	if c.lc.group != nil && !c.lc.busy {
		l.sendGroup(c) // pipeline.go
	}
	l.markDirty(c)
	l.updateInterest(c)
}

// updateInterest registers for what c can use now: reads unless the
// client has stopped sending, c is closing, or its output is backed up;
// writability while the socket is full.
func (l *eventLoop) updateInterest(c *conn) {
	lc := &c.lc
	if lc.closed {
		return
	}
	var want uint32
	if !lc.eof && !lc.throttled && (lc.busy || !c.closing) {
		want = epollIn
	}
	if lc.wantOut {
		want |= syscall.EPOLLOUT
	}
	if want == lc.events {
		return
	}
	ev := syscall.EpollEvent{Events: want, Fd: int32(lc.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, lc.fd, &ev); err != nil {
		l.close(c)
		return
	}
	lc.events = want
}

func (l *eventLoop) markDirty(c *conn) {
	if !c.lc.dirty && !c.lc.closed {
		c.lc.dirty = true
		l.dirty = append(l.dirty, c)
	}
}

// flush writes the output of every connection that has some, and runs
// the buffered requests of connections whose output has drained.
func (l *eventLoop) flush() {
	for len(l.dirty) > 0 || len(l.ready) > 0 {
		for len(l.ready) > 0 {
			c := l.ready[len(l.ready)-1]
			l.ready[len(l.ready)-1] = nil
			l.ready = l.ready[:len(l.ready)-1]
			if !c.lc.closed && !c.lc.busy {
				l.process(c)
			}
		}
		// The list is swapped with the previous pass's, emptied,
		// rather than dropped: a write can mark connections dirty
		// again (into the other one), and neither is allocated anew
		// each pass.
		dirty := l.dirty
		l.dirty = l.spareDirty[:0]
		for _, c := range dirty {
			c.lc.dirty = false
			if !c.lc.closed {
				l.write(c)
			}
		}
		clear(dirty)
		l.spareDirty = dirty[:0]
	}
}

// write moves c's queued output behind what the socket has not taken yet
// and writes as much as it accepts, at most writeBudget bytes; the rest
// waits for EPOLLOUT.
func (l *eventLoop) write(c *conn) {
	lc := &c.lc
	if lc.tls != nil {
		if !l.sealTLS(c) {
			return
		}
	}
	piece := lc.tls == nil && l.takeOutput(c)
	written := 0
	for lc.woff < len(lc.wbuf) {
		if written >= writeBudget {
			// A long reply to a client that reads as fast as it comes
			// (KEYS over a million keys: 19 MB) held the loop for
			// milliseconds while other clients' requests waited. The
			// socket is still writable: the next wait returns at once
			// with EPOLLOUT, after this pass has served the others.
			// (Redis stops writing to a client once it has written
			// more than 64 KB in one event.)
			lc.wantOut = true
			lc.unsent.Store(int64(len(lc.wbuf) - lc.woff))
			l.updateInterest(c)
			return
		}
		n, errno := rawWrite(lc.fd, lc.wbuf[lc.woff:min(len(lc.wbuf), lc.woff+writeBudget-written)])
		if n > 0 {
			lc.woff += n
			written += n
			if testHookWrite != nil {
				testHookWrite(written)
			}
			if lc.woff == len(lc.wbuf) && piece {
				// A piece of a long reply is written: the next one, or
				// the output queued behind the last.
				piece = l.takeOutput(c)
			}
			continue
		}
		if errno == syscall.EINTR {
			continue
		}
		if errno != syscall.EAGAIN {
			l.close(c)
			return
		}
		if len(lc.wbuf)-lc.woff+c.outLen() > c.srv.pubsubOutputLimit() && c.subscribed() {
			l.close(c) // a subscriber that does not read its messages
			return
		}
		lc.wantOut = true
		lc.unsent.Store(int64(len(lc.wbuf) - lc.woff))
		if len(lc.wbuf)-lc.woff+c.outLen() > maxPendingOutput && !lc.throttled {
			// The client is not reading its replies: stop reading its
			// requests until they drain, so it cannot make the server
			// hold unbounded output.
			lc.throttled = true
		}
		l.updateInterest(c)
		return
	}
	lc.wbuf, lc.woff = lc.wbuf[:0], 0
	lc.unsent.Store(0)
	if cap(lc.wbuf) > shrinkOutput {
		lc.wbuf = nil
	}
	lc.wantOut = false
	if lc.throttled {
		// Drained: run the requests that waited (flush comes back here).
		lc.throttled = false
		l.ready = append(l.ready, c)
		l.updateInterest(c)
		return
	}
	if !lc.busy && (c.closing || lc.eof) {
		// QUIT, a protocol error, or the client's EOF: everything it
		// will get is written. (After EOF, what is left in the buffer
		// is an incomplete request that can never finish.)
		l.close(c)
		return
	}
	l.updateInterest(c)
}

// takeOutput moves c's queued output behind what the socket has not taken
// yet, and reports whether wbuf holds a piece of a long reply or pieces
// wait (conn.reply): write then calls it again once wbuf is written.
// Pieces go first, one at a time and only once wbuf has drained: the loop
// writes a reply of many megabytes as the socket takes it, never copying
// it into one buffer, and serves other connections between its socket's
// writable events. After the last piece comes the output queued behind it.
func (l *eventLoop) takeOutput(c *conn) bool {
	lc := &c.lc
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kicked = false
	switch {
	case len(c.pieces) > 0:
		if lc.woff < len(lc.wbuf) {
			return true // the pieces follow what is in wbuf, and out them
		}
		p := c.pieces[0]
		c.pieces[0] = nil
		c.pieces = c.pieces[1:]
		c.piecesLen -= len(p)
		if len(c.pieces) == 0 {
			c.pieces = nil
		}
		lc.wbuf, lc.woff = p, 0
		return true
	case lc.woff == len(lc.wbuf):
		lc.wbuf, c.out = c.out, lc.wbuf[:0]
		lc.woff = 0
	default:
		lc.wbuf = append(lc.wbuf, c.out...)
		c.out = c.out[:0]
	}
	return false
}

// writeBudget is how much the loop writes to one connection before it
// serves the others (write).
const writeBudget = 64 << 10

// testHookWrite, set by a test, runs in write after each write(2) that
// wrote something, with the bytes written to the connection so far in
// that call.
var testHookWrite func(written int)

// shrinkOutput is the size above which an emptied output buffer is
// dropped rather than kept for the next reply; maxPendingOutput is how
// much output a client may leave unread before the loop stops running
// its requests.
const (
	shrinkOutput     = 64 << 10
	maxPendingOutput = 1 << 20
)

// close closes c's socket and forgets the connection. A busy command's
// goroutine may still finish; its reply goes nowhere.
func (l *eventLoop) close(c *conn) {
	if c.lc.closed {
		return
	}
	c.lc.closed = true
	if l.conns[int32(c.lc.fd)] == c {
		delete(l.conns, int32(c.lc.fd))
	}
	syscall.Close(c.lc.fd)
	c.finish()
}
