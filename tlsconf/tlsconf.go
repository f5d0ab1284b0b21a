// Package tlsconf turns Redis's TLS settings (tls-cert-file, tls-key-file,
// tls-ca-cert-file, tls-auth-clients, tls-protocols, tls-ciphers, ...) into
// a crypto/tls configuration, and keeps it reloadable: a Loader holds the
// configuration new connections get, and Reload swaps in one built from
// the files as they are now, or keeps the old one and says why not.
// Connections already open keep the configuration they started with.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Options are Redis's TLS settings, by their redis.conf names.
type Options struct {
	CertFile    string // tls-cert-file: the server's certificate chain (PEM)
	KeyFile     string // tls-key-file: its private key (PEM, possibly encrypted)
	KeyFilePass string // tls-key-file-pass: the key's passphrase
	CACertFile  string // tls-ca-cert-file: CAs that sign client certificates
	CACertDir   string // tls-ca-cert-dir: a directory of such CA files
	// AuthClients is tls-auth-clients: "yes" (the default) requires a
	// client certificate the CAs signed, "optional" checks one if sent,
	// "no" asks for none.
	AuthClients string
	// Protocols is tls-protocols: a space-separated list of TLSv1,
	// TLSv1.1, TLSv1.2 and TLSv1.3; empty is "TLSv1.2 TLSv1.3".
	Protocols string
	// Ciphers is tls-ciphers: a colon-separated list of TLS 1.2 cipher
	// suites by their OpenSSL names; empty is Go's secure defaults.
	Ciphers string
	// Ciphersuites is tls-ciphersuites: TLS 1.3 suites by their IANA
	// names. They are checked, but Go always offers all three TLS 1.3
	// suites, each of them secure.
	Ciphersuites string
	// PreferServerCiphers is tls-prefer-server-ciphers. Go's server
	// chooses the suite by the hardware it runs on since Go 1.17, so
	// the setting changes nothing.
	PreferServerCiphers bool
}

// Server builds the server side configuration of o.
func (o Options) Server() (*tls.Config, error) {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, errors.New("tls: tls-cert-file and tls-key-file are required")
	}
	cert, err := LoadKeyPair(o.CertFile, o.KeyFile, o.KeyFilePass)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if cfg.MinVersion, cfg.MaxVersion, err = versions(o.Protocols); err != nil {
		return nil, err
	}
	if cfg.CipherSuites, err = cipherSuites(o.Ciphers); err != nil {
		return nil, err
	}
	if err := checkTLS13Suites(o.Ciphersuites); err != nil {
		return nil, err
	}
	switch strings.ToLower(cmpOr(o.AuthClients, "yes")) {
	case "yes":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "no":
		cfg.ClientAuth = tls.NoClientCert
	default:
		return nil, fmt.Errorf("tls: tls-auth-clients %q: want yes, no or optional", o.AuthClients)
	}
	if cfg.ClientAuth != tls.NoClientCert {
		if o.CACertFile == "" && o.CACertDir == "" {
			return nil, errors.New("tls: tls-auth-clients needs tls-ca-cert-file or tls-ca-cert-dir to check client certificates (or tls-auth-clients no)")
		}
		if cfg.ClientCAs, err = LoadCAs(o.CACertFile, o.CACertDir); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// LoadKeyPair reads a certificate chain and its key, decrypting the key
// with pass when it is encrypted (PKCS#8 PBES2, as OpenSSL 3 writes it, or
// the older PEM encryption). Errors name the file.
func LoadKeyPair(certFile, keyFile, pass string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: tls-cert-file: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: tls-key-file: %w", err)
	}
	keyPEM, err = decryptKey(keyPEM, pass)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: tls-key-file %s: %w", keyFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: %s and %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// LoadCAs reads CA certificates from a PEM file and from every file of a
// directory (files that hold no certificate are skipped, as OpenSSL's
// hashed directories hold links and other files).
func LoadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("tls: tls-ca-cert-file: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("tls: tls-ca-cert-file %s holds no PEM certificate", file)
		}
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("tls: tls-ca-cert-dir: %w", err)
		}
		found := false
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err == nil && pool.AppendCertsFromPEM(b) {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("tls: tls-ca-cert-dir %s holds no PEM certificate", dir)
		}
	}
	return pool, nil
}

