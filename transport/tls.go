package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deadbolt/deadbolt/tlsconf"
)

// TLSAuth makes every connection between members mutual TLS (--tls-cluster):
// the acceptor requires a certificate and each side checks the other's
// against the members' CAs (tlsconf.MemberOptions.Configs says what is
// checked). Once the handshake is over the acceptor sends one byte,
// tlsAccepted: in TLS 1.3 the dialer's handshake ends before the acceptor
// has looked at the dialer's certificate, and the byte lets the dialer
// learn there and then, with the acceptor's reason, that it was refused,
// rather than from its first RPC.
type TLSAuth struct {
	mu      sync.Mutex // serialises Reload
	opts    tlsconf.MemberOptions
	server  atomic.Pointer[tls.Config]
	client  atomic.Pointer[tls.Config]
	timeout time.Duration
	fails   atomic.Uint64
	reloads atomic.Uint64
	// OnFailure, if set, is told of each failed handshake: the peer's
	// address and why.
	OnFailure func(remote string, err error)
}

const tlsAccepted = 0x01

// NewTLSAuth loads the certificates of o; timeout bounds each handshake
// (0: 5 s).
func NewTLSAuth(o tlsconf.MemberOptions, timeout time.Duration) (*TLSAuth, error) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	a := &TLSAuth{opts: o, timeout: timeout}
	if err := a.load(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *TLSAuth) load() error {
	s, c, err := a.opts.Configs()
	if err != nil {
		return fmt.Errorf("cluster TLS: %w", err)
	}
	a.server.Store(s)
	a.client.Store(c)
	return nil
}

// Reload reads the certificates, key and CAs again (after a renewal):
// handshakes that start from then on use them, connections already up
// keep theirs. On error what is in force stays.
func (a *TLSAuth) Reload() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.load(); err != nil {
		return err
	}
	a.reloads.Add(1)
	return nil
}

// Reloads counts the successful reloads.
func (a *TLSAuth) Reloads() uint64 { return a.reloads.Load() }

// Failures counts the handshakes that failed, either side.
func (a *TLSAuth) Failures() uint64 { return a.fails.Load() }

func (a *TLSAuth) fail(c net.Conn, err error) error {
	a.fails.Add(1)
	err = fmt.Errorf("%w: %v", ErrAuth, err)
	if a.OnFailure != nil {
		a.OnFailure(c.RemoteAddr().String(), err)
	}
	return err
}

// Server runs the acceptor's side: a TLS handshake that requires the
// peer's certificate, then the byte that tells the dialer it is in.
func (a *TLSAuth) Server(c net.Conn) (net.Conn, error) {
	c.SetDeadline(time.Now().Add(a.timeout))
	rc := &readCounter{Conn: c}
	tc := tls.Server(rc, a.server.Load())
	if err := tc.Handshake(); err != nil {
		if rc.n == 0 && errors.Is(err, io.EOF) {
			return nil, ErrClosedUnheard
		}
		return nil, a.fail(c, fmt.Errorf("TLS handshake: %w", err))
	}
	if _, err := tc.Write([]byte{tlsAccepted}); err != nil {
		return nil, a.fail(c, fmt.Errorf("writing the acceptance: %w", err))
	}
	c.SetDeadline(time.Time{})
	return tc, nil
}

// Client runs the dialer's side: a TLS handshake that checks the node
// dialed, then waits for that node to accept this one's certificate.
func (a *TLSAuth) Client(c net.Conn) (net.Conn, error) {
	c.SetDeadline(time.Now().Add(a.timeout))
	tc := tls.Client(c, a.client.Load())
	if err := tc.Handshake(); err != nil {
		return nil, a.fail(c, fmt.Errorf("TLS handshake with the node dialed: %w", err))
	}
	var b [1]byte
	if _, err := io.ReadFull(tc, b[:]); err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "remote error" {
			// The acceptor sent a TLS alert: it refused the certificate.
			return nil, a.fail(c, fmt.Errorf("the node dialed refused this node's certificate: %w", err))
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Silence, not a close: a TLS server that is no member (a
			// node's client TLS port given as its raft address, say)
			// finished the handshake and waits for a command.
			return nil, a.fail(c, fmt.Errorf("the node dialed finished the TLS handshake and then said nothing for %v: is this address a member's raft address, not a client TLS port? %w", a.timeout, err))
		}
		// No alert: the acceptor closed the connection before accepting.
		// A node that is stopping does this to a dial in flight; nothing
		// says the certificate was refused.
		return nil, fmt.Errorf("transport: the node dialed closed the connection before accepting this node's certificate (it may be stopping): %w", err)
	}
	if b[0] != tlsAccepted {
		return nil, a.fail(c, errors.New("the node dialed does not speak the members' TLS handshake"))
	}
	c.SetDeadline(time.Time{})
	return tc, nil
}

// ClientTLS runs a plain TLS client handshake with this member's
// certificate, checking the peer as Client does, without waiting for the
// members' acceptance: for a member's client port (--join), which serves
// TLS as it does to any client.
func (a *TLSAuth) ClientTLS(c net.Conn) (net.Conn, error) {
	c.SetDeadline(time.Now().Add(a.timeout))
	tc := tls.Client(c, a.client.Load())
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("TLS handshake with %s: %w (with --tls-cluster, --join takes a TLS client address: the member's --tls-addr)", c.RemoteAddr(), err)
	}
	c.SetDeadline(time.Time{})
	return tc, nil
}

// Chain authenticates with each of auths in turn, each over the
// connection the one before returned: a peer must pass them all. With
// TLS first, what follows it (the cluster secret's handshake) is
// encrypted.
func Chain(auths ...PeerAuth) PeerAuth { return chain(auths) }

type chain []PeerAuth

func (ch chain) Server(c net.Conn) (net.Conn, error) {
	for _, a := range ch {
		var err error
		if c, err = a.Server(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (ch chain) Client(c net.Conn) (net.Conn, error) {
	for _, a := range ch {
		var err error
		if c, err = a.Client(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readCounter counts the bytes read through it: the handshake's, so that
// a peer that closes before sending anything is told from one that failed.
type readCounter struct {
	net.Conn
	n int64
}

func (r *readCounter) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.n += int64(n)
	return n, err
}
