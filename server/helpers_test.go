package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/deadbolt/deadbolt/acl"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
	"github.com/redis/go-redis/v9"
)

// testServer is a server on a free port with an in-memory single-node
// backend. (The root package's RunT cannot be used here: it imports
// server.)
type testServer struct {
	*Server
	addr  string
	local *cluster.Local
}

// newTestServer starts a server for one test and stops it when the test
// ends. opts adjust its Config; wrap, if given, replaces the backend
// (to add optional interfaces such as Waiter).
func newTestServer(tb testing.TB, opts ...func(*Config)) *testServer {
	tb.Helper()
	return newTestServerWith(tb, nil, opts...)
}

func newTestServerWith(tb testing.TB, wrap func(*cluster.Local) Backend, opts ...func(*Config)) *testServer {
	tb.Helper()
	cfg := Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(newTestLog(tb), nil))}
	for _, o := range opts {
		o(&cfg)
	}
	// The state machine holds the users, the password among them; it asks
	// the hub whether anyone listens, as deadbolt.go wires it.
	hub := NewHub()
	f := fsm.New(fsm.Options{Users: acl.NewUsers().WithDefaultPassword(cfg.RequirePass), Listened: hub.Listened})
	local := cluster.NewLocal(f, &cluster.ManualClock{}, hub)
	var backend Backend = local
	if wrap != nil {
		backend = wrap(local)
	}
	srv := New(cfg, backend, hub)
	if err := srv.Listen(); err != nil {
		tb.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
		local.Close()
		f.Close()
	})
	return &testServer{Server: srv, addr: srv.Addr().String(), local: local}
}

// testLog routes the server's log to the test until the test ends.
type testLog struct {
	mu   sync.Mutex
	tb   testing.TB
	done bool
}

func newTestLog(tb testing.TB) *testLog {
	l := &testLog{tb: tb}
	tb.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.tb.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// client is a raw RESP2 client for byte-exact checks.
type client struct {
	tb testing.TB
	nc net.Conn
	rd *bufio.Reader
}

func dial(tb testing.TB, addr string) *client {
	tb.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() { nc.Close() })
	return &client{tb: tb, nc: nc, rd: bufio.NewReader(nc)}
}

// encode is a request as a RESP multibulk.
func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func (c *client) write(raw string) {
	c.tb.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, raw); err != nil {
		c.tb.Fatalf("write: %v", err)
	}
}

func (c *client) send(args ...string) { c.tb.Helper(); c.write(encode(args...)) }

// readRaw reads one whole reply and returns its bytes.
func (c *client) readRaw() string {
	c.tb.Helper()
	s, err := c.tryRead(10 * time.Second)
	if err != nil {
		c.tb.Fatalf("read: %v", err)
	}
	return s
}

func (c *client) tryRead(d time.Duration) (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	var buf []byte
	err := readReply(c.rd, &buf)
	return string(buf), err
}

func readReply(rd *bufio.Reader, buf *[]byte) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	*buf = append(*buf, line...)
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("bad reply line %q", line)
	}
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '*', '!', '=', '~', '%', '>':
		n, err := strconv.Atoi(line[1 : len(line)-2])
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if line[0] == '%' {
			n *= 2
		}
		if line[0] == '$' || line[0] == '!' || line[0] == '=' {
			if n < 0 {
				return nil
			}
			b := make([]byte, n+2)
			if _, err := io.ReadFull(rd, b); err != nil {
				return err
			}
			*buf = append(*buf, b...)
			return nil
		}
		for range max(n, 0) {
			if err := readReply(rd, buf); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("bad reply type in %q", line)
}

// read reads one reply and decodes it.
func (c *client) read() resp.Reply {
	c.tb.Helper()
	raw := c.readRaw()
	r, n, ok := resp.Parse([]byte(raw))
	if !ok || n != len(raw) {
		c.tb.Fatalf("cannot parse reply %q", raw)
	}
	return r
}

func (c *client) do(args ...string) resp.Reply {
	c.tb.Helper()
	c.send(args...)
	return c.read()
}

func (c *client) doRaw(args ...string) string {
	c.tb.Helper()
	c.send(args...)
	return c.readRaw()
}

// must sends a command and checks its raw reply.
func (c *client) must(want string, args ...string) {
	c.tb.Helper()
	if got := c.doRaw(args...); got != want {
		c.tb.Errorf("%q:\n got %q\nwant %q", args, got, want)
	}
}

// mustErr sends a command and checks that it fails with msg.
func (c *client) mustErr(msg string, args ...string) {
	c.tb.Helper()
	c.must("-"+msg+"\r\n", args...)
}

// expectClosed checks that the server closed the connection (after any
// replies still buffered, which are returned).
func (c *client) expectClosed() string {
	c.tb.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(c.rd)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.tb.Fatalf("connection still open; read %q", rest)
		}
	}
	return string(rest)
}

// RESP2 encoders for expected replies.
func status(s string) string { return "+" + s + "\r\n" }
func integer(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func bulk(s string) string   { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func arr(elems ...string) string {
	return "*" + strconv.Itoa(len(elems)) + "\r\n" + strings.Join(elems, "")
}

const (
	okReply  = "+OK\r\n"
	nilReply = "$-1\r\n"
)

// bulks is an array of bulk strings.
func bulks(items ...string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = bulk(s)
	}
	return arr(out...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// goRedis returns a go-redis client for the server, closed with the test.
func goRedis(tb testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	for _, f := range opts {
		f(o)
	}
	rc := redis.NewClient(o)
	tb.Cleanup(func() { rc.Close() })
	return rc
}

var ctx = context.Background()

// infoField returns a field's value from an INFO reply.
func infoField(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// withDebug starts the server with enable-debug-command yes, for tests
// that use DEBUG SLEEP (Redis 7.0, and deadbolt, refuse DEBUG by default).
func withDebug(c *Config) {
	if c.ConfigParams == nil {
		c.ConfigParams = map[string]string{}
	}
	c.ConfigParams["enable-debug-command"] = "yes"
}