// decryptKey returns the unencrypted PEM of a key.
func decryptKey(keyPEM []byte, pass string) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM data")
	}
	switch {
	case block.Type == "ENCRYPTED PRIVATE KEY":
		if pass == "" {
			return nil, errors.New("the key is encrypted: give its passphrase with tls-key-file-pass")
		}
		der, err := decryptPKCS8(block.Bytes, []byte(pass))
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	case x509.IsEncryptedPEMBlock(block): //nolint:staticcheck // the older PEM encryption, still written by openssl -traditional
		if pass == "" {
			return nil, errors.New("the key is encrypted: give its passphrase with tls-key-file-pass")
		}
		der, err := x509.DecryptPEMBlock(block, []byte(pass)) //nolint:staticcheck // see above
		if err != nil {
			return nil, fmt.Errorf("decrypt: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der}), nil
	}
	return keyPEM, nil
}

// versions parses tls-protocols into the range Go can express.
func versions(s string) (minV, maxV uint16, err error) {
	names := map[string]uint16{
		"tlsv1": tls.VersionTLS10, "tlsv1.1": tls.VersionTLS11,
		"tlsv1.2": tls.VersionTLS12, "tlsv1.3": tls.VersionTLS13,
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var vs []uint16
	for _, f := range fields {
		v, ok := names[strings.ToLower(f)]
		if !ok {
			return 0, 0, fmt.Errorf("tls: tls-protocols: unknown protocol %q (want TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3)", f)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1]+1 {
			return 0, 0, fmt.Errorf("tls: tls-protocols %q leaves a gap, which Go's TLS cannot express", s)
		}
	}
	return vs[0], vs[len(vs)-1], nil
}

// goSuites maps the OpenSSL names of the TLS 1.2 suites Go implements to
// their ids.
var goSuites = func() map[string]uint16 {
	m := map[string]uint16{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if n := opensslName(cs.Name); n != "" {
			m[n] = cs.ID
		}
	}
	return m
}()

// opensslName converts an IANA suite name (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
// to OpenSSL's (ECDHE-RSA-AES128-GCM-SHA256), "" for a TLS 1.3 suite.
func opensslName(iana string) string {
	kx, rest, ok := strings.Cut(strings.TrimPrefix(iana, "TLS_"), "_WITH_")
	if !ok {
		return ""
	}
	var parts []string
	if kx != "RSA" {
		parts = append(parts, strings.ReplaceAll(kx, "_", "-"))
	}
	rest = strings.NewReplacer("AES_128_", "AES128-", "AES_256_", "AES256-", "3DES_EDE_CBC", "DES-CBC3",
		"CHACHA20_POLY1305", "CHACHA20-POLY1305", "RC4_128", "RC4").Replace(rest)
	rest = strings.ReplaceAll(rest, "_", "-")
	rest = strings.NewReplacer("AES128-CBC-SHA256", "AES128-SHA256", "AES128-CBC-SHA", "AES128-SHA",
		"AES256-CBC-SHA384", "AES256-SHA384", "AES256-CBC-SHA", "AES256-SHA", "-SHA256-SHA256", "-SHA256").Replace(rest)
	if strings.HasSuffix(rest, "POLY1305-SHA256") {
		rest = strings.TrimSuffix(rest, "-SHA256")
	}
	return strings.Join(append(parts, rest), "-")
}

// cipherSuites parses tls-ciphers (OpenSSL names separated by colons; the
// IANA names are accepted too).
func cipherSuites(s string) ([]uint16, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ids []uint16
	for name := range strings.SplitSeq(s, ":") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		id, ok := goSuites[name]
		if !ok {
			for _, cs := range tls.CipherSuites() {
				if cs.Name == name {
					id, ok = cs.ID, true
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("tls: tls-ciphers: unknown or unsupported TLS 1.2 cipher %q", name)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// checkTLS13Suites checks the names of tls-ciphersuites.
func checkTLS13Suites(s string) error {
	for name := range strings.SplitSeq(s, ":") {
		switch strings.TrimSpace(name) {
		case "", "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256":
		default:
			return fmt.Errorf("tls: tls-ciphersuites: unknown TLS 1.3 suite %q", name)
		}
	}
	return nil
}

// Loader keeps the configuration new connections get.
type Loader struct {
	mu   sync.Mutex // serialises Reload and Set
	opts Options
	cur  atomic.Pointer[tls.Config]
	// Reloads counts successful reloads (after the first load).
	Reloads atomic.Int64
}

// NewLoader loads o once; an error means no configuration could be built.
func NewLoader(o Options) (*Loader, error) {
	cfg, err := o.Server()
	if err != nil {
		return nil, err
	}
	l := &Loader{opts: o}
	l.cur.Store(cfg)
	return l, nil
}

// Options returns the options in force.
func (l *Loader) Options() Options {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opts
}

// Reload rebuilds the configuration from the files as they are now (new
// certificates after a renewal). On error the configuration in force
// stays.
func (l *Loader) Reload() error {
	return l.Set(func(*Options) {})
}

// Set changes options with edit and reloads; on error neither the options
// nor the configuration change.
func (l *Loader) Set(edit func(*Options)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.opts
	edit(&o)
	cfg, err := o.Server()
	if err != nil {
		return err
	}
	l.opts = o
	l.cur.Store(cfg)
	l.Reloads.Add(1)
	return nil
}

// Config returns a configuration whose handshakes use what is in force
// when each one starts.
func (l *Loader) Config() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return l.cur.Load(), nil },
	}
}
