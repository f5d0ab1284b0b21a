package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/transport"
)

// A node's Raft address carries three kinds of connection, told apart by
// their first byte once the peer has passed authentication: raft's own
// (raft's RPC types), read-index rounds (readindex.go) and the commands
// between members (member.go). Before that byte a dialer of this build
// sends its cluster's id (clusterHelloMagic, clusterid.go).

// confirmMagic opens a confirmation connection, memberMagic a connection
// for the commands between members (member.go); raft's own RPC types are
// small integers (0 to 4 in raft 1.7).
const (
	confirmMagic   = 0xdb
	memberMagic    = 0xdc
	readIndexMagic = 0xdd // a follower's read-index requests (followerread.go)
)

// confirmMaxID bounds a leader id in a confirmation request.
const confirmMaxID = 255

// errDemuxClosed is Accept's answer once the stream layer is closed.
var errDemuxClosed = errors.New("cluster: transport closed")

// demuxStream is the stream layer raft's transport gets: it authenticates
// every connection, hands raft those that speak raft, and serves the
// others itself (read-index rounds, members' commands).
type demuxStream struct {
	raft.StreamLayer
	auth    transport.PeerAuth // nil: peers are not authenticated (--insecure-cluster)
	serve   func(net.Conn)     // confirmation rounds
	member  func(net.Conn)     // members' commands
	readIdx func(net.Conn)     // followers' read-index requests; nil: refused
	hello   *clusterHello      // the cluster id's handshake (clusterid.go); nil: none
	dials   *dialRecord        // how each address's last dial ended (noquorum.go); nil: not kept
	conns   chan net.Conn
	closed  chan struct{}
	once    sync.Once
}

func newDemuxStream(inner raft.StreamLayer, auth transport.PeerAuth, serve, member func(net.Conn)) *demuxStream {
	return &demuxStream{StreamLayer: inner, auth: auth, serve: serve, member: member, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// start accepts connections; the node calls it once what serve and member
// use is in place.
func (d *demuxStream) start() { go d.acceptLoop() }

func (d *demuxStream) acceptLoop() {
	for {
		c, err := d.StreamLayer.Accept()
		if err != nil {
			select {
			case <-d.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// A listener that fails for good: raft learns it from Accept.
			d.Close()
			return
		}
		go d.classify(c)
	}
}

// classify authenticates a connection (PeerAuth), then reads its first
// byte, each bounded in time so that a silent peer holds nothing but its
// own goroutine. Nothing of a peer that fails authentication is read.
func (d *demuxStream) classify(c net.Conn) {
	if d.auth != nil {
		ac, err := d.auth.Server(c)
		if err != nil {
			c.Close()
			return
		}
		c = ac
	}
	var b [1]byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		c.Close()
		return
	}
	if b[0] == clusterHelloMagic && d.hello != nil {
		// The cluster id first (clusterid.go), then the first byte.
		if !d.hello.server(c) {
			c.Close()
			return
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, b[:]); err != nil {
			c.Close()
			return
		}
	} else if d.hello != nil && !d.hello.noHello(c) {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	switch b[0] {
	case confirmMagic:
		d.serve(c)
		return
	case memberMagic:
		d.member(c)
		return
	case readIndexMagic:
		if d.readIdx != nil {
			d.readIdx(c)
		} else {
			c.Close()
		}
		return
	}
	select {
	case d.conns <- &prefixConn{Conn: c, first: b[0], has: true}:
	case <-d.closed:
		c.Close()
	}
}

// Dial connects to a peer, authenticates it (and this node to it), and
// checks that it is in this node's cluster (clusterid.go).
func (d *demuxStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := d.dial(addr, timeout)
	if d.dials != nil {
		d.dials.note(string(addr), err)
	}
	return c, err
}

func (d *demuxStream) dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := d.dialAuth(addr, timeout)
	if err != nil || d.hello == nil {
		return c, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	h := d.hello
	if h.preserve && h.isOlder(string(addr)) {
		return &olderConn{Conn: c, h: h, addr: string(addr)}, nil
	}
	older, err := h.client(c, string(addr), timeout)
	if err != nil {
		c.Close()
		if older { // an older build closed it: again, without the hello
			if c, err = d.dialAuth(addr, timeout); err != nil {
				return nil, err
			}
			return &olderConn{Conn: c, h: h, addr: string(addr)}, nil
		}
		return nil, err
	}
	return c, nil
}

// dialAuth connects to a peer and authenticates it (and this node to it).
func (d *demuxStream) dialAuth(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := d.StreamLayer.Dial(addr, timeout)
	if err != nil || d.auth == nil {
		return c, err
	}
	ac, err := d.auth.Client(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return ac, nil
}

func (d *demuxStream) Accept() (net.Conn, error) {
	select {
	case c := <-d.conns:
		return c, nil
	case <-d.closed:
		return nil, errDemuxClosed
	}
}

func (d *demuxStream) Close() error {
	var err error
	d.once.Do(func() {
		close(d.closed)
		err = d.StreamLayer.Close()
	})
	return err
}

// prefixConn gives back the byte classify read before the rest.
type prefixConn struct {
	net.Conn
	first byte
	has   bool
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.has && len(b) > 0 {
		b[0] = p.first
		p.has = false
		if len(b) == 1 {
			return 1, nil
		}
		n, err := p.Conn.Read(b[1:])
		if n == 0 && err != nil {
			// The byte was delivered; the error comes with the next call.
			return 1, nil
		}
		return n + 1, err
	}
	return p.Conn.Read(b)
}

// demux wraps the stream layer raft's transport gets, so that this node
// answers confirmation rounds on its Raft address and asks its peers
// through the same stream layer.
func (n *Node) demux(inner raft.StreamLayer) raft.StreamLayer {
	d := newDemuxStream(inner, n.cfg.PeerAuth, n.serveConfirm, n.serveMember)
	d.hello = &clusterHello{own: n.ClusterID, preserve: n.cfg.PreserveDowngrade, dir: n.cfg.DataDir, logf: n.cfg.Logger.Error, infof: n.cfg.Logger.Info}
	n.hello = d.hello
	d.dials = &dialRecord{}
	n.dials = d.dials
	n.confirm = newConfirmer(n, d.Dial)
	if n.cfg.ReadMode == ReadModeLease {
		n.confirm.lease = newLeaseState(n)
	}
	n.fread = newReadIndexClient(n, func(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		return d.Dial(addr, timeout)
	})
	d.readIdx = n.serveReadIndex
	n.member.dial = func(ctx context.Context, addr string) (net.Conn, error) {
		timeout := n.cfg.CommandTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		c, err := d.Dial(raft.ServerAddress(addr), timeout)
		if err != nil {
			return nil, err
		}
		if _, err := c.Write([]byte{memberMagic}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	// Only now: a peer's round may arrive at once, and must find the
	// confirmer (a data race under -race when the loop started first).
	d.start()
	return d
}
