package cluster

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testcerts"
	"github.com/deadbolt/deadbolt/tlsconf"
	"github.com/deadbolt/deadbolt/transport"
)

// With --tls-cluster, --join given a member's plain client port (its
// --addr, not its --tls-addr) fails at once, with the error that says
// which port to give, instead of retrying the same handshake until the
// join's deadline (4 command timeouts, 20 s) and then saying
// "context deadline exceeded (last: ... )".
func TestJoinViaPlainPortWithTLSFailsAtOnce(t *testing.T) {
	certs := testcerts.Make(t)
	c := startTestClusterWith(t, 1, func(_ int, cfg *Config) {
		a, err := transport.NewTLSAuth(tlsconf.MemberOptions{CertFile: certs.Cert, KeyFile: certs.Key, CACertFile: certs.CA}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cfg.PeerAuth, cfg.JoinConn = a, a.ClientTLS
	})
	// A plain RESP port: it answers whatever comes with an error line.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				bufio.NewReader(conn).ReadByte()
				conn.Write([]byte("-ERR unknown command\r\n"))
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = c.nodes[0].JoinVia(ctx, ln.Addr().String())
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "--tls-addr") {
		t.Fatalf("JoinVia a plain port: %v; want the TLS error naming --tls-addr, not a deadline", err)
	}
}

// A node whose --id is not among --peers is refused with what to do, not
// raft's "cluster: bootstrap: node is not a voter".
func TestBootstrapIDNotInPeers(t *testing.T) {
	_, err := NewNode(Config{ID: "n4", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Peers: []Peer{{ID: "n1", RaftAddr: "127.0.0.1:1"}, {ID: "n2", RaftAddr: "127.0.0.1:2"}}})
	if err == nil || !strings.Contains(err.Error(), `"n4" is not one of --peers' (n1, n2)`) || !strings.Contains(err.Error(), "--join") {
		t.Fatalf("NewNode with its id outside --peers: %v", err)
	}
}
