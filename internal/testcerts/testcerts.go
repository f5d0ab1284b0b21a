// Package testcerts makes test certificates with the real openssl command:
// a CA, a server certificate for 127.0.0.1 and localhost, a second
// member's certificate, client certificates (one signed by another CA),
// and encrypted copies of the server's key. Without openssl the test is skipped, or fails when
// CI=true.
package testcerts

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Set is one directory of certificates and keys.
type Set struct {
	Dir                 string
	CA, CAKey           string // the CA that signed the server and client certificates
	Cert, Key           string // the server's, for 127.0.0.1-3 and localhost; good for client authentication too
	Node2Cert, Node2Key string // another cluster member's, the CA signed, good for server and client authentication
	ClientCert          string // a client certificate the CA signed
	ClientKey           string
	StrangerCert        string // a client certificate another CA signed
	StrangerKey         string
	KeyPKCS8, KeyLegacy string // the server's key encrypted with Pass (PKCS#8 PBES2; old PEM encryption)
	Pass                string
}

// Make writes a Set into a fresh temporary directory.
func Make(tb testing.TB) *Set {
	tb.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("openssl is missing (Debian package openssl); CI must have it")
		}
		tb.Skip("openssl is missing")
	}
	dir := tb.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	s := &Set{
		Dir: dir, CA: p("ca.crt"), CAKey: p("ca.key"), Cert: p("server.crt"), Key: p("server.key"),
		Node2Cert: p("node2.crt"), Node2Key: p("node2.key"),
		ClientCert: p("client.crt"), ClientKey: p("client.key"),
		StrangerCert: p("stranger.crt"), StrangerKey: p("stranger.key"),
		KeyPKCS8: p("server-pkcs8.key"), KeyLegacy: p("server-legacy.key"), Pass: "s3cret pass",
	}
	run := func(args ...string) {
		tb.Helper()
		out, err := exec.Command("openssl", args...).CombinedOutput()
		if err != nil {
			tb.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ca := func(key, cert, cn string) {
		run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
			"-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN="+cn)
	}
	leaf := func(key, cert, caCert, caKey, cn, ext string) {
		csr := cert + ".csr"
		run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN="+cn)
		extFile := cert + ".ext"
		if err := os.WriteFile(extFile, []byte(ext), 0o600); err != nil {
			tb.Fatal(err)
		}
		run("x509", "-req", "-in", csr, "-CA", caCert, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", extFile)
	}
	ca(s.CAKey, s.CA, "deadbolt test CA")
	leaf(s.Key, s.Cert, s.CA, s.CAKey, "deadbolt test server",
		"subjectAltName=IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.3,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
	leaf(s.Node2Key, s.Node2Cert, s.CA, s.CAKey, "deadbolt test node 2",
		"subjectAltName=IP:127.0.0.2\nextendedKeyUsage=serverAuth,clientAuth\n")
	leaf(s.ClientKey, s.ClientCert, s.CA, s.CAKey, "deadbolt test client", "extendedKeyUsage=clientAuth\n")
	otherCA, otherKey := p("other-ca.crt"), p("other-ca.key")
	ca(otherKey, otherCA, "another CA")
	leaf(s.StrangerKey, s.StrangerCert, otherCA, otherKey, "stranger", "extendedKeyUsage=clientAuth\n")
	run("pkcs8", "-topk8", "-v2", "aes256", "-in", s.Key, "-out", s.KeyPKCS8, "-passout", "pass:"+s.Pass)
	run("ec", "-aes256", "-in", s.Key, "-out", s.KeyLegacy, "-passout", "pass:"+s.Pass)
	return s
}

// ClientConfig is a TLS client configuration that trusts the set's CA for
// 127.0.0.1 and, given a certificate and key, presents them whatever CAs
// the server names (as OpenSSL clients do).
func (s *Set) ClientConfig(tb testing.TB, cert, key string) *tls.Config {
	tb.Helper()
	b, err := os.ReadFile(s.CA)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		tb.Fatalf("%s holds no certificate", s.CA)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			tb.Fatal(err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &kp, nil }
	}
	return cfg
}
