package transport

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// PeerAuth authenticates a node-to-node connection before anything else
// crosses it. Server runs on an accepted connection, Client on a dialed
// one; either returns the connection to use from then on, or an error, in
// which case the caller closes the connection.
type PeerAuth interface {
	Server(c net.Conn) (net.Conn, error)
	Client(c net.Conn) (net.Conn, error)
}

// The handshake of SecretAuth, both sides holding the same secret K:
//
//	dialer   → acceptor: "DBPEER1\n", nonce A (32 random bytes)
//	acceptor → dialer:   nonce B (32 random bytes), HMAC-SHA256(K, "acceptor" A B)
//	dialer   → acceptor: HMAC-SHA256(K, "dialer" A B)
//
// Each side checks the other's MAC in constant time. Fresh nonces on both
// sides keep a recorded handshake from being replayed, and the labels keep
// one side's answer from serving as the other's. The secret never crosses
// the wire. What follows the handshake is not encrypted: a network where
// someone can read or take over an established TCP connection needs
// mutual TLS between members (TLSAuth) instead, or beneath it (Chain).
const (
	handshakeMagic = "DBPEER1\n"
	nonceLen       = 32
	macLen         = sha256.Size
)

// MinSecretLen is the shortest secret SecretAuth accepts.
const MinSecretLen = 16

// secretRefused is what a dialer sends instead of its proof when the
// acceptor's proof was wrong, before it closes: the acceptor can tell a
// member of another secret from one that is stopping.
const secretRefused = 0

// ErrAuth is wrapped by every failed handshake that counts as a failure: not by
// one the other side closed without a word (it may be stopping).
var ErrAuth = errors.New("transport: peer failed authentication")

// ErrClosedUnheard is what Server returns for a peer that closed the
// connection before sending a byte: a check that the port is open (a
// follower asking whether its leader's process is gone, a load balancer's
// health check, a port scan). Nothing was tried, so it is not a failed
// handshake: it is not counted and OnFailure is not told.
var ErrClosedUnheard = errors.New("transport: the peer closed the connection before sending anything")

// SecretAuth proves membership by a shared secret.
type SecretAuth struct {
	secret  []byte
	timeout time.Duration
	fails   atomic.Uint64
	// OnFailure, if set, is told of each failed handshake: the peer's
	// address and why.
	OnFailure func(remote string, err error)
}

// NewSecretAuth returns a SecretAuth for secret; timeout bounds each
// handshake (0: 5 s).
func NewSecretAuth(secret []byte, timeout time.Duration) (*SecretAuth, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("transport: the cluster secret has %d bytes; it needs at least %d", len(secret), MinSecretLen)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &SecretAuth{secret: bytes.Clone(secret), timeout: timeout}, nil
}

// LoadSecretFile reads a cluster secret from path: the file's contents
// with surrounding white space trimmed.
func LoadSecretFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < MinSecretLen {
		return nil, fmt.Errorf("cluster secret %s: %d bytes; it needs at least %d (for instance: openssl rand -hex 32 > %s)", path, len(s), MinSecretLen, path)
	}
	return []byte(s), nil
}

// Failures counts the handshakes that failed, either side.
func (a *SecretAuth) Failures() uint64 { return a.fails.Load() }

func (a *SecretAuth) mac(label string, x, y []byte) []byte {
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(label))
	m.Write(x)
	m.Write(y)
	return m.Sum(nil)
}

func (a *SecretAuth) fail(c net.Conn, err error) error {
	a.fails.Add(1)
	err = fmt.Errorf("%w: %v", ErrAuth, err)
	if a.OnFailure != nil {
		a.OnFailure(c.RemoteAddr().String(), err)
	}
	return err
}

// Server runs the acceptor's side of the handshake.
func (a *SecretAuth) Server(c net.Conn) (net.Conn, error) {
	c.SetDeadline(time.Now().Add(a.timeout))
	hello := make([]byte, len(handshakeMagic)+nonceLen)
	if _, err := io.ReadFull(c, hello); err != nil {
		if err == io.EOF { // ReadFull's EOF: not a byte came
			return nil, ErrClosedUnheard
		}
		return nil, a.fail(c, fmt.Errorf("reading its hello: %w", err))
	}
	if string(hello[:len(handshakeMagic)]) != handshakeMagic {
		return nil, a.fail(c, errors.New("it does not speak the cluster handshake (no cluster secret, or not a deadbolt node)"))
	}
	na := hello[len(handshakeMagic):]
	nb := make([]byte, nonceLen)
	if _, err := rand.Read(nb); err != nil {
		return nil, err
	}
	out := append(append([]byte(nil), nb...), a.mac("acceptor", na, nb)...)
	if _, err := c.Write(out); err != nil {
		return nil, a.fail(c, fmt.Errorf("writing the challenge: %w", err))
	}
	got := make([]byte, macLen)
	if n, err := io.ReadFull(c, got); err != nil {
		switch {
		case n == 1 && got[0] == secretRefused && errors.Is(err, io.ErrUnexpectedEOF):
			// The dialer checks this node's proof first, and says so
			// before it hangs up if it is wrong.
			return nil, a.fail(c, errors.New("it refused this node's proof: it holds another secret"))
		case n == 0 && errors.Is(err, io.EOF):
			// A close without a word: a dialer that is stopping (a
			// rolling restart), or one of a build from before the
			// refusal byte that holds another secret; that one counts
			// its own failure.
			return nil, fmt.Errorf("transport: the dialer closed the connection before sending its proof (it may be stopping): %w", err)
		}
		return nil, a.fail(c, fmt.Errorf("reading its proof: %w", err))
	}
	if !hmac.Equal(got, a.mac("dialer", na, nb)) {
		return nil, a.fail(c, errors.New("wrong proof: it holds another secret"))
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// Client runs the dialer's side of the handshake.
func (a *SecretAuth) Client(c net.Conn) (net.Conn, error) {
	c.SetDeadline(time.Now().Add(a.timeout))
	na := make([]byte, nonceLen)
	if _, err := rand.Read(na); err != nil {
		return nil, err
	}
	if _, err := c.Write(append([]byte(handshakeMagic), na...)); err != nil {
		return nil, a.fail(c, fmt.Errorf("writing the hello: %w", err))
	}
	in := make([]byte, nonceLen+macLen)
	if _, err := io.ReadFull(c, in); err != nil {
		return nil, a.fail(c, fmt.Errorf("reading the challenge: %w", err))
	}
	nb := in[:nonceLen]
	if !hmac.Equal(in[nonceLen:], a.mac("acceptor", na, nb)) {
		c.Write([]byte{secretRefused}) // tells the acceptor why the connection ends; best effort
		return nil, a.fail(c, errors.New("wrong proof from the node dialed: it holds another secret"))
	}
	if _, err := c.Write(a.mac("dialer", na, nb)); err != nil {
		return nil, a.fail(c, fmt.Errorf("writing the proof: %w", err))
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
