package server

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// TLS connections on the event loop. A TLS client's handshake runs on a
// goroutine of its own, bounded in time (tls.go); then its socket moves to
// the event loop like a plain one, and the loop runs crypto/tls on bytes it
// reads and writes itself: the tls.Conn sits on a tlsPipe, which in the
// handshake gives it the socket and afterwards only what the loop read
// (Read answers "would block", a temporary error crypto/tls retries, when
// that is used up) and takes what it writes into the connection's output.
// Where there is no event loop, the connection stays on its goroutine.

// tlsPipe is the net.Conn under a client's tls.Conn.
type tlsPipe struct {
	net.Conn // the socket, until the loop takes it

	mu     sync.Mutex // guards loop against Close from another goroutine
	loop   bool       // the event loop serves it: no socket any more
	in     []byte     // ciphertext the loop read, not yet taken by crypto/tls
	inOff  int
	out    *[]byte // where writes go once on the loop: the connection's output
	closed bool
}

// errWouldBlock is what tlsPipe.Read answers when the loop has nothing
// more: crypto/tls keeps its state and tries again on the next Read.
var errWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "tls pipe: would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

func (p *tlsPipe) onLoop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loop
}

func (p *tlsPipe) Read(b []byte) (int, error) {
	if !p.onLoop() {
		return p.Conn.Read(b)
	}
	if p.inOff == len(p.in) {
		return 0, errWouldBlock
	}
	n := copy(b, p.in[p.inOff:])
	p.inOff += n
	return n, nil
}

func (p *tlsPipe) Write(b []byte) (int, error) {
	if !p.onLoop() {
		return p.Conn.Write(b)
	}
	*p.out = append(*p.out, b...)
	return len(b), nil
}

func (p *tlsPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loop || p.closed {
		return nil // the loop closes its descriptor
	}
	p.closed = true
	return p.Conn.Close()
}

func (p *tlsPipe) SetDeadline(t time.Time) error {
	if p.onLoop() {
		return nil
	}
	return p.Conn.SetDeadline(t)
}

func (p *tlsPipe) SetReadDeadline(t time.Time) error {
	if p.onLoop() {
		return nil
	}
	return p.Conn.SetReadDeadline(t)
}

func (p *tlsPipe) SetWriteDeadline(t time.Time) error {
	if p.onLoop() {
		return nil
	}
	return p.Conn.SetWriteDeadline(t)
}

// toLoop hands the socket to the loop: detach gets its descriptor (and
// closes the net.Conn); from then on reads and writes are the loop's.
func (p *tlsPipe) toLoop(out *[]byte, detach func(net.Conn) (int, error)) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return -1, errors.New("server: closed during the TLS handshake")
	}
	fd, err := detach(p.Conn)
	if err != nil {
		return -1, err
	}
	p.loop, p.out = true, out
	return fd, nil
}

// feed gives crypto/tls bytes the loop read; what it had not taken yet
// stays in front.
func (p *tlsPipe) space(n int) []byte {
	if p.inOff == len(p.in) {
		p.in, p.inOff = p.in[:0], 0
	}
	if cap(p.in)-len(p.in) < n {
		grown := make([]byte, len(p.in)-p.inOff, len(p.in)-p.inOff+n)
		copy(grown, p.in[p.inOff:])
		p.in, p.inOff = grown, 0
	}
	return p.in[len(p.in):cap(p.in)]
}

func (p *tlsPipe) commit(n int) { p.in = p.in[:len(p.in)+n] }

// tlsListener makes each accepted socket a TLS server connection over a
// tlsPipe.
type tlsListener struct {
	net.Listener
	config *tls.Config
}

func (l tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(&tlsPipe{Conn: c}, l.config), nil
}
