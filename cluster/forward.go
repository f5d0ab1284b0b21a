package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// Forwarding: a follower sends a command to the leader's client port as
//
//	DEADBOLT.FORWARD <mode> <envelope>
//
// and the leader answers with [reply, db, receivers, log index] or with an
// error reply (TRYAGAIN when it was not the leader and proposed nothing).
// The leader runs a forwarded command locally and never forwards it again,
// so a command cannot circle between nodes. Each request has a connection
// to itself until its answer arrives, so answers cannot cross.
const ForwardCommand = "deadbolt.forward"

// Forwarding modes.
const (
	modeApply   = "w"
	modeRead    = "r"
	modeVersion = "v"
	modeDisk    = "d" // the member's disk status (diskspace.go); any member answers
)

// ForwardTarget is what the receiving end of a forward needs: a leader's
// local operations.
type ForwardTarget interface {
	ApplyLocal(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
	ReadLocal(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
	KeyVersionLocal(ctx context.Context, db int, key string) (uint64, error)
}

// ServeForward runs a forwarded request on t and returns the reply to send
// back. The server calls it for DEADBOLT.FORWARD.
func ServeForward(ctx context.Context, t ForwardTarget, mode, envelope []byte) resp.Reply {
	if string(mode) == modeGroup {
		return serveGroup(ctx, t, envelope) // pipeline.go
	}
	e, err := DecodeEntry(envelope)
	if err != nil {
		return resp.Err("ERR " + err.Error())
	}
	var res fsm.Result
	switch string(mode) {
	case modeApply:
		res, err = t.ApplyLocal(ctx, e.Cmd)
	case modeRead:
		res, err = t.ReadLocal(ctx, e.Cmd)
	case modeDisk:
		ds, ok := t.(interface{ DiskStatus() (string, int64) })
		if !ok {
			return resp.Err("ERR no disk status")
		}
		status, free := ds.DiskStatus()
		return resp.ArrayReply(resp.BulkString(status), resp.IntReply(0), resp.IntReply(0), resp.BulkString(strconv.FormatInt(free, 10)))
	case modeVersion:
		if len(e.Cmd.Args) != 1 {
			return resp.Err("ERR bad forwarded WATCH")
		}
		var v uint64
		v, err = t.KeyVersionLocal(ctx, e.Cmd.DB, string(e.Cmd.Args[0]))
		res.LogIndex = v
	default:
		return resp.Err(errUnknownMode)
	}
	if err != nil {
		var re replyError
		if errors.As(err, &re) {
			return resp.Err(re.msg)
		}
		return resp.Err("ERR " + err.Error())
	}
	return resp.ArrayReply(res.Reply, resp.IntReply(int64(res.DB)), resp.IntReply(int64(res.Receivers)),
		resp.BulkString(strconv.FormatUint(res.LogIndex, 10)))
}

// forwarder keeps a few idle connections per leader address.
type forwarder struct {
	timeout  time.Duration
	password string
	dial     func(ctx context.Context, addr string) (net.Conn, error)
	mu       sync.Mutex
	idle     map[string][]*fwdConn
	closed   bool
}

type fwdConn struct {
	nc net.Conn
	rd *bufio.Reader
}

const maxIdlePerAddr = 64

func newForwarder(timeout time.Duration) *forwarder {
	return &forwarder{timeout: timeout, idle: make(map[string][]*fwdConn), dial: func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}
}

func (f *forwarder) get(ctx context.Context, addr string) (*fwdConn, error) {
	for {
		f.mu.Lock()
		list := f.idle[addr]
		if len(list) == 0 {
			f.mu.Unlock()
			break
		}
		c := list[len(list)-1]
		f.idle[addr] = list[:len(list)-1]
		f.mu.Unlock()
		if c.alive() {
			return c, nil
		}
		c.nc.Close()
	}
	nc, err := f.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c := &fwdConn{nc: nc, rd: bufio.NewReaderSize(nc, 16<<10)}
	if f.password != "" {
		if _, err := c.roundTrip(ctx, [][]byte{[]byte("AUTH"), []byte(f.password)}); err != nil {
			nc.Close()
			return nil, err
		}
	}
	// RESP3, so that a reply keeps its type (a map, a set, a double) on
	// its way to a RESP3 client; a node from before RESP3 refuses, and its
	// replies come as RESP2.
	if _, err := c.roundTrip(ctx, [][]byte{[]byte("HELLO"), []byte("3")}); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (f *forwarder) put(addr string, c *fwdConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || len(f.idle[addr]) >= maxIdlePerAddr {
		c.nc.Close()
		return
	}
	f.idle[addr] = append(f.idle[addr], c)
}

func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, list := range f.idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
	f.idle = nil
}

// alive reports whether an idle connection is still open: the peer may
// have closed it (a restarted leader), and a request written to it would
// then end in an unknown outcome although nothing was delivered.
func (c *fwdConn) alive() bool {
	if c.rd.Buffered() > 0 {
		return false // an unsolicited reply: the stream is out of step
	}
	c.nc.SetReadDeadline(time.Now())
	_, err := c.rd.Peek(1)
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// roundTrip sends one request and reads one reply.
func (c *fwdConn) roundTrip(ctx context.Context, args [][]byte) (resp.Reply, error) {
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
	} else {
		c.nc.SetDeadline(time.Time{})
	}
	if err := writeCommand(c.nc, args); err != nil { // forward_big.go
		return resp.Reply{}, err
	}
	return readReply(c.rd)
}

// roundTrip sends one command to addr on a pooled connection and returns
// the reply.
func (f *forwarder) roundTrip(ctx context.Context, addr string, args [][]byte) (resp.Reply, error) {
	c, err := f.get(ctx, addr)
	if err != nil {
		return resp.Reply{}, err
	}
	r, err := c.roundTrip(ctx, args)
	if err != nil {
		c.nc.Close()
		return resp.Reply{}, err
	}
	f.put(addr, c)
	return r, nil
}

// forward sends cmd to the leader at addr. A connection error before the
// request was written is retryable; after, the outcome is unknown.
func (f *forwarder) forward(ctx context.Context, addr, mode string, cmd fsm.Command) (fsm.Result, error) {
	return f.forwardEnv(ctx, addr, mode, AppendEntry(nil, Entry{Cmd: unmarked(cmd)}))
}

// forwardEnv is forward with the command's envelope already encoded (a
// write tried again after TRYAGAIN is not encoded again).
func (f *forwarder) forwardEnv(ctx context.Context, addr, mode string, env []byte) (fsm.Result, error) {
	c, err := f.get(ctx, addr)
	if err != nil {
		return fsm.Result{}, ErrNoLeader // nothing was sent
	}
	r, err := c.roundTrip(ctx, [][]byte{[]byte(ForwardCommand), []byte(mode), env})
	if err != nil {
		c.nc.Close()
		if mode == modeApply {
			return fsm.Result{}, ErrUnknownOutcome
		}
		return fsm.Result{}, ErrNoLeader // a read changes nothing: retry
	}
	f.put(addr, c)
	if r.Type == resp.Error {
		msg := string(r.Str)
		if strings.HasPrefix(msg, "TRYAGAIN") {
			return fsm.Result{}, ErrNotLeader
		}
		return fsm.Result{}, replyError{msg}
	}
	if r.Type != resp.Array || len(r.Elems) != 4 {
		return fsm.Result{}, fmt.Errorf("cluster: malformed forward reply")
	}
	idx, _ := strconv.ParseUint(string(r.Elems[3].Str), 10, 64)
	return fsm.Result{Reply: r.Elems[0], DB: int(r.Elems[1].Int), Receivers: int(r.Elems[2].Int), LogIndex: idx}, nil
}

// readReply reads one reply from rd. A leader answers a member in RESP3,
// so a map, a set or a double reaches the follower's client as its type.
func readReply(rd *bufio.Reader) (resp.Reply, error) {
	return resp.ReadReply(rd, 1<<30)
}
