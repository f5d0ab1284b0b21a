package tlsconf

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/internal/testcerts"
)

func TestMemberOptions(t *testing.T) {
	s := testcerts.Make(t)
	base := MemberOptions{CertFile: s.Cert, KeyFile: s.Key, CACertFile: s.CA}
	for _, tc := range []struct {
		name string
		edit func(*MemberOptions)
		err  string // "" for success
	}{
		{"defaults", func(*MemberOptions) {}, ""},
		{"encrypted key", func(o *MemberOptions) { o.KeyFile, o.KeyFilePass = s.KeyPKCS8, s.Pass }, ""},
		{"encrypted key, wrong pass", func(o *MemberOptions) { o.KeyFile, o.KeyFilePass = s.KeyPKCS8, "nope" }, "server-pkcs8.key"},
		{"ca dir", func(o *MemberOptions) { o.CACertFile, o.CACertDir = "", s.Dir }, ""},
		{"no certificate", func(o *MemberOptions) { o.CertFile = "" }, "tls-cluster-cert-file"},
		{"no CA", func(o *MemberOptions) { o.CACertFile = "" }, "tls-ca-cert-file"},
		{"protocols bogus", func(o *MemberOptions) { o.Protocols = "SSLv3" }, "SSLv3"},
		{"ciphers bogus", func(o *MemberOptions) { o.Ciphers = "NOPE" }, "NOPE"},
	} {
		o := base
		tc.edit(&o)
		srv, cl, err := o.Configs()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && (srv.ClientAuth != tls.RequireAndVerifyClientCert || cl.GetClientCertificate == nil):
			t.Errorf("%s: the configuration does not authenticate both sides", tc.name)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one that names %q", tc.name, err, tc.err)
		}
	}
}
