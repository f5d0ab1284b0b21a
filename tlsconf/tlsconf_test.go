package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/internal/testcerts"
)

func TestOptions(t *testing.T) {
	s := testcerts.Make(t)
	base := Options{CertFile: s.Cert, KeyFile: s.Key, CACertFile: s.CA}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		err  string // "" for success
	}{
		{"defaults", func(*Options) {}, ""},
		{"PKCS#8 encrypted key", func(o *Options) { o.KeyFile, o.KeyFilePass = s.KeyPKCS8, s.Pass }, ""},
		{"legacy encrypted key", func(o *Options) { o.KeyFile, o.KeyFilePass = s.KeyLegacy, s.Pass }, ""},
		{"PKCS#8 wrong pass", func(o *Options) { o.KeyFile, o.KeyFilePass = s.KeyPKCS8, "nope" }, "server-pkcs8.key"},
		{"legacy wrong pass", func(o *Options) { o.KeyFile, o.KeyFilePass = s.KeyLegacy, "nope" }, "server-legacy.key"},
		{"encrypted without pass", func(o *Options) { o.KeyFile = s.KeyPKCS8 }, "tls-key-file-pass"},
		{"no such cert", func(o *Options) { o.CertFile = s.Dir + "/nosuch.crt" }, "nosuch.crt"},
		{"key of another cert", func(o *Options) { o.KeyFile = s.ClientKey }, "client.key"},
		{"ca dir", func(o *Options) { o.CACertFile, o.CACertDir = "", s.Dir }, ""},
		{"no CA", func(o *Options) { o.CACertFile = "" }, "tls-ca-cert-file"},
		{"no CA, no client auth", func(o *Options) { o.CACertFile, o.AuthClients = "", "no" }, ""},
		{"auth-clients bogus", func(o *Options) { o.AuthClients = "maybe" }, "tls-auth-clients"},
		{"protocols 1.3", func(o *Options) { o.Protocols = "TLSv1.3" }, ""},
		{"protocols bogus", func(o *Options) { o.Protocols = "SSLv3" }, "SSLv3"},
		{"protocols gap", func(o *Options) { o.Protocols = "TLSv1.1 TLSv1.3" }, "gap"},
		{"ciphers", func(o *Options) { o.Ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305" }, ""},
		{"ciphers bogus", func(o *Options) { o.Ciphers = "ECDHE-RSA-NOPE" }, "ECDHE-RSA-NOPE"},
		{"ciphersuites", func(o *Options) { o.Ciphersuites = "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256" }, ""},
		{"ciphersuites bogus", func(o *Options) { o.Ciphersuites = "TLS_NOPE" }, "TLS_NOPE"},
	} {
		o := base
		tc.edit(&o)
		_, err := o.Server()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one that names %q", tc.name, err, tc.err)
		}
	}
}

// The OpenSSL names of the suites commonly configured map to Go's.
func TestOpenSSLNames(t *testing.T) {
	for _, name := range []string{
		"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256",
		"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305",
		"ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA", "AES128-GCM-SHA256", "AES256-GCM-SHA384",
		"ECDHE-RSA-AES128-SHA256", "AES128-SHA",
	} {
		if _, ok := goSuites[name]; !ok {
			t.Errorf("%s is not known", name)
		}
	}
}

// handshake connects a client with cfg to a listener serving l's
// configuration, and returns the client's error and the certificate the
// server presented.
func handshake(t *testing.T, l *Loader, cfg *tls.Config) (*x509.Certificate, error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", l.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.(*tls.Conn).Handshake()
			c.Write([]byte("x"))
			c.Close()
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// TLS 1.3 reports a refused client certificate on the first read.
	if _, err := c.Read(make([]byte, 1)); err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

func TestClientAuthentication(t *testing.T) {
	s := testcerts.Make(t)
	for _, tc := range []struct {
		auth      string
		cert, key string
		ok        bool
	}{
		{"yes", s.ClientCert, s.ClientKey, true},
		{"yes", "", "", false},
		{"yes", s.StrangerCert, s.StrangerKey, false},
		{"optional", "", "", true},
		{"optional", s.ClientCert, s.ClientKey, true},
		{"optional", s.StrangerCert, s.StrangerKey, false},
		{"no", "", "", true},
	} {
		l, err := NewLoader(Options{CertFile: s.Cert, KeyFile: s.Key, CACertFile: s.CA, AuthClients: tc.auth})
		if err != nil {
			t.Fatal(err)
		}
		_, err = handshake(t, l, s.ClientConfig(t, tc.cert, tc.key))
		if (err == nil) != tc.ok {
			t.Errorf("tls-auth-clients %s, client certificate %q: error %v, want ok=%v", tc.auth, tc.cert, err, tc.ok)
		}
	}
}

// A reload takes effect for the next handshake; a failed one keeps the
// configuration in force.
func TestReload(t *testing.T) {
	s := testcerts.Make(t)
	other := testcerts.Make(t)
	l, err := NewLoader(Options{CertFile: s.Cert, KeyFile: s.Key, AuthClients: "no"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.ClientConfig(t, "", "")
	cfg.InsecureSkipVerify = true // compare the certificates by hand
	first, err := handshake(t, l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Renewed in place: the same paths, a new certificate.
	for _, f := range [][2]string{{other.Cert, s.Cert}, {other.Key, s.Key}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := handshake(t, l, cfg); !got.Equal(first) {
		t.Fatal("the certificate changed before Reload")
	}
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	second, err := handshake(t, l, cfg)
	if err != nil || second.Equal(first) {
		t.Fatalf("after Reload: %v, same certificate %v", err, second != nil && second.Equal(first))
	}
	if err := l.Set(func(o *Options) { o.KeyFile = s.ClientKey }); err == nil {
		t.Fatal("a key of another certificate was accepted")
	}
	if got, err := handshake(t, l, cfg); err != nil || !got.Equal(second) {
		t.Fatalf("after a failed Set: %v", err)
	}
	if l.Options().KeyFile != s.Key {
		t.Errorf("a failed Set changed the options: %+v", l.Options())
	}
}

func FuzzDecryptPKCS8(f *testing.F) {
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x01}, []byte("pass"))
	f.Fuzz(func(t *testing.T, der, pass []byte) {
		decryptPKCS8(der, pass) // must not panic
	})
}
