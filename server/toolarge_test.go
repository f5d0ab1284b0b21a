package server

import (
	"strings"
	"testing"
)

// With MaxArgBytes set (a cluster node), a request whose argument is
// larger is read and refused with the max-entry-bytes error, and the
// connection goes on: with the event loop and with a goroutine per
// connection. Inside MULTI it fails the transaction.
func TestArgTooLargeRefused(t *testing.T) {
	const limit = 64 << 10
	for _, noLoop := range []bool{false, true} {
		s := newTestServer(t, func(c *Config) { c.MaxArgBytes = ArgLimit(limit) })
		s.mu.Lock()
		s.noLoop = noLoop
		s.mu.Unlock()
		c := dial(t, s.addr)
		const want = "ERR write refused: an argument of 1048576 bytes makes its log entry larger than max-entry-bytes 65536; store big values elsewhere, or split them"
		c.mustErr(want, "set", "k", strings.Repeat("v", 1<<20))
		c.must(status("PONG"), "ping")
		c.must(status("OK"), "set", "k", strings.Repeat("v", limit))
		c.must(status("OK"), "multi")
		c.must(status("QUEUED"), "set", "a", "1")
		c.mustErr(want, "set", "b", strings.Repeat("v", 1<<20))
		c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
		c.must("$-1\r\n", "get", "a")
		// Pipelined: the replies come in order.
		c.write(encode("set", "x", strings.Repeat("v", 1<<20)) + encode("incr", "n") + encode("get", "x"))
		if got := c.readRaw(); got != "-"+want+"\r\n" {
			t.Fatalf("noLoop=%v: pipelined big SET: %q", noLoop, got)
		}
		if got := c.readRaw(); got != integer(1) {
			t.Fatalf("noLoop=%v: pipelined INCR: %q", noLoop, got)
		}
		if got := c.readRaw(); got != "$-1\r\n" {
			t.Fatalf("noLoop=%v: pipelined GET: %q", noLoop, got)
		}
		if (loopOf(s) == nil) != noLoop {
			t.Fatalf("noLoop=%v: event loop %v", noLoop, loopOf(s))
		}
	}
}
