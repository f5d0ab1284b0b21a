package cluster

import (
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/internal/testcerts"
	"github.com/deadbolt/deadbolt/tlsconf"
	"github.com/deadbolt/deadbolt/transport"
)

// startTLSCluster starts n nodes whose members speak mutual TLS
// (--tls-cluster), each with a certificate of its own from one CA, and
// returns each node's TLSAuth.
func startTLSCluster(tb testing.TB, n int, certs *testcerts.Set) (*testCluster, []*transport.TLSAuth) {
	tb.Helper()
	var auths []*transport.TLSAuth
	var done atomic.Bool                    // no logging once the test is over
	tb.Cleanup(func() { done.Store(true) }) // runs after the nodes close
	c := startTestClusterWith(tb, n, func(i int, cfg *Config) {
		o := tlsconf.MemberOptions{CertFile: certs.Cert, KeyFile: certs.Key, CACertFile: certs.CA}
		if i%2 == 1 {
			o.CertFile, o.KeyFile = certs.Node2Cert, certs.Node2Key
		}
		a, err := transport.NewTLSAuth(o, time.Second)
		if err != nil {
			tb.Fatal(err)
		}
		id := cfg.ID
		a.OnFailure = func(remote string, err error) {
			if !done.Load() {
				tb.Logf("%s refused %s: %v", id, remote, err)
			}
		}
		auths = append(auths, a)
		cfg.PeerAuth = a
	})
	return c, auths
}

// Members that speak TLS elect a leader, replicate, and answer the
// leader's read-index rounds, with no handshake refused. (Forwarding from
// a follower needs a server: TestTLSClusterForwardAndJoin at the root.)
func TestTLSCluster(t *testing.T) {
	certs := testcerts.Make(t)
	c, auths := startTLSCluster(t, 3, certs)
	li := c.leader(-1)
	if _, err := c.nodes[li].ApplyLocal(t.Context(), cmd("SET", "k", "v")); err != nil {
		t.Fatal(err)
	}
	res, err := c.nodes[li].Read(t.Context(), cmd("GET", "k"))
	if err != nil || string(res.Reply.Str) != "v" {
		t.Fatalf("a linearizable read on the leader: %v %s", err, res.Reply.String())
	}
	c.converged()
	for i, a := range auths {
		if a.Failures() != 0 {
			t.Fatalf("%s refused %d handshakes of members", c.ids[i], a.Failures())
		}
	}
}

// The hostile peer of TestHostilePeer against members that speak TLS:
// without a certificate (raft's own TCP transport), with a certificate
// another CA signed, and with a client's certificate the members' CA
// signed (for client authentication only). Each gets nothing done, and
// every node counts the handshake it refused.
func TestHostilePeerTLS(t *testing.T) {
	certs := testcerts.Make(t)
	for _, tc := range []struct {
		name     string
		stranger func(t *testing.T) (*raft.NetworkTransport, raft.RPCHeader)
	}{
		{"no certificate", newStranger},
		{"stranger's certificate", func(t *testing.T) (*raft.NetworkTransport, raft.RPCHeader) {
			return newTLSStranger(t, certs.StrangerCert, certs.StrangerKey)
		}},
		{"client's certificate", func(t *testing.T) (*raft.NetworkTransport, raft.RPCHeader) {
			return newTLSStranger(t, certs.ClientCert, certs.ClientKey)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, auths := startTLSCluster(t, 3, certs)
			stranger, hdr := tc.stranger(t)
			c.attack(stranger, hdr, true)
			for i, a := range auths {
				if a.Failures() == 0 {
					t.Fatalf("%s counted no refused handshake", c.ids[i])
				}
			}
		})
	}
}

// newTLSStranger is raft's transport in a process that is no member but
// speaks TLS with the certificate it has, trusting whatever it reaches.
func newTLSStranger(t *testing.T, certFile, keyFile string) (*raft.NetworkTransport, raft.RPCHeader) {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stream := &tlsStrangerStream{Listener: ln, cfg: &tls.Config{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		InsecureSkipVerify:   true,
	}}
	stranger := raft.NewNetworkTransport(helloStream{stream}, 2, time.Second, io.Discard)
	t.Cleanup(func() { stranger.Close() })
	return stranger, raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("stranger"), Addr: []byte(stranger.LocalAddr())}
}

type tlsStrangerStream struct {
	net.Listener
	cfg *tls.Config
}

func (s *tlsStrangerStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), s.cfg)
}
