//go:build linux

package server

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// TestEncodedReplyQueuedInPieces: an encoded long reply (resp.Encoded,
// a walked KEYS's) is queued on an event-loop connection as its pieces,
// not copied into one buffer, behind the output before it and ahead of
// the output after it; the loop takes one piece at a time, each once the
// previous one has gone to the socket. A TLS connection (no pieces) gets
// the same bytes concatenated.
func TestEncodedReplyQueuedInPieces(t *testing.T) {
	pieces := [][]byte{[]byte("*3\r\n$1\r\na\r\n"), []byte("$1\r\nb\r\n"), []byte("$1\r\nc\r\n")}
	l := &eventLoop{}
	c := &conn{proto: 2, lc: loopConn{lp: l}}
	c.reply(resp.OK)
	c.reply(resp.NewEncoded(pieces))
	c.reply(resp.StatusReply("PONG"))
	if len(c.pieces) != 4 || string(c.pieces[0]) != "+OK\r\n" || string(c.out) != "+PONG\r\n" {
		t.Fatalf("queued pieces %q, then out %q", c.pieces, c.out)
	}
	for i, p := range pieces {
		if &c.pieces[i+1][0] != &p[0] {
			t.Fatalf("piece %d was copied", i)
		}
	}
	if want := len("+OK\r\n") + len("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"); c.outLen() != want+len("+PONG\r\n") {
		t.Fatalf("outLen %d", c.outLen())
	}
	var written []byte
	piece := l.takeOutput(c) // "+OK": out before the pieces
	for round := 0; len(c.lc.wbuf) > c.lc.woff; round++ {
		if round >= 1 && round <= len(pieces) && (!piece || &c.lc.wbuf[0] != &pieces[round-1][0]) {
			t.Fatalf("round %d writes %q, not piece %d", round, c.lc.wbuf, round-1)
		}
		// The socket takes part of wbuf, then is full; when it is
		// writable again, write takes output anew: wbuf stays, and the
		// pieces after it still wait (after the last piece, out may
		// join it).
		half := c.lc.woff + (len(c.lc.wbuf)-c.lc.woff)/2
		written = append(written, c.lc.wbuf[c.lc.woff:half]...)
		c.lc.woff = half
		before := &c.lc.wbuf[0]
		if again := l.takeOutput(c); again != (round < len(pieces)) || again && &c.lc.wbuf[0] != before {
			t.Fatalf("round %d: taking output again with wbuf half written: reports %v, wbuf %q", round, again, c.lc.wbuf)
		}
		written = append(written, c.lc.wbuf[c.lc.woff:]...)
		c.lc.woff = len(c.lc.wbuf)
		piece = l.takeOutput(c)
	}
	if want := "+OK\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n+PONG\r\n"; string(written) != want {
		t.Fatalf("wrote %q, want %q", written, want)
	}
	if c.outLen() != 0 || c.pieces != nil {
		t.Fatalf("left %d bytes, pieces %q", c.outLen(), c.pieces)
	}

	plain := &conn{proto: 2} // no loop: one buffer, the same bytes
	plain.reply(resp.NewEncoded(pieces))
	if string(plain.out) != "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n" || plain.pieces != nil {
		t.Fatalf("without a loop: out %q, pieces %q", plain.out, plain.pieces)
	}
}

// TestLongKeysReplyBytes: KEYS * over a database walked in steps, sent in
// one write with a PING after it, answers over RESP2 and RESP3 exactly the
// bytes of the sorted keys' array, then PONG, as a KEYS in one step would.
// The reply (12 MB) is more than the socket takes at once: the loop goes
// on with the next piece when the socket is writable again.
func TestLongKeysReplyBytes(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	const n = 40_000 // above fsm's walk threshold
	keys := make([]string, n)
	var load strings.Builder
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i) + ":" + strings.Repeat("k", 300)
		load.WriteString(encode("SET", keys[i], "v"))
	}
	c.write(load.String())
	for range keys {
		if got := c.readRaw(); got != "+OK\r\n" {
			t.Fatalf("SET: %q", got)
		}
	}
	slices.Sort(keys)
	var want bytes.Buffer
	want.WriteString("*" + strconv.Itoa(n) + "\r\n")
	for _, k := range keys {
		want.WriteString("$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n")
	}
	for _, proto := range []string{"2", "3"} {
		c.send("HELLO", proto)
		c.readRaw()
		c.write(encode("KEYS", "*") + encode("PING"))
		if got := c.readRaw(); got != want.String() {
			t.Fatalf("RESP%s: KEYS * answered %d bytes, want %d", proto, len(got), want.Len())
		}
		if got := c.readRaw(); got != "+PONG\r\n" {
			t.Fatalf("RESP%s: then %q, want PONG", proto, got)
		}
	}
}
