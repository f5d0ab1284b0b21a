package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/resp"
)

// deadbolt backup --addr HOST:PORT --out FILE: asks a member for a backup
// (RAFT BACKUP; a follower asks the leader) and writes it to FILE, whole
// or not at all. A new cluster starts from it with --restore FILE.

func init() { subcommands["backup"] = runBackup }

// maxBackup bounds the reply the backup client accepts.
const maxBackup = 64 << 30

func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadbolt backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "a member's RESP (or, with --tls, TLS) `host:port`; a follower asks the leader")
	out := fs.String("out", "", "write the backup to this `file` (required); it is replaced only once the whole backup is on disk")
	user := fs.String("user", "", "ACL `user` to AUTH as (default: the default user)")
	pass := fs.String("pass", "", "`password` to AUTH with (default: $DEADBOLT_PASSWORD, then $REDISCLI_AUTH)")
	fs.StringVar(pass, "password", "", "the same as --pass")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	useTLS := fs.Bool("tls", false, "connect with TLS")
	caFile := fs.String("cacert", "", "TLS: CA certificates (PEM `file`) that sign the server's certificate (default: the system's)")
	certFile := fs.String("cert", "", "TLS: client certificate (PEM `file`), for a server with tls-auth-clients yes")
	keyFile := fs.String("key", "", "TLS: the client certificate's key (PEM `file`)")
	sni := fs.String("sni", "", "TLS: the server `name` to verify (default: the host of --addr)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("backup: unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return errors.New("backup: --out FILE is required")
	}
	password := *pass
	if password == "" {
		password = passwordFromEnv()
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", *addr)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	if *useTLS {
		cfg, err := clientTLS(*addr, *sni, *caFile, *certFile, *keyFile)
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("backup: TLS: %w", err)
		}
		nc = tc
	}
	rd := bufio.NewReaderSize(nc, 64<<10)
	call := func(args ...string) (resp.Reply, error) {
		items := make([][]byte, len(args))
		for i, a := range args {
			items[i] = []byte(a)
		}
		if _, err := nc.Write(resp.BulkArray(items).Append(nil)); err != nil {
			return resp.Reply{}, err
		}
		r, err := resp.ReadReply(rd, maxBackup)
		if err == nil && r.Type == resp.Error {
			err = errors.New(r.String())
		}
		return r, err
	}
	if password != "" {
		auth := []string{"AUTH", password}
		if *user != "" {
			auth = []string{"AUTH", *user, password}
		}
		if _, err := call(auth...); err != nil {
			return fmt.Errorf("backup: AUTH: %w", err)
		}
	}
	start := time.Now()
	r, err := call("RAFT", "BACKUP")
	if err != nil {
		return fmt.Errorf("backup: RAFT BACKUP: %w", err)
	}
	if r.Type != resp.Bulk {
		return fmt.Errorf("backup: RAFT BACKUP answered %v, not a bulk string", r.Type)
	}
	clock, err := cluster.CheckBackup(r.Str)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := writeFileAtomic(*out, r.Str); err != nil {
		return fmt.Errorf("backup: writing --out %s: %w", *out, err)
	}
	sum := sha256.Sum256(r.Str)
	fmt.Fprintf(stdout, "backup of %s: %d bytes in %s, clock %s, sha256 %s, written to %s\n", *addr, len(r.Str),
		time.Since(start).Round(time.Millisecond), time.UnixMilli(clock).UTC().Format(time.RFC3339Nano), hex.EncodeToString(sum[:]), *out)
	return nil
}

// writeFileAtomic writes data to a new file beside path, syncs it, and
// renames it over path, so that path holds the old or the new content,
// never part of one.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func clientTLS(addr, sni, caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: sni}
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		cfg.ServerName = host
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificates", caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// passwordFromEnv is the password of the client subcommands (backup,
// locks) when no flag gives one: $DEADBOLT_PASSWORD, then redis-cli's
// $REDISCLI_AUTH.
func passwordFromEnv() string {
	if p := os.Getenv("DEADBOLT_PASSWORD"); p != "" {
		return p
	}
	return os.Getenv("REDISCLI_AUTH")
}
