package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testcerts"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The binary serves TLS only (--addr ""), Sentinel over TLS too, and
// reloads its certificate at SIGHUP: new connections get the new one, the
// open one goes on, and a reload that fails keeps what is in force.
func TestProcessTLSReloadOnHangup(t *testing.T) {
	certs, other := testcerts.Make(t), testcerts.Make(t)
	bin := buildBinary(t)
	addr, sentinel := freeAddr(t), freeAddr(t)
	var logs lockedBuffer
	cmd := exec.Command(bin, "--addr", "", "--tls-addr", addr, "--tls-sentinel-addr", sentinel,
		"--tls-cert-file", certs.Cert, "--tls-key-file", certs.KeyPKCS8, "--tls-key-file-pass", certs.Pass,
		"--tls-auth-clients", "no")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("deadbolt's log:\n%s", logs.String())
		}
	}()
	trust := func(s *testcerts.Set) *tls.Config {
		pool := x509.NewCertPool()
		b, err := os.ReadFile(s.CA)
		if err != nil {
			t.Fatal(err)
		}
		pool.AppendCertsFromPEM(b)
		return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	}
	dial := func(a string, cfg *tls.Config) (*tls.Conn, error) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", a, cfg)
			var opErr *net.OpError
			if err == nil || !errors.As(err, &opErr) || time.Now().After(deadline) {
				return c, err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	do := func(c *tls.Conn, cmd string) string {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return line
	}
	old, err := dial(addr, trust(certs))
	if err != nil {
		t.Fatalf("TLS: %v", err)
	}
	defer old.Close()
	if got := do(old, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	sc, err := dial(sentinel, trust(certs))
	if err != nil {
		t.Fatalf("TLS Sentinel: %v", err)
	}
	if got := do(sc, "SENTINEL GET-MASTER-ADDR-BY-NAME mymaster"); got != "*2\r\n" {
		t.Errorf("SENTINEL over TLS: %q", got)
	}
	sc.Close()

	// Renewed in place, then SIGHUP.
	for _, f := range [][2]string{{other.Cert, certs.Cert}, {other.KeyPKCS8, certs.KeyPKCS8}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "TLS certificates reloaded") {
		if time.Now().After(deadline) {
			t.Fatal("no reload after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := do(old, "PING"); got != "+PONG\r\n" {
		t.Errorf("the connection open before the reload: PING %q", got)
	}
	if c, err := dial(addr, trust(certs)); err == nil {
		c.Close()
		t.Error("after the reload the old certificate is still served")
	}
	c, err := dial(addr, trust(other))
	if err != nil {
		t.Fatalf("after the reload: %v", err)
	}
	c.Close()

	// A broken key: the reload fails, the certificate in force stays.
	if err := os.WriteFile(certs.KeyPKCS8, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	for !strings.Contains(logs.String(), "TLS reload failed") {
		if time.Now().After(deadline) {
			t.Fatal("no failed reload logged")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), certs.KeyPKCS8) {
		t.Errorf("the failed reload does not name the file %s", certs.KeyPKCS8)
	}
	c, err = dial(addr, trust(other))
	if err != nil {
		t.Fatalf("after a failed reload: %v", err)
	}
	c.Close()
}
