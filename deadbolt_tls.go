package deadbolt

import (
	"crypto/tls"
	"errors"
	"net"

	"github.com/deadbolt/deadbolt/tlsconf"
	"github.com/deadbolt/deadbolt/transport"
)

// loadTLS checks the TLS settings and loads the certificates: nil when no
// TLS listener is asked for.
func loadTLS(cfg *Config) (*tlsconf.Loader, error) {
	if cfg.TLSAddr == "" && cfg.TLSSentinelAddr == "" {
		return nil, nil
	}
	return tlsconf.NewLoader(cfg.TLS)
}

// listenExtra opens the listeners beside the main one: Sentinel, TLS
// (unless the main one is TLS's) and TLS Sentinel.
func (n *Node) listenExtra(cfg Config, tlsBeside bool) error {
	n.extra = map[string]*extraListener{}
	tlsAddr := cfg.TLSAddr
	if !tlsBeside {
		tlsAddr = "" // the main listener is TLS's
	}
	for _, l := range []struct {
		name, addr string
		tls        bool
	}{
		{"sentinel", cfg.SentinelAddr, false},
		{"tls", tlsAddr, true},
		{"tls-sentinel", cfg.TLSSentinelAddr, true},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return err
		}
		x := &extraListener{ln: ln, done: make(chan error, 1)}
		n.extra[l.name] = x
		switch {
		case l.name == "tls":
			go func() { x.done <- n.srv.ServeTLS(ln) }()
		case l.tls:
			x.ln = tls.NewListener(ln, n.srv.TLSConfig())
			go func() { x.done <- n.srv.ServeSentinel(x.ln) }()
		default:
			go func() { x.done <- n.srv.ServeSentinel(ln) }()
		}
	}
	return nil
}

func (n *Node) extraAddr(name string) string {
	if l := n.extra[name]; l != nil {
		return l.ln.Addr().String()
	}
	return ""
}

// TLSAddr is the address TLS clients connect to, "" without TLS.
func (n *Node) TLSAddr() string {
	if n.srv.TLSOnly() {
		return n.Addr()
	}
	return n.extraAddr("tls")
}

// TLSSentinelAddr is the address of the Sentinel listener over TLS.
func (n *Node) TLSSentinelAddr() string { return n.extraAddr("tls-sentinel") }

// ReloadTLS reloads the TLS certificates and keys from their files, for
// the connections that come next (SIGHUP): the clients' and, with
// TLSCluster, the members'. What fails to load keeps what is in force.
func (n *Node) ReloadTLS() error {
	err := n.srv.ReloadTLS()
	if n.memberTLS != nil {
		err = errors.Join(err, n.memberTLS.Reload())
	}
	return err
}

// MemberTLS is the members' TLS authentication (TLSCluster), nil without
// it: its Failures count the peers it refused.
func (n *Node) MemberTLS() *transport.TLSAuth { return n.memberTLS }
