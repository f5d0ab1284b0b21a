package server

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestShutdownArgs(t *testing.T) {
	for _, tc := range []struct {
		args  string
		abort bool
		err   string
	}{
		{"shutdown", false, ""},
		{"shutdown NOSAVE", false, ""},
		{"shutdown save now force", false, ""},
		{"shutdown Now nOW force FORCE", false, ""},
		{"shutdown save save", false, ""},
		{"shutdown abort", true, ""},
		{"shutdown ABORT abort", true, ""},
		{"shutdown bogus", false, msgSyntaxError},
		{"shutdown abort bogus", false, msgSyntaxError},
		{"shutdown save nosave", false, msgSyntaxError},
		{"shutdown nosave now save", false, msgSyntaxError},
		{"shutdown abort now", false, msgSyntaxError},
		{"shutdown force abort", false, msgSyntaxError},
		{"shutdown abort save", false, msgSyntaxError},
	} {
		var args [][]byte
		for _, a := range strings.Fields(tc.args) {
			args = append(args, []byte(a))
		}
		abort, err := shutdownArgs(args)
		if abort != tc.abort || err != tc.err {
			t.Errorf("%s: abort %v, error %q; want %v, %q", tc.args, abort, err, tc.abort, tc.err)
		}
	}
}

// Without Config.Shutdown (an embedded node) SHUTDOWN is refused after its
// arguments are checked, and the node goes on serving.
func TestShutdownWithoutHook(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.mustErr(msgShutdownEmbedded, "shutdown")
	c.mustErr(msgShutdownEmbedded, "shutdown", "nosave", "now", "force")
	c.mustErr("ERR syntax error", "shutdown", "save", "nosave")
	c.mustErr("ERR No shutdown in progress.", "shutdown", "abort")
	c.must(status("PONG"), "ping")
}

// With Config.Shutdown, SHUTDOWN calls it once, and the client gets
// the replies to what it sent before and then nothing: no reply, none to
// the requests after it, no published message; its connection closes when
// the server does. Other clients are served until then. Both with the
// event loop and with a goroutine per connection.
func TestShutdownHook(t *testing.T) {
	for _, noLoop := range []bool{false, true} {
		var calls atomic.Int32
		s := newTestServer(t, func(c *Config) { c.Shutdown = func() { calls.Add(1) } })
		s.mu.Lock()
		s.noLoop = noLoop
		s.mu.Unlock()
		testShutdownHalts(t, s, &calls)
	}
}

func testShutdownHalts(t *testing.T, s *testServer, calls *atomic.Int32) {
	t.Helper()
	other := dial(t, s.addr)
	other.must(status("PONG"), "ping")
	sub := dial(t, s.addr)
	sub.doRaw("hello", "3")
	sub.must(">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "subscribe", "ch")

	c := dial(t, s.addr)
	c.write(encode("ping") + encode("shutdown", "nosave") + encode("ping"))
	if got := c.readRaw(); got != status("PONG") {
		t.Fatalf("the PING before SHUTDOWN: %q", got)
	}
	waitFor(t, "the Shutdown hook", func() bool { return calls.Load() == 1 })
	// A RESP3 client may send SHUTDOWN while subscribed.
	sub.send("shutdown")
	if got, err := sub.tryRead(200 * time.Millisecond); err == nil {
		t.Fatalf("a second SHUTDOWN got a reply: %q", got)
	}
	other.must(integer(0), "publish", "ch", "lost") // the halted subscriber does not count
	if got, err := c.tryRead(200 * time.Millisecond); err == nil {
		t.Fatalf("SHUTDOWN's connection got %q", got)
	}
	c.send("ping") // read and dropped
	other.must(status("PONG"), "ping")
	if n := calls.Load(); n != 1 {
		t.Fatalf("Shutdown hook called %d times", n)
	}
	s.Close()
	for name, cl := range map[string]*client{"shutdown": c, "subscribed": sub} {
		if rest := cl.expectClosed(); rest != "" {
			t.Errorf("%s connection: %q before EOF", name, rest)
		}
	}
}

// SAVE and SHUTDOWN are Redis's no_multi commands: refused while queueing
// (the transaction then fails at EXEC), whatever their arguments.
func TestShutdownInsideMulti(t *testing.T) {
	var calls atomic.Int32
	s := newTestServer(t, func(c *Config) { c.Shutdown = func() { calls.Add(1) } })
	c := dial(t, s.addr)
	c.must(okReply, "multi")
	c.mustErr("ERR Command not allowed inside a transaction", "shutdown")
	c.mustErr("ERR Command not allowed inside a transaction", "shutdown", "bogus")
	c.mustErr("ERR Command not allowed inside a transaction", "save")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
	c.mustErr("ERR This Redis command is not allowed from script script: 6b343dedb660366b76b7ac2a141a4454b0ec68fb, on @user_script:1.",
		"eval", "return redis.call('shutdown', 'nosave')", "0")
	c.mustErr("ERR This Redis command is not allowed from script", "eval", "return redis.pcall('shutdown')", "0")
	if n := calls.Load(); n != 0 {
		t.Fatalf("Shutdown hook called %d times", n)
	}
}
