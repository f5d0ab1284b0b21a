package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "deadbolt ") {
		t.Fatalf("--version: %q %v", out.String(), err)
	}
	bad := [][]string{
		{"--no-such-flag"},
		{"extra-arg"},
		{"--peers", "n1=127.0.0.1:1"}, // needs --id and --raft-addr
		{"--id", "n1", "--raft-addr", "127.0.0.1:0", "--peers", "n1"}, // no address
		{"--log-level", "loud"},
		{"--id", "n4", "--raft-addr", "127.0.0.1:0", "--join", "127.0.0.1:1"}, // no --data-dir
		{"--protected-mode", "maybe"},
		{"--min-free-disk", "lots"},
		{"--max-entry-bytes", "huge"},
	}
	for _, args := range bad {
		if err := run(context.Background(), args, &out, &errb); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
	}
}

// A Raft address others can reach needs a cluster secret, or
// --insecure-cluster said out loud; a bad secret file is named.
func TestRunClusterSecret(t *testing.T) {
	var out, errb bytes.Buffer
	// 192.0.2.1 (TEST-NET-1) is never this machine's: the refusal comes
	// before anything listens.
	err := run(context.Background(), []string{"--id", "n1", "--raft-addr", "192.0.2.1:7000", "--peers", "n1=192.0.2.1:7000", "--addr", "127.0.0.1:0"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--cluster-secret-file") || !strings.Contains(err.Error(), "--insecure-cluster") {
		t.Fatalf("a non-loopback Raft address without a secret: %v", err)
	}
	short := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(short, []byte("short"), 0o600)
	err = run(context.Background(), []string{"--id", "n1", "--raft-addr", "127.0.0.1:0", "--peers", "n1=127.0.0.1:1", "--cluster-secret-file", short}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), short) {
		t.Fatalf("a short secret file: %v", err)
	}
}

// -h prints a description, examples and the flags, the test-only ones
// apart, and is not an error for the process (main exits 0 on ErrHelp).
func TestRunHelp(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &out, &errb)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	help := errb.String()
	i := strings.Index(help, "For fault-injection tests only:")
	if !strings.Contains(help, "Examples:") || i < 0 || !strings.Contains(help, "--cluster-secret-file") {
		t.Fatalf("help text:\n%s", help)
	}
	if j := strings.Index(help, "--disk-stall-file"); j < i {
		t.Fatal("a test-only flag is listed with the others")
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{"0": 0, "123": 123, "64mb": 64 << 20, "64MB": 64 << 20, "1k": 1000, "1kb": 1024,
		"2g": 2e9, "2gb": 2 << 30, "5m": 5e6, "7b": 7}
	for in, want := range good {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "-1", "1.5mb", "1tb", "99999999999gb"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, accepted", in, got)
		}
	}
}

func TestParsePeers(t *testing.T) {
	got, err := parsePeers("a=127.0.0.1:1, b=127.0.0.1:2")
	if err != nil || len(got) != 2 || got[1].ID != "b" || got[1].RaftAddr != "127.0.0.1:2" {
		t.Fatalf("parsePeers = %+v, %v", got, err)
	}
	if _, err := parsePeers("a=x,a=y"); err == nil {
		t.Fatal("duplicate id accepted")
	}
}

// TestRunServes starts the whole program, talks to it, and stops it by
// cancelling its context (as SIGTERM does).
func TestRunServes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out, errb bytes.Buffer
	go func() { done <- run(ctx, []string{"--addr", addr}, &out, &errb) }()
	c := dialWhenUp(t, addr)
	defer c.Close()
	c.Write([]byte("PING\r\n"))
	buf := make([]byte, 7)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("PING: %q %v", buf[:n], err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// --notify-keyspace-events is in force once the node serves.
func TestRunNotifyFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out, errb bytes.Buffer
	go func() { done <- run(ctx, []string{"--addr", addr, "--notify-keyspace-events", "KEA"}, &out, &errb) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	c := dialWhenUp(t, addr)
	defer c.Close()
	c.Write([]byte("CONFIG GET notify-keyspace-events\r\n"))
	want := "*2\r\n$22\r\nnotify-keyspace-events\r\n$3\r\nAKE\r\n"
	buf := make([]byte, len(want))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
		t.Fatalf("CONFIG GET: %q %v", buf, err)
	}
	// Their own buffers: the node above still writes to out and errb.
	var out2, errb2 bytes.Buffer
	if err := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--notify-keyspace-events", "Z"}, &out2, &errb2); err == nil {
		t.Error("a bad --notify-keyspace-events was accepted")
	}
	// Only noeviction: a lock server evicts no lock.
	if err := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--maxmemory-policy", "allkeys-lru"}, &out2, &errb2); err == nil {
		t.Error("--maxmemory-policy allkeys-lru was accepted")
	}
}

// TestRunShutdownCommand: a client's SHUTDOWN ends run as SIGTERM does,
// with nil (exit status 0), and the client gets no reply.
func TestRunShutdownCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	done := make(chan error, 1)
	var out, errb lockedBuffer
	go func() { done <- run(context.Background(), []string{"--addr", addr}, &out, &errb) }()
	c := dialWhenUp(t, addr)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("SHUTDOWN NOSAVE\r\n"))
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Fatalf("SHUTDOWN: %q %v", got, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(errb.String(), "shutting down: SHUTDOWN from a client") {
		t.Fatalf("log:\n%s", errb.String())
	}
}

// dialWhenUp connects to addr once the node started by run listens there.
func dialWhenUp(t *testing.T, addr string) net.Conn {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("never listened: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The process's last word names deadbolt once: "deadbolt: deadbolt:
// --aclfile users.acl: ..." was printed for errors the library already
// prefixed.
func TestErrorLineOnePrefix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte("user bob on >pw ~* +nosuchcmd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), []string{"--addr", freeAddr(t), "--aclfile", path}, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("started with an ACL file in error")
	}
	if got := errorLine(err); !strings.HasPrefix(got, "deadbolt: --aclfile "+path+": ") {
		t.Fatalf("last word %q", got)
	}
	if got := errorLine(errors.New("cluster: x")); got != "deadbolt: cluster: x" {
		t.Fatalf("last word %q", got)
	}
}
