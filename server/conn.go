package server

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"github.com/deadbolt/deadbolt/acl"
	"net"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// conn is one client connection and its state.
type conn struct {
	srv     *Server
	nc      net.Conn
	id      uint64
	rd      *resp.Reader
	created time.Time
	addr    string
	laddr   string

	// Owned by the connection's goroutine.
	db       int
	authed   bool
	user     *acl.User  // the ACL user (written under mu; acl.go)
	usersAt  *acl.Users // the table user was found in
	member   bool       // another cluster member, authenticated by the cluster (member.go)
	multi    *multiState
	execing  *multiState   // the transaction EXEC is running (CLIENT INFO inside it)
	capture  *[]resp.Reply // inside EXEC: where a queued connection command's reply goes
	watches  []fsm.Watch
	lastCmd  string
	closing  bool // QUIT: close after the reply is written
	halted   bool // SHUTDOWN: serve nothing more; the server's Close closes it
	protoErr bool
	qbuf     int // request bytes buffered when the command began (CLIENT LIST)

	// Shared with other goroutines (CLIENT LIST, pub/sub delivery).
	mu       sync.Mutex
	name     string
	out      []byte // replies and messages not yet written
	subs     subscriptions
	proto    int    // 2 or 3: the RESP version HELLO chose
	kicked   bool   // a writer goroutine is flushing pushed messages
	hold     bool   // inside an EXEC that subscribes: messages wait in held (multi_conn.go)
	held     []byte // messages that arrived meanwhile, written after EXEC's reply
	dead     bool
	lastUsed time.Time
	// pieces: an encoded long reply (resp.Encoded) and what was in out
	// before it, not yet taken for writing; they go before out. Only a
	// plain connection of the event loop has them (streamsPieces).
	pieces    [][]byte
	piecesLen int // their bytes

	wmu sync.Mutex // serialises writes to nc

	adm clientState // CLIENT state (cmd_admin.go)

	// lc is set when the event loop serves the connection (loop_linux.go);
	// nc is then nil.
	lc loopConn
}

// newConn returns the connection for nc. With an event loop, nc's socket
// moves to the loop (fd) and nc is closed.
func newConn(s *Server, nc net.Conn, id uint64, lp *eventLoop, fd int) *conn {
	c := &conn{
		srv:      s,
		nc:       nc,
		id:       id,
		proto:    2,
		created:  time.Now(),
		lastUsed: time.Now(),
		addr:     nc.RemoteAddr().String(),
		laddr:    nc.LocalAddr().String(),
	}
	t := s.users()
	c.user, c.usersAt, c.authed = t.Default(), t, defaultAuthed(t)
	if lp != nil {
		c.nc = nil
		c.lc = loopConn{lp: lp, fd: fd}
		c.rd = resp.NewBufferReader()
	} else {
		c.rd = resp.NewReader(nc)
	}
	c.rd.MaxBulkLen = s.cfg.MaxBulkLen
	c.rd.MaxRequest = s.cfg.MaxQueryBuffer
	c.rd.SkipAbove = s.cfg.MaxArgBytes
	c.rd.Unauthenticated = !c.authed
	return c
}

// serve is a connection's goroutine when there is no event loop.
func (c *conn) serve() {
	defer c.shutdown()
	for {
		args, err := c.rd.ReadCommand()
		if c.tooLarge(args, err) {
			if c.rd.Buffered() == 0 && c.flush() != nil {
				return
			}
			continue
		}
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.reply(resp.Err("ERR " + pe.Error()))
				c.flush()
			}
			return
		}
		c.touch(time.Now())
		c.srv.stats.commands.Add(1)
		c.qbuf = c.rd.Buffered()
		c.run(args)
		if c.halted {
			c.waitClosed()
			return
		}
		if c.closing {
			c.flush()
			return
		}
		// Answer a pipeline in one write: flush only when no further
		// request is already buffered.
		if c.rd.Buffered() == 0 {
			if c.flush() != nil {
				return
			}
		}
	}
}

// run executes one request. A handler that panics has a bug that a
// client's input reached: the panic is logged, the client gets an error
// reply, and this connection and every other one go on being served.
func (c *conn) run(args [][]byte) {
	start := time.Now()
	c.adm.beginCommand()
	func() {
		defer c.recoverCommand()
		c.dispatch(args)
	}()
	if c.lc.pending {
		c.lc.started = start // finished by applied
		return
	}
	if c.lc.grouped {
		c.lc.grouped = false // finished by groupApplied
		return
	}
	c.endCommand(time.Since(start))
}

// recoverCommand, deferred around the parts of a command that run a
// handler, turns a panic into a logged error and an error reply.
func (c *conn) recoverCommand() {
	if p := recover(); p != nil {
		c.srv.cfg.Logger.Error("server: panic serving a command",
			"client", c.id, "addr", c.addr, "command", c.lastCmd, "panic", p, "stack", string(debug.Stack()))
		c.reply(resp.Err("ERR internal error"))
	}
}

