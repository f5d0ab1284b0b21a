package server

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/deadbolt/deadbolt/resp"
	"github.com/deadbolt/deadbolt/tlsconf"
)

// Client TLS. A TLS connection's handshake is done on a goroutine of its
// own, bounded in time; then the event loop serves it like any other
// (tlspipe.go). The configuration is the tlsconf.Loader's, so that CONFIG SET of a
// tls-* parameter, or a reload (SIGHUP), applies to the connections that
// come next; those already open keep theirs.

// tlsHandshakeTimeout bounds a client's TLS handshake.
var tlsHandshakeTimeout = 10 * time.Second // a variable for the tests

// ServeTLS serves TLS clients on ln (a plain TCP listener) until it is
// closed or the server is closed; it returns nil then.
func (s *Server) ServeTLS(ln net.Listener) error {
	s.tlsAddr.Store(ln.Addr().String())
	return s.ServeSentinel(tlsListener{Listener: ln, config: s.cfg.TLS.Config()})
}

// handshake completes a TLS connection's handshake, and reports whether
// the connection may be served.
func (c *conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		c.srv.cfg.Logger.Info("server: TLS handshake refused", "client", c.addr, "reason", err)
		c.srv.stats.tlsFailures.Add(1)
		return false
	}
	tc.SetDeadline(time.Time{})
	return true
}

// tlsParams are the CONFIG parameters of TLS, by the tlsconf.Options
// field each one sets.
var tlsParams = map[string]func(o *tlsconf.Options) *string{
	"tls-cert-file":     func(o *tlsconf.Options) *string { return &o.CertFile },
	"tls-key-file":      func(o *tlsconf.Options) *string { return &o.KeyFile },
	"tls-key-file-pass": func(o *tlsconf.Options) *string { return &o.KeyFilePass },
	"tls-ca-cert-file":  func(o *tlsconf.Options) *string { return &o.CACertFile },
	"tls-ca-cert-dir":   func(o *tlsconf.Options) *string { return &o.CACertDir },
	"tls-auth-clients":  func(o *tlsconf.Options) *string { return &o.AuthClients },
	"tls-protocols":     func(o *tlsconf.Options) *string { return &o.Protocols },
	"tls-ciphers":       func(o *tlsconf.Options) *string { return &o.Ciphers },
	"tls-ciphersuites":  func(o *tlsconf.Options) *string { return &o.Ciphersuites },
}

// tlsConfigGet returns a TLS parameter's value when TLS is configured.
func (s *Server) tlsConfigGet(name string) (string, bool) {
	if name == "tls-port" {
		if a, _ := s.tlsAddr.Load().(string); a != "" {
			_, port, _ := net.SplitHostPort(a)
			return port, true
		}
		return "", false
	}
	if s.cfg.TLS == nil {
		return "", false
	}
	o := s.cfg.TLS.Options()
	if name == "tls-prefer-server-ciphers" {
		if o.PreferServerCiphers {
			return "yes", true
		}
		return "no", true
	}
	field, ok := tlsParams[name]
	if !ok {
		return "", false
	}
	v := *field(&o)
	if name == "tls-auth-clients" && v == "" {
		v = "yes"
	}
	return v, true
}

// setTLS applies the TLS parameters among a CONFIG SET's changes at once,
// as Redis does: either the new configuration loads, or nothing changes
// and the reply says so. Without TLS configured they are only kept.
func (s *Server) setTLS(names, vals []string) resp.Reply {
	if s.cfg.TLS == nil || len(names) == 0 {
		return resp.Reply{}
	}
	err := s.cfg.TLS.Set(func(o *tlsconf.Options) {
		for i, name := range names {
			if name == "tls-prefer-server-ciphers" {
				o.PreferServerCiphers = vals[i] == "yes"
				continue
			}
			*tlsParams[name](o) = vals[i]
		}
	})
	if err != nil {
		s.cfg.Logger.Warn("server: CONFIG SET of TLS parameters refused", "err", err)
		return configSetErr(names[0], "Unable to update TLS configuration. Check server logs.")
	}
	return resp.Reply{}
}

// isTLSParam reports whether CONFIG SET of name reconfigures TLS.
func isTLSParam(name string) bool {
	_, ok := tlsParams[name]
	return ok || name == "tls-prefer-server-ciphers"
}

// ReloadTLS reloads the TLS certificates and keys from their files (after
// a renewal; SIGHUP). Connections already open keep theirs.
func (s *Server) ReloadTLS() error {
	if s.cfg.TLS == nil {
		return nil
	}
	return s.cfg.TLS.Reload()
}

// TLSConfig returns the configuration for a TLS listener, nil without TLS.
func (s *Server) TLSConfig() *tls.Config {
	if s.cfg.TLS == nil {
		return nil
	}
	return s.cfg.TLS.Config()
}

// TLSOnly reports whether the main listener serves TLS.
func (s *Server) TLSOnly() bool { return s.cfg.TLSOnly }
