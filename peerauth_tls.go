package deadbolt

import (
	"cmp"

	"github.com/deadbolt/deadbolt/tlsconf"
)

// memberTLS is the members' TLS (TLSCluster): the cluster's own
// certificate and key if given, else the client TLS ones; the client TLS
// CAs, versions and ciphers. tls-auth-clients has no say: members always
// present a certificate.
func memberTLS(cfg Config) tlsconf.MemberOptions {
	o := tlsconf.MemberOptions{
		CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, KeyFilePass: cfg.TLS.KeyFilePass,
		CACertFile: cfg.TLS.CACertFile, CACertDir: cfg.TLS.CACertDir,
		Protocols: cfg.TLS.Protocols, Ciphers: cfg.TLS.Ciphers,
	}
	if cfg.TLSClusterCertFile != "" || cfg.TLSClusterKeyFile != "" {
		o.CertFile, o.KeyFile = cfg.TLSClusterCertFile, cfg.TLSClusterKeyFile
		o.KeyFilePass = cmp.Or(cfg.TLSClusterKeyFilePass, cfg.TLS.KeyFilePass)
	}
	return o
}
