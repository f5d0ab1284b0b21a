package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testcerts"
)

// TestRunLocks: "deadbolt locks" prints the locks of a running node as a
// table, and fails with the server's error on bad input.
func TestRunLocks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var serverOut, serverErr bytes.Buffer
	go func() { done <- run(ctx, []string{"--addr", addr}, &serverOut, &serverErr) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	c := dialWhenUp(t, addr)
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(c)
	for _, cmd := range []string{
		"SET job tok-1 NX PX 30000\r\n",
		"HINCRBY orders svc-a:1 1\r\n",
		"PEXPIRE orders 30000\r\n",
		"RPUSH redisson_lock_queue:{orders} svc-b:1\r\n",
		"ZADD redisson_lock_timeout:{orders} 1800000000000 svc-b:1\r\n",
	} {
		c.Write([]byte(cmd))
		if line, err := rd.ReadString('\n'); err != nil || line[0] == '-' {
			t.Fatalf("%q: %q %v", cmd, line, err)
		}
	}

	var out, errb bytes.Buffer
	if err := run(ctx, []string{"locks", "--addr", addr}, &out, &errb); err != nil {
		t.Fatalf("locks: %v (%s)", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "DB  NAME") {
		t.Fatalf("table:\n%s", out.String())
	}
	for _, want := range []string{"job", "string", "tok-1", "n/a (clients poll)"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("job row lacks %q:\n%s", want, lines[1])
		}
	}
	for _, want := range []string{"orders", "fair", "svc-a:1", "svc-b:1 by 2027-01-15 08:00:00.000"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("orders row lacks %q:\n%s", want, lines[2])
		}
	}

	cols := regexp.MustCompile(`\s{2,}`).Split(lines[2], -1)
	if len(cols) != 9 || cols[4] == "unknown" || cols[5] == "none" || cols[6] != "0" || cols[8] != "-" {
		t.Errorf("orders columns: %q", cols)
	}

	out.Reset()
	if err := run(ctx, []string{"locks", "--addr", addr, "--kind", "semaphore"}, &out, &errb); err != nil || strings.TrimSpace(out.String()) != "no locks held" {
		t.Errorf("--kind semaphore: %q %v", out.String(), err)
	}
	if err := run(ctx, []string{"locks", "--addr", addr, "--kind", "mutex"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "unknown lock kind") {
		t.Errorf("--kind mutex: %v", err)
	}

	// An ACL user sees the locks whose keys it may read.
	c.Write([]byte("ACL SETUSER locker on >pw ~job +@all -@admin -@dangerous\r\n"))
	if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("ACL SETUSER: %q %v", line, err)
	}
	out.Reset()
	if err := run(ctx, []string{"locks", "--addr", addr, "--user", "locker", "--password", "pw"}, &out, &errb); err != nil {
		t.Fatalf("locks --user: %v (%s)", err, errb.String())
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "tok-1") || strings.Contains(out.String(), "svc-a") {
		t.Errorf("locks --user locker:\n%s", out.String())
	}
	if err := run(ctx, []string{"locks", "--addr", addr, "--user", "locker", "--password", "nope"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("locks --user with a wrong password: %v", err)
	}
	// --pass, as deadbolt backup and redis-cli spell it, and the
	// password from the environment, as deadbolt backup reads it.
	out.Reset()
	if err := run(ctx, []string{"locks", "--addr", addr, "--user", "locker", "--pass", "pw"}, &out, &errb); err != nil || !strings.Contains(out.String(), "tok-1") {
		t.Errorf("locks --user --pass: %v\n%s", err, out.String())
	}
	t.Setenv("DEADBOLT_PASSWORD", "pw")
	out.Reset()
	if err := run(ctx, []string{"locks", "--addr", addr, "--user", "locker"}, &out, &errb); err != nil || !strings.Contains(out.String(), "tok-1") {
		t.Errorf("locks --user with $DEADBOLT_PASSWORD: %v\n%s", err, out.String())
	}
}

// "deadbolt locks" given a node's TLS port (it speaks plain TCP) says
// that the port may be TLS, instead of a bare "EOF" (or "AUTH: EOF").
func TestRunLocksTLSPort(t *testing.T) {
	certs := testcerts.Make(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var serverOut, serverErr lockedBuffer
	go func() {
		done <- run(ctx, []string{"--addr", "", "--tls-addr", addr, "--tls-cert-file", certs.Cert, "--tls-key-file", certs.Key,
			"--tls-auth-clients", "no"}, &serverOut, &serverErr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	dialWhenUp(t, addr).Close()
	for _, args := range [][]string{{"locks", "--addr", addr}, {"locks", "--addr", addr, "--password", "pw"}} {
		var out, errb bytes.Buffer
		err := run(ctx, args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), "a TLS port?") || !strings.Contains(err.Error(), addr) {
			t.Errorf("%v: %v; want the TLS port named", args, err)
		}
	}
}
