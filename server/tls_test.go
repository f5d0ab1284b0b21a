package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testcerts"
	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/tlsconf"
)

// newTLSServer is a test server whose one listener serves TLS with the
// certificates of s.
func newTLSServer(t *testing.T, s *testcerts.Set, auth string) *testServer {
	t.Helper()
	l, err := tlsconf.NewLoader(tlsconf.Options{CertFile: s.Cert, KeyFile: s.Key, CACertFile: s.CA, AuthClients: auth})
	if err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, func(c *Config) { c.TLS, c.TLSOnly = l, true })
}

// dialTLS connects a test client over TLS; the handshake's error, if any,
// comes with the first read.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) (*client, error) {
	t.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { nc.Close() })
	return &client{tb: t, nc: nc, rd: bufio.NewReader(nc)}, nil
}

// The same commands over TLS to redis-server and to deadbolt, with the
// same certificates, get the same replies, CONFIG of the TLS parameters
// included.
func TestRedisDiffTLS(t *testing.T) {
	certs := testcerts.Make(t)
	_, redisTLS := testredis.StartTLS(t, "--tls-cert-file", certs.Cert, "--tls-key-file", certs.Key, "--tls-ca-cert-file", certs.CA)
	s := newTLSServer(t, certs, "yes")
	cfg := certs.ClientConfig(t, certs.ClientCert, certs.ClientKey)
	ref, err := dialTLS(t, redisTLS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dialTLS(t, s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range split(
		"ping", "set k v", "get k", "hset h f v", "hgetall h",
		"config get tls-cert-file", "config get tls-key-file", "config get tls-ca-cert-file",
		"config get tls-auth-clients", "config get tls-protocols", "config get tls-ciphers",
		"config get tls-ciphersuites", "config get tls-prefer-server-ciphers", "config get tls-key-file-pass",
		"config get tls-replication", "config get tls-cluster", "config get tls-ca-cert-dir",
		"config set tls-auth-clients maybe", "config set tls-protocols TLSv9",
		"config set tls-cert-file /nonexistent/cert.pem", "config get tls-cert-file",
		"config set tls-auth-clients optional", "config get tls-auth-clients",
	) {
		want := ref.doRaw(cmd...)
		if have := got.doRaw(cmd...); have != want {
			t.Errorf("%q:\n deadbolt %q\n    redis %q", cmd, have, want)
		}
	}
	// Redis moves its TLS port at CONFIG SET tls-port; deadbolt's listeners
	// are fixed at start.
	got.mustErr("ERR CONFIG SET failed (possibly related to argument 'tls-port') - can't set immutable config", "config", "set", "tls-port", "1")
}

func TestTLSClientCertificates(t *testing.T) {
	certs := testcerts.Make(t)
	for _, tc := range []struct {
		auth      string
		cert, key string
		ok        bool
	}{
		{"yes", certs.ClientCert, certs.ClientKey, true},
		{"yes", "", "", false},
		{"yes", certs.StrangerCert, certs.StrangerKey, false},
		{"optional", "", "", true},
		{"optional", certs.StrangerCert, certs.StrangerKey, false},
		{"no", "", "", true},
	} {
		s := newTLSServer(t, certs, tc.auth)
		c, err := dialTLS(t, s.addr, certs.ClientConfig(t, tc.cert, tc.key))
		if err == nil {
			c.send("ping")
			_, err = c.tryRead(5 * time.Second)
		}
		if (err == nil) != tc.ok {
			t.Errorf("tls-auth-clients %s, certificate %q: %v, want ok=%v", tc.auth, tc.cert, err, tc.ok)
		}
	}
	// A plain client on the TLS port is dropped, and the server goes on.
	s := newTLSServer(t, certs, "yes")
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("PING\r\n"))
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if b, err := bufio.NewReader(nc).ReadString('\n'); err == nil && strings.HasPrefix(b, "+PONG") {
		t.Error("a plain client was answered on the TLS port")
	}
	nc.Close()
	c, err := dialTLS(t, s.addr, certs.ClientConfig(t, certs.ClientCert, certs.ClientKey))
	if err != nil {
		t.Fatal(err)
	}
	c.must("+PONG\r\n", "ping")
	if n := s.stats.tlsFailures.Load(); n != 1 {
		t.Errorf("%d failed handshakes counted, want 1", n)
	}
}

// CONFIG SET tls-cert-file and tls-key-file take effect for the next
// connection; an open one goes on with its own; a pair that does not load
// is refused and changes nothing.
func TestTLSReloadByConfigSet(t *testing.T) {
	certs, other := testcerts.Make(t), testcerts.Make(t)
	s := newTLSServer(t, certs, "no")
	cfg := certs.ClientConfig(t, "", "")
	old, err := dialTLS(t, s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	old.must("+PONG\r\n", "ping")
	old.mustErr("ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - Unable to update TLS configuration. Check server logs.",
		"config", "set", "tls-key-file", other.Key)
	old.must("+OK\r\n", "config", "set", "tls-cert-file", other.Cert, "tls-key-file", other.Key)
	old.must("+PONG\r\n", "ping")
	if _, err := dialTLS(t, s.addr, cfg); err == nil {
		t.Error("a client that trusts only the old CA connected after the change")
	}
	fresh, err := dialTLS(t, s.addr, other.ClientConfig(t, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	fresh.must("+PONG\r\n", "ping")
	peer := fresh.nc.(*tls.Conn).ConnectionState().PeerCertificates[0]
	want := parseCert(t, other.Cert)
	if !peer.Equal(want) {
		t.Error("the new connection did not get the new certificate")
	}
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	kp, err := tls.LoadX509KeyPair(path, strings.TrimSuffix(path, ".crt")+".key")
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// redis-cli, a real client, over TLS with a client certificate.
func TestTLSRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-cli is missing; CI must have it (make deps)")
		}
		t.Skip("redis-cli is missing")
	}
	certs := testcerts.Make(t)
	s := newTLSServer(t, certs, "yes")
	host, port, _ := net.SplitHostPort(s.addr)
	out, err := exec.Command(cli, "-h", host, "-p", port, "--tls", "--cacert", certs.CA,
		"--cert", certs.ClientCert, "--key", certs.ClientKey, "-3", "hello", "3").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "proto 3") {
		t.Errorf("redis-cli --tls -3 HELLO 3: %v\n%s", err, out)
	}
	out, err = exec.Command(cli, "-h", host, "-p", port, "--tls", "--cacert", certs.CA, "ping").CombinedOutput()
	if err == nil && strings.Contains(string(out), "PONG") {
		t.Errorf("redis-cli without a client certificate was answered: %s", out)
	}
}
