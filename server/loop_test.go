//go:build linux

package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The event loop serves a single node's connections.
func TestEventLoopServesLocal(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(status("PONG"), "ping")
	if loopOf(s) == nil {
		t.Fatal("no event loop for a Local backend")
	}
}

func loopOf(s *testServer) *eventLoop {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loop
}

// Tasks posted from other goroutines are never lost: new connections
// (posted by the accepting goroutine) and commands that end on a
// goroutine of their own (DEBUG SLEEP) keep arriving while the loop is
// busy with other clients' traffic and pub/sub messages. A lost wake-up
// leaves a client waiting forever; here it fails the read deadline.
func TestEventLoopWakeups(t *testing.T) {
	s := newTestServer(t)
	sub := dial(t, s.addr)
	sub.must(arr(bulk("subscribe"), bulk("ch"), integer(1)), "subscribe", "ch")

	const workers, rounds = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				c := dial(t, s.addr)
				key := fmt.Sprintf("k%d", w)
				steps := [][2]string{
					{encode("set", key, "v"), "+OK\r\n"},
					{encode("debug", "sleep", "0"), "+OK\r\n"},
					{encode("publish", "ch", key), ":1\r\n"},
					{encode("get", key), "$1\r\nv\r\n"},
				}
				for _, st := range steps {
					if _, err := c.nc.Write([]byte(st[0])); err != nil {
						errs <- err
						return
					}
					got, err := c.tryRead(5 * time.Second)
					if err != nil || got != st[1] {
						errs <- fmt.Errorf("worker %d round %d %q: got %q, %v", w, r, st[0], got, err)
						return
					}
				}
				c.nc.Close()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 0; i < workers*rounds; i++ {
		got, err := sub.tryRead(5 * time.Second)
		if err != nil || !strings.HasPrefix(got, "*3\r\n$7\r\nmessage\r\n") {
			t.Fatalf("message %d: %q, %v", i, got, err)
		}
	}
}

// A reply larger than the socket takes at once is written in pieces as
// the client reads, while other clients go on being served.
func TestEventLoopLargeReply(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	big := strings.Repeat("x", 8<<20)
	c.must(status("OK"), "set", "big", big)
	c.send("get", "big")
	other := dial(t, s.addr)
	other.must(status("PONG"), "ping") // not stuck behind the big reply
	got := c.readRaw()
	if want := bulk(big); got != want {
		t.Fatalf("reply of %d bytes, want %d", len(got), len(want))
	}
	c.must(status("PONG"), "ping")
}

// A task posted while the loop is collecting the previous ones, and the
// next task after it, both wake the loop.
func TestEventLoopPostDuringDrain(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(status("PONG"), "ping")
	lp := loopOf(s)

	var once sync.Once
	testHookDrained = func() {
		once.Do(func() {
			// Another goroutine's post lands in the window.
			done := make(chan struct{})
			go func() { lp.post(loopTask{kind: taskWrite, c: c.serverConn(t, s)}); close(done) }()
			<-done
		})
	}
	t.Cleanup(func() { testHookDrained = nil })
	// DEBUG SLEEP ends on a goroutine of its own, which posts to the loop.
	for i := 0; i < 3; i++ {
		c.send("debug", "sleep", "0")
		if got, err := c.tryRead(3 * time.Second); err != nil || got != status("OK") {
			t.Fatalf("DEBUG SLEEP %d: %q, %v (a lost wake-up)", i, got, err)
		}
	}
}

// serverConn is the server's side of the client's connection.
func (c *client) serverConn(t *testing.T, s *testServer) *conn {
	local := c.nc.LocalAddr().String()
	for _, o := range s.clients() {
		if o.addr == local {
			return o
		}
	}
	t.Fatalf("no server connection for %s", local)
	return nil
}
