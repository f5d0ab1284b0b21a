package server

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// firstLine connects from 127.0.0.2 to addr, sends PING and returns the
// first line it reads back.
func firstLine(t *testing.T, from, addr string) string {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	c.Write([]byte("PING\r\n"))
	line, err := bufio.NewReaderSize(c, 4096).ReadString('\n')
	if err != nil {
		t.Fatalf("reading from %s: %v", addr, err)
	}
	return line
}

// startRedisOn starts redis-server listening on host, protected mode on.
func startRedisOn(t *testing.T, host string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not found: run make deps")
		}
		t.Skip("redis-server not found: run make deps")
	}
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--bind", host, "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--protected-mode", "yes", "--dir", t.TempDir(), "--logfile", "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Protected mode: a client from 127.0.0.2 (not one of Redis's loopback
// addresses, 127.0.0.1 and ::1) is refused with redis-server's own text
// while there is no password; 127.0.0.1 is served; a password or
// CONFIG SET protected-mode no lets it in.
func TestProtectedMode(t *testing.T) {
	ref := firstLine(t, "127.0.0.2", startRedisOn(t, "127.0.0.2"))
	if ref != msgProtected {
		t.Fatalf("redis-server says %q", ref)
	}
	s := newTestServer(t, func(c *Config) { c.Addr = "127.0.0.2:0"; c.ProtectedMode = true })
	if got := firstLine(t, "127.0.0.2", s.addr); got != ref {
		t.Fatalf("deadbolt says %q, redis-server %q", got, ref)
	}
	if got := firstLine(t, "127.0.0.1", s.addr); got != "+PONG\r\n" {
		t.Fatalf("from 127.0.0.1: %q", got)
	}
	local := dial(t, s.addr) // from 127.0.0.1, the kernel's source for 127.0.0.0/8
	local.must(status("OK"), "CONFIG", "SET", "requirepass", "pw")
	if got := firstLine(t, "127.0.0.2", s.addr); got[0] != '-' || got[:7] != "-NOAUTH" {
		t.Fatalf("with a password: %q", got)
	}
	local.must(status("OK"), "AUTH", "pw")
	local.must(status("OK"), "CONFIG", "SET", "requirepass", "")
	local.must("*2\r\n"+bulk("protected-mode")+bulk("yes"), "CONFIG", "GET", "protected-mode")
	local.must(status("OK"), "CONFIG", "SET", "protected-mode", "no")
	if got := firstLine(t, "127.0.0.2", s.addr); got != "+PONG\r\n" {
		t.Fatalf("protected-mode no: %q", got)
	}
	off := newTestServer(t, func(c *Config) { c.Addr = "127.0.0.2:0" })
	if got := firstLine(t, "127.0.0.2", off.addr); got != "+PONG\r\n" {
		t.Fatalf("ProtectedMode off: %q", got)
	}
}
