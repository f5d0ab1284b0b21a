// Package testredis starts a real redis-server for tests, so that
// deadbolt's replies can be compared with Redis's own.
package testredis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binary is where the tests expect redis-server; make deps installs it.
const Binary = "/usr/bin/redis-server"

const (
	startTimeout = 10 * time.Second
	maxAttempts  = 5
)

// Start runs a redis-server on 127.0.0.1 with a free port, without
// persistence, in a temporary directory, waits until it answers PING, and
// stops it when the test ends. It returns the server's address.
//
// Without redis-server the test is skipped, except under CI=true, where a
// missing dependency fails the test.
func Start(tb testing.TB) string {
	tb.Helper()
	addr, _ := startWith(tb, false)
	return addr
}

// StartWith is Start with more arguments, which override the defaults
// (such as --dir DIR --save "3600 1" for a server that persists).
func StartWith(tb testing.TB, args ...string) string {
	tb.Helper()
	addr, _ := startWith(tb, false, args...)
	return addr
}

// StartTLS is Start with a TLS port as well, configured by args (such as
// --tls-cert-file F --tls-key-file F --tls-ca-cert-file F). It returns the
// plain address and the TLS one.
func StartTLS(tb testing.TB, args ...string) (addr, tlsAddr string) {
	tb.Helper()
	return startWith(tb, true, args...)
}

func startWith(tb testing.TB, withTLS bool, args ...string) (string, string) {
	tb.Helper()
	bin := binary()
	if bin == "" {
		msg := "testredis: redis-server not found (looked for " + Binary + " and in $PATH); run make deps"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	var lastErr error
	for range maxAttempts {
		tlsAddr := ""
		extra := args
		if withTLS {
			port, err := freePort()
			if err != nil {
				lastErr = err
				continue
			}
			tlsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			extra = append([]string{"--tls-port", strconv.Itoa(port)}, args...)
		}
		addr, err := start(tb, bin, extra...)
		if err == nil {
			return addr, tlsAddr
		}
		lastErr = err
	}
	tb.Fatalf("testredis: %v", lastErr)
	return "", ""
}

func binary() string {
	if _, err := os.Stat(Binary); err == nil {
		return Binary
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	return ""
}

// start makes one attempt. The port is chosen by listening on port 0 and
// closing the listener, so another process may take it before Redis
// does; the caller retries then.
func start(tb testing.TB, bin string, extra ...string) (string, error) {
	return launch(tb, bin, func(port int, dir string) ([]string, error) {
		return append([]string{
			"--bind", "127.0.0.1",
			"--port", strconv.Itoa(port),
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
			"--dir", dir,
			"--logfile", "",
		}, extra...), nil
	})
}

// StartSentinel runs redis-server in Sentinel mode on 127.0.0.1 with a
// free port, monitoring master (an address) under the name masterName with
// a quorum of 1, and stops it when the test ends. It returns the
// Sentinel's address. A missing redis-server is handled as in Start.
func StartSentinel(tb testing.TB, masterName, master string) string {
	tb.Helper()
	bin := binary()
	if bin == "" {
		msg := "testredis: redis-server not found (looked for " + Binary + " and in $PATH); run make deps"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	host, mport, err := net.SplitHostPort(master)
	if err != nil {
		tb.Fatalf("testredis: master address %q: %v", master, err)
	}
	var lastErr error
	for range maxAttempts {
		addr, err := launch(tb, bin, func(port int, dir string) ([]string, error) {
			// Sentinel insists on a configuration file it may rewrite.
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsentinel monitor %s %s %s 1\n", port, dir, masterName, host, mport)
			if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
				return nil, err
			}
			return []string{conf, "--sentinel"}, nil
		})
		if err == nil {
			return addr
		}
		lastErr = err
	}
	tb.Fatalf("testredis: %v", lastErr)
	return ""
}

// launch starts bin with the arguments args returns for a free port and a
// temporary directory, and waits until it answers PING as that process.
func launch(tb testing.TB, bin string, args func(port int, dir string) ([]string, error)) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	dir := tb.TempDir()
	argv, err := args(port, dir)
	if err != nil {
		return "", err
	}
	out := &syncWriter{buf: new(bytes.Buffer)}
	cmd := exec.Command(bin, argv...)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case err := <-exited:
			exited <- err // for a later stop
			return "", fmt.Errorf("redis-server on port %d exited (%v): %s", port, err, out.String())
		default:
		}
		if ping(addr, cmd.Process.Pid) == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("redis-server on %s did not answer PING within %v: %s", addr, startTimeout, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Cleanup(stop)
	return addr, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	return port, nil
}

// ping connects, expects +PONG, and checks with INFO that the server
// answering is the process started, not another one that took the port
// first. It fails while Redis is still starting.
func ping(addr string, pid int) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return err
	}
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return errors.New("unexpected reply to PING: " + strconv.Quote(line))
	}
	line, err = rd.ReadString('\n')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	if err != nil || !strings.HasPrefix(line, "$") {
		return errors.New("unexpected reply to INFO: " + strconv.Quote(line))
	}
	info := make([]byte, n+2)
	if _, err := io.ReadFull(rd, info); err != nil {
		return err
	}
	if !bytes.Contains(info, []byte("\r\nprocess_id:"+strconv.Itoa(pid)+"\r\n")) {
		return fmt.Errorf("another server answers on %s", addr)
	}
	return nil
}

// syncWriter collects the server's output; exec writes to it from its own
// goroutine while start may read it.
type syncWriter struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
