//go:build linux

package server

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testcerts"
	"github.com/deadbolt/deadbolt/tlsconf"
)

// A TLS client is served by the event loop once its handshake is done:
// a pipeline of many requests in one write, a reply far larger than a TLS
// record and than the socket takes at once, pub/sub messages pushed to
// it, and CLIENT KILL all work as on a plain connection.
func TestTLSOnEventLoop(t *testing.T) {
	certs := testcerts.Make(t)
	s := newTLSServer(t, certs, "no")
	cfg := certs.ClientConfig(t, "", "")
	c, err := dialTLS(t, s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.must("+PONG\r\n", "ping")
	var onLoop bool
	for _, o := range s.clients() {
		o.mu.Lock()
		onLoop = onLoop || o.lc.tls != nil && o.lc.lp != nil
		o.mu.Unlock()
	}
	if !onLoop {
		t.Fatal("the TLS connection is not on the event loop")
	}

	// A pipeline in one write.
	var req strings.Builder
	for range 1000 {
		req.WriteString(encode("incr", "n"))
	}
	c.write(req.String())
	for i := 1; i <= 1000; i++ {
		if got := c.readRaw(); got != integer(int64(i)) {
			t.Fatalf("reply %d = %q", i, got)
		}
	}

	// A 4 MiB value both ways.
	big := strings.Repeat("x", 4<<20)
	c.must(status("OK"), "set", "big", big)
	c.send("get", "big")
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if got := c.readRaw(); got != bulk(big) {
		t.Fatalf("GET of 4 MiB: %d bytes back", len(got))
	}

	// Messages pushed to a TLS subscriber by another client's PUBLISH.
	sub, err := dialTLS(t, s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sub.send("subscribe", "ch")
	sub.readRaw()
	for i := range 50 {
		c.must(integer(1), "publish", "ch", "m"+strconv.Itoa(i))
	}
	for i := range 50 {
		want := "*3\r\n" + bulk("message") + bulk("ch") + bulk("m"+strconv.Itoa(i))
		if got := sub.readRaw(); got != want {
			t.Fatalf("message %d = %q", i, got)
		}
	}

	// CLIENT KILL closes it.
	c.send("client", "id")
	id := strings.TrimSpace(strings.TrimPrefix(c.readRaw(), ":"))
	other, err := dialTLS(t, s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other.must(integer(1), "client", "kill", "id", id)
	c.expectClosed()
}

// Half-open handshakes count against maxclients and are dropped when the
// handshake time runs out; then a real client gets in.
func TestTLSHalfOpenHandshakes(t *testing.T) {
	old := tlsHandshakeTimeout
	tlsHandshakeTimeout = 300 * time.Millisecond
	t.Cleanup(func() { tlsHandshakeTimeout = old })
	certs := testcerts.Make(t)
	l, err := tlsconf.NewLoader(tlsconf.Options{CertFile: certs.Cert, KeyFile: certs.Key, CACertFile: certs.CA, AuthClients: "no"})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, func(c *Config) { c.TLS, c.TLSOnly, c.MaxClients = l, true, 5 })
	for range 5 {
		nc, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
	}
	cfg := certs.ClientConfig(t, "", "")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if s.clientCount() == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections, want the 5 half-open ones", s.clientCount())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A sixth is refused as Redis refuses it: the error, over TLS.
	if c, err := dialTLS(t, s.addr, cfg); err == nil {
		if got, err := c.tryRead(time.Second); err != nil || got != "-ERR max number of clients reached\r\n" {
			t.Fatalf("a sixth client past maxclients 5: %q, %v", got, err)
		}
	}
	// The half-open ones time out; a real client is served.
	for {
		c, err := dialTLS(t, s.addr, cfg)
		if err == nil {
			c.send("ping")
			if got, err := c.tryRead(time.Second); err == nil && got == "+PONG\r\n" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the half-open handshakes were never dropped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := s.stats.tlsFailures.Load(); n < 5 {
		t.Errorf("%d failed handshakes counted, want at least the 5 half-open ones", n)
	}
}

func (s *testServer) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// A client refused at maxclients that never does its handshake stops
// nobody: the refusal waits for the handshake on its own goroutine, not
// under the server's lock that CLIENT LIST and every new connection take.
func TestTLSStalledRefusalBlocksNobody(t *testing.T) {
	certs := testcerts.Make(t)
	l, err := tlsconf.NewLoader(tlsconf.Options{CertFile: certs.Cert, KeyFile: certs.Key, CACertFile: certs.CA, AuthClients: "no"})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, func(c *Config) { c.TLS, c.TLSOnly, c.MaxClients = l, true, 1 })
	c, err := dialTLS(t, s.addr, certs.ClientConfig(t, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	c.must("+PONG\r\n", "ping")
	stalled, err := net.Dial("tcp", s.addr) // over the limit, and silent
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stalled.Close() })
	time.Sleep(100 * time.Millisecond) // let the server accept it
	c.send("client", "list")
	if _, err := c.tryRead(3 * time.Second); err != nil {
		t.Fatalf("CLIENT LIST while a refused client stalls its handshake: %v", err)
	}
}
