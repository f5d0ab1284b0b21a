package transport

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testcerts"
	"github.com/deadbolt/deadbolt/tlsconf"
)

// tcpPair is a connected pair of loopback TCP connections: what the
// cluster's stream layer hands a PeerAuth.
func tcpPair(t *testing.T) (accepted, dialed net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	dialed, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted = <-ch
	if accepted == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { accepted.Close(); dialed.Close() })
	return accepted, dialed
}

// tcpHandshake runs both sides over TCP, as the stream layer does (a
// failed side closes its connection), and checks that a connection both
// sides accepted carries data both ways.
func tcpHandshake(t *testing.T, server, client PeerAuth) (serr, cerr error) {
	t.Helper()
	a, b := tcpPair(t)
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := server.Server(a)
		if err != nil {
			a.Close()
		}
		done <- result{c, err}
	}()
	cc, cerr := client.Client(b)
	if cerr != nil {
		b.Close()
	}
	r := <-done
	if r.err == nil && cerr == nil {
		go r.c.Write([]byte("ping"))
		got := make([]byte, 4)
		if _, err := io.ReadFull(cc, got); err != nil || string(got) != "ping" {
			t.Fatalf("after the handshake: %q %v", got, err)
		}
	}
	return r.err, cerr
}

func member(s *testcerts.Set, cert, key string) tlsconf.MemberOptions {
	return tlsconf.MemberOptions{CertFile: cert, KeyFile: key, CACertFile: s.CA}
}

