//go:build linux

package server

import (
	"bytes"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testcerts"
)

func reviewLoad(t *testing.T, s *testServer, n int) string {
	c := dial(t, s.addr)
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
	return want.String()
}

// A RESP3 subscriber runs KEYS * + PING + GET, reading slowly, while
// messages are published to it: each reply whole, in order, messages
// between replies, all of them.
func TestLongReplyKeysPiecesWithPushesSlowReader(t *testing.T) {
	s := newTestServer(t)
	want := reviewLoad(t, s, 40_000)
	a := dial(t, s.addr)
	// default buffers: the reply is larger than the socket takes
	a.send("HELLO", "3")
	a.readRaw()
	a.send("SUBSCRIBE", "ch")
	a.readRaw()
	b := dial(t, s.addr)
	for round := 0; round < 3; round++ {
		a.write(encode("KEYS", "*") + encode("PING") + encode("GET", "nosuch"))
		const msgs = 300
		for i := 0; i < msgs; i++ {
			b.send("PUBLISH", "ch", "m"+strconv.Itoa(i))
			b.readRaw()
			if i%50 == 0 {
				time.Sleep(2 * time.Millisecond)
			}
		}
		got := []string{}
		next := 0
		for len(got) < 3 || next < msgs {
			r := a.readRaw()
			if strings.HasPrefix(r, ">3\r\n$7\r\nmessage\r\n") {
				m := "m" + strconv.Itoa(next)
				if !strings.HasSuffix(r, "$"+strconv.Itoa(len(m))+"\r\n"+m+"\r\n") {
					t.Fatalf("round %d: message %d out of order: %q", round, next, r)
				}
				next++
				continue
			}
			got = append(got, r)
			time.Sleep(time.Millisecond / 10)
		}
		if got[0] != want {
			t.Fatalf("round %d: KEYS reply differs (%d bytes, want %d)", round, len(got[0]), len(want))
		}
		if got[1] != "+PONG\r\n" || got[2] != "_\r\n" {
			t.Fatalf("round %d: then %q", round, got[1:])
		}
	}
}

// KEYS * then QUIT in one write: the whole reply, +OK, then EOF.
func TestLongReplyKeysThenQuit(t *testing.T) {
	s := newTestServer(t)
	want := reviewLoad(t, s, 40_000)
	for _, proto := range []string{"2", "3"} {
		a := dial(t, s.addr)
		// default buffers: the reply is larger than the socket takes
		a.send("HELLO", proto)
		a.readRaw()
		a.write(encode("KEYS", "*") + encode("PING") + encode("QUIT"))
		time.Sleep(200 * time.Millisecond)
		if got := a.readRaw(); got != want {
			t.Fatalf("RESP%s: KEYS %d bytes, want %d", proto, len(got), len(want))
		}
		if got := a.readRaw(); got != "+PONG\r\n" {
			t.Fatalf("PING: %q", got)
		}
		if got := a.readRaw(); got != "+OK\r\n" {
			t.Fatalf("QUIT: %q", got)
		}
		a.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := a.rd.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("after QUIT: %d %v", n, err)
		}
	}
}

// Half-close after KEYS (redis-cli < file, nc -q): everything is
// written before the server closes.
func TestLongReplyKeysThenEOF(t *testing.T) {
	s := newTestServer(t)
	want := reviewLoad(t, s, 40_000)
	a := dial(t, s.addr)
	// default buffers: the reply is larger than the socket takes
	a.write(encode("KEYS", "*") + encode("PING") + encode("KEYS", "*") + encode("PING"))
	a.nc.(*net.TCPConn).CloseWrite()
	time.Sleep(300 * time.Millisecond)
	for i := 0; i < 2; i++ {
		if got := a.readRaw(); got != want {
			t.Fatalf("KEYS %d: %d bytes, want %d", i, len(got), len(want))
		}
		if got := a.readRaw(); got != "+PONG\r\n" {
			t.Fatalf("PING: %q", got)
		}
	}
}

// The client goes away mid-reply; the server is fine after.
func TestLongReplyKeysClientGone(t *testing.T) {
	s := newTestServer(t)
	reviewLoad(t, s, 40_000)
	for i := 0; i < 5; i++ {
		a := dial(t, s.addr)
		// default buffers: the reply is larger than the socket takes
		a.write(encode("KEYS", "*") + encode("PING"))
		buf := make([]byte, 100)
		io.ReadFull(a.rd, buf)
		a.nc.Close()
	}
	b := dial(t, s.addr)
	b.send("PING")
	if got := b.readRaw(); got != "+PONG\r\n" {
		t.Fatalf("%q", got)
	}
}

// CLIENT LIST's omem for a client that has not read its KEYS reply.
func TestLongReplyOmemCountsPieces(t *testing.T) {
	s := newTestServer(t)
	want := reviewLoad(t, s, 40_000)
	a := dial(t, s.addr)
	a.send("CLIENT", "SETNAME", "slow")
	a.readRaw()
	a.write(encode("KEYS", "*"))
	time.Sleep(500 * time.Millisecond)
	b := dial(t, s.addr)
	b.send("CLIENT", "LIST")
	list := b.readRaw()
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "name=slow") {
			i := strings.Index(line, " omem=")
			f := strings.Fields(line[i:])[0]
			n, _ := strconv.Atoi(strings.TrimPrefix(f, "omem="))
			t.Logf("reply %d bytes; %s", len(want), f)
			if n < len(want)/2 {
				t.Errorf("omem %d for %d bytes unread (socket buffers take a few MB at most)", n, len(want))
			}
		}
	}
	if got := a.readRaw(); got != want {
		t.Fatal("KEYS differs")
	}
}

// The same pipeline over TLS (loop) and over a goroutine connection.
func TestLongReplyKeysTLSAndNoLoop(t *testing.T) {
	certs := testcerts.Make(t)
	ts := newTLSServer(t, certs, "no")
	want := ""
	{
		cfg := certs.ClientConfig(t, "", "")
		c, err := dialTLS(t, ts.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := 40_000
		var load strings.Builder
		for i := 0; i < n; i++ {
			load.WriteString(encode("SET", "key:"+strconv.Itoa(i)+":"+strings.Repeat("k", 300), "v"))
		}
		c.write(load.String())
		for i := 0; i < n; i++ {
			c.readRaw()
		}
		for _, proto := range []string{"2", "3"} {
			c.send("HELLO", proto)
			c.readRaw()
			c.write(encode("KEYS", "*") + encode("PING"))
			got := c.readRaw()
			if want == "" {
				want = got
			}
			if got != want || !strings.HasPrefix(got, "*40000\r\n") {
				t.Fatalf("TLS RESP%s: %d bytes", proto, len(got))
			}
			if p := c.readRaw(); p != "+PONG\r\n" {
				t.Fatalf("TLS: %q", p)
			}
		}
	}
	s := newTestServer(t)
	s.mu.Lock()
	s.noLoop = true
	s.mu.Unlock()
	w2 := reviewLoad(t, s, 40_000)
	if w2 != want {
		t.Fatalf("TLS reply differs from the expected bytes")
	}
	c := dial(t, s.addr)
	c.write(encode("KEYS", "*") + encode("PING"))
	if got := c.readRaw(); got != want {
		t.Fatalf("noLoop: %d bytes", len(got))
	}
	if p := c.readRaw(); p != "+PONG\r\n" {
		t.Fatalf("noLoop: %q", p)
	}
}
