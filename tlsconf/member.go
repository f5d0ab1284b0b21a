package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// MemberOptions are the TLS settings of the connections between cluster
// members (Redis's tls-cluster and tls-replication). A member presents
// the same certificate whether it accepts a connection or dials one, so
// both sides always authenticate: tls-auth-clients, which is about
// clients, has no say here.
type MemberOptions struct {
	CertFile    string // the member's certificate chain (PEM)
	KeyFile     string // its key (PEM, possibly encrypted)
	KeyFilePass string // the key's passphrase
	CACertFile  string // CAs whose certificates make a member
	CACertDir   string
	Protocols   string // as Options.Protocols
	Ciphers     string // as Options.Ciphers
}

// Configs builds both sides of a member's TLS: server for the connections
// it accepts, client for those it dials.
//
// Either side accepts only a peer certificate that chains to the CAs and
// is good for both server and client authentication (no extended key
// usage at all, or both): every member's certificate serves in both
// directions, and a client's certificate from the same CA, made for
// client authentication alone, does not make its holder a member. Host
// names are not checked, as Redis does not check them between its nodes:
// an acceptor has no name to check a dialer against, and which address
// a member dials is decided by the cluster's configuration, which only
// members change.
func (o MemberOptions) Configs() (server, client *tls.Config, err error) {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, nil, errors.New("tls: members need a certificate and its key (tls-cert-file and tls-key-file, or tls-cluster-cert-file and tls-cluster-key-file)")
	}
	if o.CACertFile == "" && o.CACertDir == "" {
		return nil, nil, errors.New("tls: members need tls-ca-cert-file or tls-ca-cert-dir: a member accepts only peers whose certificate those CAs signed")
	}
	cert, err := LoadKeyPair(o.CertFile, o.KeyFile, o.KeyFilePass)
	if err != nil {
		return nil, nil, err
	}
	cas, err := LoadCAs(o.CACertFile, o.CACertDir)
	if err != nil {
		return nil, nil, err
	}
	minV, maxV, err := versions(o.Protocols)
	if err != nil {
		return nil, nil, err
	}
	suites, err := cipherSuites(o.Ciphers)
	if err != nil {
		return nil, nil, err
	}
	verify := func(cs tls.ConnectionState) error { return verifyMember(cs, cas) }
	server = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    cas,
		// Go has checked the chain for client authentication by then.
		VerifyConnection: verify,
		MinVersion:       minV, MaxVersion: maxV, CipherSuites: suites,
	}
	client = &tls.Config{
		// Present the certificate whatever CAs the acceptor names, so a
		// refusal says why on its side (signed by whom) instead of "no
		// certificate".
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		// The chain is checked below, without a host name (see above).
		InsecureSkipVerify: true,
		VerifyConnection:   verify,
		MinVersion:         minV, MaxVersion: maxV, CipherSuites: suites,
	}
	return server, client, nil
}

// verifyMember checks that the peer's certificate chains to cas and is
// good for both server and client authentication.
func verifyMember(cs tls.ConnectionState, cas *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the peer presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: cas, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{use}})
		if err != nil {
			return fmt.Errorf("tls: the peer's certificate (%q) is no member's: %w", leaf.Subject.CommonName, err)
		}
	}
	return nil
}
