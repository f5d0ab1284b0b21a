package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Network is a test hook: the links between in-process nodes, which a
// test can cut and heal. Raft traffic and forwarding both go through it,
// so a cut node is isolated the way a real partition isolates it.
type Network struct {
	mu    sync.Mutex
	ids   map[string]string // listen address (raft or RESP) -> node id
	cut   map[[2]string]bool
	conns map[[2]string][]net.Conn
}

// NewNetwork returns a network with every link up.
func NewNetwork() *Network {
	return &Network{ids: map[string]string{}, cut: map[[2]string]bool{}, conns: map[[2]string][]net.Conn{}}
}

// ErrLinkDown is returned when dialing across a cut link.
var ErrLinkDown = errors.New("cluster: network link is cut")

// Register names the node listening on addr.
func (nw *Network) Register(addr, id string) {
	nw.mu.Lock()
	nw.ids[addr] = id
	nw.mu.Unlock()
}

// Cut breaks the links between a and b in both directions and closes the
// connections between them.
func (nw *Network) Cut(a, b string) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, k := range [][2]string{{a, b}, {b, a}} {
		nw.cut[k] = true
		for _, c := range nw.conns[k] {
			c.Close()
		}
		delete(nw.conns, k)
	}
}

// Isolate cuts every link between id and the others.
func (nw *Network) Isolate(id string, others ...string) {
	for _, o := range others {
		if o != id {
			nw.Cut(id, o)
		}
	}
}

// Heal restores every link.
func (nw *Network) Heal() {
	nw.mu.Lock()
	nw.cut = map[[2]string]bool{}
	nw.mu.Unlock()
}

// dial connects from the node named from to addr, unless the link is cut.
func (nw *Network) dial(ctx context.Context, from, addr string) (net.Conn, error) {
	nw.mu.Lock()
	to, known := nw.ids[addr]
	k := [2]string{from, to}
	if known && nw.cut[k] {
		nw.mu.Unlock()
		return nil, ErrLinkDown
	}
	nw.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || !known {
		return c, err
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.cut[k] {
		c.Close()
		return nil, ErrLinkDown
	}
	nw.conns[k] = append(nw.conns[k], c)
	return c, nil
}

// streamLayer is raft's transport stream over a Network.
type streamLayer struct {
	net.Listener
	nw *Network
	id string
}

func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return fastConn(c), nil
}

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.nw.dial(ctx, s.id, string(addr))
	if err != nil {
		return nil, err
	}
	return fastConn(c), nil
}

// tcpStream is raft's transport stream over TCP, as raft's own
// TCPStreamLayer but with connections that read and write through
// fastConn.
type tcpStream struct {
	ln        net.Listener
	advertise net.Addr
}

// listenTCP listens on bind for raft's transport; advertise, if not nil,
// is the address the other nodes are told, else the listener's.
func listenTCP(bind string, advertise net.Addr) (*tcpStream, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &tcpStream{ln: ln, advertise: advertise}
	if a, ok := s.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %s cannot be reached by other nodes: give a host, not a wildcard", s.Addr())
	}
	return s, nil
}

func (s *tcpStream) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return fastConn(c), nil
}

func (s *tcpStream) Close() error { return s.ln.Close() }

func (s *tcpStream) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.ln.Addr()
}

func (s *tcpStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	return fastConn(c), nil
}