// outLen is how much output is queued and not yet taken for writing.
func (c *conn) outLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out) + c.piecesLen
}

// touch records that a command arrived, for CLIENT LIST's idle time.
func (c *conn) touch(now time.Time) {
	c.mu.Lock()
	c.lastUsed = now
	c.mu.Unlock()
}

func (c *conn) shutdown() {
	c.mu.Lock()
	c.dead = true
	c.mu.Unlock()
	c.srv.hub.unsubscribeAll(c)
	c.nc.Close()
}

// finish forgets a connection the event loop has closed.
func (c *conn) finish() {
	c.mu.Lock()
	c.dead = true
	c.out, c.pieces, c.piecesLen = nil, nil, 0
	c.mu.Unlock()
	c.srv.hub.unsubscribeAll(c)
	c.srv.mu.Lock()
	delete(c.srv.conns, c.id)
	c.srv.mu.Unlock()
	c.srv.wg.Done()
}

// abort closes the connection from any goroutine, without waiting.
func (c *conn) abort() {
	// Under mu: a TLS connection moves to the loop under it (tlsToLoop),
	// so it is either closed here before it moves or killed by the loop.
	c.mu.Lock()
	lp := c.lc.lp
	if lp == nil {
		if tc, ok := c.nc.(*tls.Conn); ok {
			tc.NetConn().Close() // the socket, without a close_notify that could block
		} else {
			c.nc.Close()
		}
	}
	c.mu.Unlock()
	if lp != nil {
		lp.post(loopTask{kind: taskKill, c: c})
	}
}

// reply queues one reply, unless CLIENT REPLY turned replies off.
func (c *conn) reply(r resp.Reply) {
	if c.capture != nil {
		// An element of EXEC's array: an error there does not make EXEC
		// fail, as a keyspace command's does not (multi.go).
		*c.capture = append(*c.capture, r)
		return
	}
	if r.Type == resp.Error {
		c.adm.noteError(r.Str)
	}
	if c.adm.quiet() {
		return
	}
	if c.groupReply(r) {
		return // in its place among a pipeline's writes (pipeline.go)
	}
	c.mu.Lock()
	defer c.mu.Unlock() // a reply that cannot be encoded panics: see recoverCommand
	if r.Type == resp.Encoded && c.streamsPieces() {
		// A long read's reply, encoded in pieces off the loop: the loop
		// writes them as the socket takes them, without copying them
		// into one buffer (loop_linux.go's write).
		if len(c.out) > 0 {
			c.pieces = append(c.pieces, c.out)
			c.piecesLen += len(c.out)
			c.out = nil
		}
		for _, p := range r.EncodedPieces() {
			c.pieces = append(c.pieces, p)
			c.piecesLen += len(p)
		}
		return
	}
	c.out = r.AppendProto(c.out, c.proto)
}

// streamsPieces reports whether the connection's output may hold pieces:
// a plain (not TLS) connection of the event loop. Both are set before the
// connection serves its first request and never change.
func (c *conn) streamsPieces() bool { return c.lc.lp != nil && c.lc.tls == nil }

// protocol returns the RESP version the connection speaks.
func (c *conn) protocol() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proto
}

// flush writes everything queued.
func (c *conn) flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	buf := c.out
	c.out = nil
	c.kicked = false
	c.mu.Unlock()
	if len(buf) == 0 {
		return nil
	}
	_, err := c.nc.Write(buf)
	if err != nil {
		c.nc.Close()
	}
	return err
}

// push queues a message for a subscriber from another goroutine and makes
// sure it gets written without waiting for the client's next command. A
// subscriber that does not read its messages is disconnected once its
// backlog passes the pub/sub output limit.
func (c *conn) push(f *frame) bool {
	c.mu.Lock()
	msg := f.encoded(c.proto)
	if c.dead {
		c.mu.Unlock()
		return false
	}
	if c.hold {
		// A subscription EXEC made: its message follows EXEC's reply.
		c.held = append(c.held, msg...)
	} else {
		c.out = append(c.out, msg...)
	}
	if len(c.out)+c.piecesLen+len(c.held) > c.srv.pubsubOutputLimit() {
		c.dead = true
		c.out = nil
		c.mu.Unlock()
		c.abort()
		return true
	}
	kick := !c.kicked
	c.kicked = true
	c.mu.Unlock()
	switch {
	case !kick:
	case c.lc.lp != nil:
		c.lc.lp.post(loopTask{kind: taskWrite, c: c})
	default:
		go c.flush()
	}
	return true
}

func sortConns(cs []*conn) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
}

func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