func newTLSAuth(t *testing.T, o tlsconf.MemberOptions) *TLSAuth {
	t.Helper()
	a, err := NewTLSAuth(o, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Two members, each with a certificate of its own from the members' CA,
// pass both ways; the encrypted key is read with its passphrase.
func TestTLSAuthMembers(t *testing.T) {
	s := testcerts.Make(t)
	n1 := member(s, s.Cert, s.KeyPKCS8)
	n1.KeyFilePass = s.Pass
	a, b := newTLSAuth(t, n1), newTLSAuth(t, member(s, s.Node2Cert, s.Node2Key))
	for _, pair := range [][2]*TLSAuth{{a, b}, {b, a}} {
		if serr, cerr := tcpHandshake(t, pair[0], pair[1]); serr != nil || cerr != nil {
			t.Fatalf("acceptor %v, dialer %v", serr, cerr)
		}
	}
	if a.Failures()+b.Failures() != 0 {
		t.Fatal("a good handshake was counted as a failure")
	}
}

// Whoever is not a member is refused by the acceptor, which names it, and
// the dialer learns it at once; each side counts its failure.
func TestTLSAuthRefusesNonMembers(t *testing.T) {
	s := testcerts.Make(t)
	for _, tc := range []struct {
		name      string
		cert, key string
		why       string // in the acceptor's error
	}{
		{"stranger's CA", s.StrangerCert, s.StrangerKey, "unknown authority"},
		// The members' CA signed it, but for client authentication only:
		// a client's certificate makes no member.
		{"client's certificate", s.ClientCert, s.ClientKey, "no member's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTLSAuth(t, member(s, s.Cert, s.Key))
			var remote string
			var reason error
			srv.OnFailure = func(r string, err error) { remote, reason = r, err }
			stranger := newTLSAuth(t, member(s, tc.cert, tc.key))
			serr, cerr := tcpHandshake(t, srv, stranger)
			if serr == nil || !errors.Is(serr, ErrAuth) || !strings.Contains(serr.Error(), tc.why) {
				t.Fatalf("acceptor: %v, want a refusal for %q", serr, tc.why)
			}
			if cerr == nil || !strings.Contains(cerr.Error(), "refused this node's certificate") {
				t.Fatalf("dialer: %v", cerr)
			}
			if srv.Failures() != 1 || stranger.Failures() != 1 || !strings.HasPrefix(remote, "127.0.0.1:") || reason == nil {
				t.Fatalf("failures %d/%d, remote %q, reason %v", srv.Failures(), stranger.Failures(), remote, reason)
			}
		})
	}
}

// A member that dials a node whose certificate another CA signed refuses
// it before sending anything.
func TestTLSAuthDialerRefusesStranger(t *testing.T) {
	s := testcerts.Make(t)
	other := testcerts.Make(t)
	stranger := newTLSAuth(t, tlsconf.MemberOptions{CertFile: other.Cert, KeyFile: other.Key, CACertFile: s.CA})
	m := newTLSAuth(t, member(s, s.Cert, s.Key))
	serr, cerr := tcpHandshake(t, stranger, m)
	if cerr == nil || !strings.Contains(cerr.Error(), "unknown authority") || m.Failures() != 1 {
		t.Fatalf("dialer: %v (failures %d)", cerr, m.Failures())
	}
	if serr == nil {
		t.Fatal("the stranger's side completed")
	}
}

// A process that speaks raft at once, or nothing at all, is dropped: the
// first on its bytes, the second at the handshake's deadline.
func TestTLSAuthPlainAndSilentPeers(t *testing.T) {
	s := testcerts.Make(t)
	a, err := NewTLSAuth(member(s, s.Cert, s.Key), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	acc, dial := tcpPair(t)
	go dial.Write([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	if _, err := a.Server(acc); err == nil || !errors.Is(err, ErrAuth) {
		t.Fatalf("a peer speaking raft in the clear passed: %v", err)
	}
	acc, _ = tcpPair(t)
	start := time.Now()
	if _, err := a.Server(acc); err == nil {
		t.Fatal("a silent peer passed")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the handshake waited %v", d)
	}
	if a.Failures() != 2 {
		t.Fatalf("failures %d, want 2", a.Failures())
	}
}

// Reload reads the files again: a member whose certificate and CA were
// replaced by another CA's accepts that CA's members from then on, and a
// reload that fails keeps what is in force.
func TestTLSAuthReload(t *testing.T) {
	s, other := testcerts.Make(t), testcerts.Make(t)
	dir := t.TempDir()
	o := tlsconf.MemberOptions{CertFile: dir + "/m.crt", KeyFile: dir + "/m.key", CACertFile: dir + "/ca.crt"}
	copyFiles := func(set *testcerts.Set) {
		for src, dst := range map[string]string{set.Cert: o.CertFile, set.Key: o.KeyFile, set.CA: o.CACertFile} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyFiles(s)
	m := newTLSAuth(t, o)
	newcomer := newTLSAuth(t, member(other, other.Node2Cert, other.Node2Key))
	if serr, _ := tcpHandshake(t, m, newcomer); serr == nil {
		t.Fatal("another CA's member passed before the reload")
	}
	copyFiles(other)
	if err := m.Reload(); err != nil {
		t.Fatal(err)
	}
	if serr, cerr := tcpHandshake(t, m, newcomer); serr != nil || cerr != nil {
		t.Fatalf("after the reload: acceptor %v, dialer %v", serr, cerr)
	}
	if err := os.WriteFile(o.KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(); err == nil || !strings.Contains(err.Error(), o.KeyFile) {
		t.Fatalf("a broken key reloaded: %v", err)
	}
	if serr, cerr := tcpHandshake(t, m, newcomer); serr != nil || cerr != nil {
		t.Fatalf("after a failed reload: acceptor %v, dialer %v", serr, cerr)
	}
	if m.Reloads() != 1 {
		t.Fatalf("reloads %d, want 1", m.Reloads())
	}
}

// Chained, TLS and the secret both must pass: the right certificate with
// another secret is refused.
func TestChainTLSAndSecret(t *testing.T) {
	s := testcerts.Make(t)
	node := func(cert, key, secret string) PeerAuth {
		return Chain(newTLSAuth(t, member(s, cert, key)), newAuth(t, secret))
	}
	if serr, cerr := tcpHandshake(t, node(s.Cert, s.Key, "the members' secret"), node(s.Node2Cert, s.Node2Key, "the members' secret")); serr != nil || cerr != nil {
		t.Fatalf("members: acceptor %v, dialer %v", serr, cerr)
	}
	serr, cerr := tcpHandshake(t, node(s.Cert, s.Key, "the members' secret"), node(s.Node2Cert, s.Node2Key, "a stranger's secret"))
	if serr == nil || cerr == nil {
		t.Fatalf("another secret behind a good certificate: acceptor %v, dialer %v", serr, cerr)
	}
	serr, cerr = tcpHandshake(t, node(s.Cert, s.Key, "the members' secret"), node(s.StrangerCert, s.StrangerKey, "the members' secret"))
	if serr == nil || cerr == nil {
		t.Fatalf("the secret behind a stranger's certificate: acceptor %v, dialer %v", serr, cerr)
	}
}

// ClientTLS reaches a member's client TLS port (--join), which asks for a
// client certificate as Redis does.
func TestClientTLSToClientPort(t *testing.T) {
	s := testcerts.Make(t)
	cfg, err := tlsconf.Options{CertFile: s.Cert, KeyFile: s.Key, CACertFile: s.CA}.Server()
	if err != nil {
		t.Fatal(err)
	}
	acc, dial := tcpPair(t)
	go func() {
		tc := tls.Server(acc, cfg)
		if tc.Handshake() == nil {
			tc.Write([]byte("+PONG\r\n"))
		}
	}()
	c, err := newTLSAuth(t, member(s, s.Node2Cert, s.Node2Key)).ClientTLS(dial)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 7)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "+PONG\r\n" {
		t.Fatalf("%q %v", got, err)
	}
	// A plain port: the error says what --join wants.
	acc, dial = tcpPair(t)
	go func() { acc.Write([]byte("-ERR unknown command\r\n")) }()
	if _, err := newTLSAuth(t, member(s, s.Node2Cert, s.Node2Key)).ClientTLS(dial); err == nil || !strings.Contains(err.Error(), "--tls-addr") {
		t.Fatalf("a plain port: %v", err)
	}
}

// A peer that connects and closes without a byte (a follower checking
// whether its leader's process is gone, a health check) is no failed
// handshake: not counted, not reported. One that sends a byte and closes
// is, for each kind of authentication and for the two chained.
func TestPeerClosedUnheardIsNoFailure(t *testing.T) {
	s := testcerts.Make(t)
	for _, name := range []string{"tls", "secret", "chain"} {
		t.Run(name, func(t *testing.T) {
			var (
				auth     PeerAuth
				failures func() uint64
				told     []error
			)
			onFailure := func(_ string, err error) { told = append(told, err) }
			ta, sa := newTLSAuth(t, member(s, s.Cert, s.Key)), newAuth(t, "the members' secret")
			ta.OnFailure, sa.OnFailure = onFailure, onFailure
			switch name {
			case "tls":
				auth, failures = ta, ta.Failures
			case "secret":
				auth, failures = sa, sa.Failures
			default:
				auth, failures = Chain(ta, sa), func() uint64 { return ta.Failures() + sa.Failures() }
			}
			acc, dial := tcpPair(t)
			dial.Close()
			if _, err := auth.Server(acc); !errors.Is(err, ErrClosedUnheard) {
				t.Fatalf("a peer that closed unheard: %v", err)
			}
			if n := failures(); n != 0 || len(told) != 0 {
				t.Fatalf("a peer that closed unheard counted as %d failures, reported %v", n, told)
			}
			acc, dial = tcpPair(t)
			dial.Write([]byte{0x16})
			dial.Close()
			if _, err := auth.Server(acc); !errors.Is(err, ErrAuth) {
				t.Fatalf("a peer that sent a byte and closed: %v", err)
			}
			if n := failures(); n != 1 || len(told) != 1 {
				t.Fatalf("a peer that sent a byte and closed counted as %d failures, reported %v; want 1", n, told)
			}
		})
	}
}

// A member that is stopping can finish the TLS handshake of a dial in
// flight and then close the connection without its acceptance byte or an
// alert. The dialer must not report that as its certificate refused (a
// rolling restart logged "the node dialed refused this node's
// certificate", which sends an operator after certificates that are
// fine): no failure counted, OnFailure not told, and the error says the
// connection closed. A real refusal (an alert) is still one.
func TestTLSAuthAcceptorClosedIsNoRefusal(t *testing.T) {
	s := testcerts.Make(t)
	srv := newTLSAuth(t, member(s, s.Cert, s.Key))
	dialer := newTLSAuth(t, member(s, s.Node2Cert, s.Node2Key))
	var told []error
	dialer.OnFailure = func(_ string, err error) { told = append(told, err) }
	acc, dial := tcpPair(t)
	go func() {
		// The acceptor's TLS handshake, then a close: what a node does
		// to a dial in flight as it stops.
		tc := tls.Server(acc, srv.server.Load())
		tc.Handshake()
		acc.Close()
	}()
	_, err := dialer.Client(dial)
	if err == nil {
		t.Fatal("the dial succeeded on a connection closed before the acceptance")
	}
	if errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "closed the connection before accepting") {
		t.Fatalf("dialer: %v; want no authentication failure, and a closed connection named", err)
	}
	if n := dialer.Failures(); n != 0 || len(told) != 0 {
		t.Fatalf("a closed connection counted as %d failures, reported %v", n, told)
	}
}

// TestTLSAuthSilentAcceptorIsAFailure: a TLS server that finishes the
// handshake and then says nothing (a node's client TLS port given as its
// raft address) is no stopping member: the dial counts as a failed
// authentication and says what to check.
func TestTLSAuthSilentAcceptorIsAFailure(t *testing.T) {
	s := testcerts.Make(t)
	srv := newTLSAuth(t, member(s, s.Cert, s.Key))
	dialer, err := NewTLSAuth(member(s, s.Node2Cert, s.Node2Key), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var told []error
	dialer.OnFailure = func(_ string, err error) { told = append(told, err) }
	acc, dial := tcpPair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tc := tls.Server(acc, srv.server.Load())
		tc.Handshake()
		var b [1]byte
		acc.SetReadDeadline(time.Now().Add(5 * time.Second))
		acc.Read(b[:]) // silent until the dialer gives up
	}()
	_, err = dialer.Client(dial)
	dial.Close()
	<-done
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "said nothing") {
		t.Fatalf("dialer: %v; want an authentication failure naming the silence", err)
	}
	if n := dialer.Failures(); n != 1 || len(told) != 1 {
		t.Fatalf("a silent acceptor counted as %d failures, reported %d times", n, len(told))
	}
}
