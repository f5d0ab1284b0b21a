//go:build linux

package server

import (
	"fmt"
	"io"
	"net"
	"strconv"
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
	s := newTestServer(t, withDebug)
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
// next task after it, both wake the loop, whether it waits in epoll_wait
// (the eventfd) or in the runtime's poller (the read deadline).
func TestEventLoopPostDuringDrain(t *testing.T) {
	for _, mode := range []int32{waitPoller, waitBlocking} {
		t.Run(fmt.Sprintf("mode=%d", mode), func(t *testing.T) {
			// Registered first, so it runs after the server's cleanup has
			// stopped the loop that reads the hook.
			t.Cleanup(func() { testHookDrained = nil })
			testLoopWait.Store(mode)
			t.Cleanup(func() { testLoopWait.Store(0) })
			s := newTestServer(t, withDebug)
			c := dial(t, s.addr)
			c.must(status("PONG"), "ping")
			testLoopWait.Store(0)
			lp := loopOf(s)
			if got, want := lp.epoll != nil, mode == waitPoller; got != want {
				t.Fatalf("loop in the poller: %v, want %v", got, want)
			}

			var once sync.Once
			testHookDrained = func() {
				once.Do(func() {
					// Another goroutine's post lands in the window.
					done := make(chan struct{})
					go func() { lp.post(loopTask{kind: taskWrite, c: c.serverConn(t, s)}); close(done) }()
					<-done
				})
			}
			// DEBUG SLEEP ends on a goroutine of its own, which posts to
			// the loop.
			for i := 0; i < 3; i++ {
				c.send("debug", "sleep", "0")
				if got, err := c.tryRead(3 * time.Second); err != nil || got != status("OK") {
					t.Fatalf("DEBUG SLEEP %d: %q, %v (a lost wake-up)", i, got, err)
				}
			}
		})
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

// halfCloseReplies sends raw, shuts down the sending side, and returns
// everything the server answers before it closes.
func halfCloseReplies(t *testing.T, s *testServer, raw string, pause time.Duration) string {
	t.Helper()
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	nc.(*net.TCPConn).CloseWrite()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

// A client that shuts down its sending side still gets the replies to
// what it sent, as with a goroutine per connection: a command running on
// its own goroutine (DEBUG SLEEP), and a pipeline whose replies are more
// than the socket takes at once.
func TestEventLoopHalfClose(t *testing.T) {
	for _, noLoop := range []bool{false, true} {
		s := newTestServer(t, withDebug)
		s.mu.Lock()
		s.noLoop = noLoop
		s.mu.Unlock()
		if got := halfCloseReplies(t, s, encode("debug", "sleep", "0.2"), 50*time.Millisecond); got != status("OK") {
			t.Fatalf("noLoop=%v: DEBUG SLEEP then EOF: %q", noLoop, got)
		}
		c := dial(t, s.addr)
		c.must(status("OK"), "set", "big", strings.Repeat("x", 1<<20))
		got := halfCloseReplies(t, s, strings.Repeat(encode("get", "big"), 20), 100*time.Millisecond)
		if n := strings.Count(got, "$1048576\r\n"); n != 20 {
			t.Fatalf("noLoop=%v: pipeline then EOF: %d of 20 replies", noLoop, n)
		}
		if (loopOf(s) == nil) != noLoop {
			t.Fatalf("noLoop=%v: event loop %v", noLoop, loopOf(s))
		}
	}
}

// A client that pipelines requests and never reads the replies stops
// being served once about a megabyte waits for it, instead of making the
// server hold every reply; it is served again as it reads.
func TestEventLoopBackpressure(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(status("OK"), "set", "big", strings.Repeat("x", 256<<10))
	id := strings.TrimPrefix(strings.TrimSuffix(c.doRaw("client", "id"), "\r\n"), ":")
	const n = 400 // 100 MiB of replies
	go c.nc.Write([]byte(strings.Repeat(encode("get", "big"), n)))
	time.Sleep(300 * time.Millisecond)
	o := dial(t, s.addr)
	list := o.do("client", "list").String()
	var omem int
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, "id="+id+" ") {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "omem="); ok {
					omem, _ = strconv.Atoi(v)
				}
			}
		}
	}
	if omem == 0 || omem > 8<<20 {
		t.Fatalf("output waiting for a client that does not read: %d bytes (want some, at most 8 MiB)", omem)
	}
	for i := 0; i < n; i++ {
		if got := c.readRaw(); len(got) != 256<<10+len("$262144\r\n\r\n") {
			t.Fatalf("reply %d: %d bytes", i, len(got))
		}
	}
}

// Close returns while a connection waits in DEBUG SLEEP.
func TestEventLoopCloseWhileBusy(t *testing.T) {
	s := newTestServer(t, withDebug)
	c := dial(t, s.addr)
	c.must(status("PONG"), "ping")
	c.send("debug", "sleep", "100")
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs while a command sleeps")
	}
}

// A connection killed before the loop registered it is never registered:
// its descriptor number may belong to another socket by then.
func TestEventLoopKillBeforeAdd(t *testing.T) {
	s := newTestServer(t)
	first := dial(t, s.addr)
	first.must(status("PONG"), "ping")
	lp := loopOf(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	l2, fd := s.eventLoopLocked(nc)
	c := newConn(s.Server, nc, s.nextID.Add(1), l2, fd)
	s.conns[c.id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	c.abort()                              // the kill is handled first
	lp.post(loopTask{kind: taskAdd, c: c}) // then a late add
	registered := make(chan bool)
	lp.post(loopTask{kind: taskCall, fn: func() { registered <- lp.conns[int32(fd)] == c }})
	if <-registered {
		t.Fatalf("the loop registered killed connection %d under fd %d", c.id, fd)
	}
}

// An idle loop waits in the Go runtime's poller (a cluster node's) or
// blocks in epoll_wait (a single node's, or one that could not register
// in the poller); both serve the same: replies, wake-ups for posted tasks
// (a new connection, a DEBUG SLEEP's end, a pub/sub message from another
// connection).
func TestEventLoopWaits(t *testing.T) {
	for _, mode := range []int32{0, waitPoller, waitBlocking} {
		t.Run(fmt.Sprintf("mode=%d", mode), func(t *testing.T) {
			testLoopWait.Store(mode)
			t.Cleanup(func() { testLoopWait.Store(0) })
			s := newTestServer(t, withDebug)
			sub := dial(t, s.addr) // the first connection starts the loop
			sub.must(arr(bulk("subscribe"), bulk("ch"), integer(1)), "subscribe", "ch")
			testLoopWait.Store(0)
			l := loopOf(s)
			if l == nil {
				t.Fatal("no event loop")
			}
			if got, want := l.epoll != nil, mode == waitPoller; got != want {
				t.Fatalf("loop in the poller: %v, want %v", got, want)
			}
			for i := 0; i < 20; i++ {
				time.Sleep(time.Millisecond) // let the loop go idle between rounds
				c := dial(t, s.addr)
				c.must(status("OK"), "set", "k", strconv.Itoa(i))
				c.must(status("OK"), "debug", "sleep", "0")
				c.must(integer(1), "publish", "ch", strconv.Itoa(i))
				if got, want := sub.readRaw(), arr(bulk("message"), bulk("ch"), bulk(strconv.Itoa(i))); got != want {
					t.Fatalf("subscriber got %q, want %q", got, want)
				}
				c.must(bulk(strconv.Itoa(i)), "get", "k")
			}
		})
	}
}

// TestEventLoopWriteBudget: a reply of many megabytes to a client that
// reads it as fast as it comes is written at most writeBudget bytes per
// pass of the loop, which serves the other clients in between: a value's
// reply (one buffer) and KEYS's over a large database (encoded in pieces).
// The replies still arrive whole, and in order with what follows them.
func TestEventLoopWriteBudget(t *testing.T) {
	var mu sync.Mutex
	most, calls := 0, 0
	testHookWrite = func(written int) {
		mu.Lock()
		most = max(most, written)
		calls++
		mu.Unlock()
	}
	t.Cleanup(func() { testHookWrite = nil })
	s := newTestServer(t)
	c := dial(t, s.addr)
	big := strings.Repeat("x", 16<<20)
	c.must(status("OK"), "set", "big", big)
	for i := 0; i < 200_000; i += 1000 {
		args := []string{"mset"}
		for j := i; j < i+1000; j++ {
			args = append(args, "key:"+strconv.Itoa(j), "v")
		}
		c.must(status("OK"), args...)
	}
	for i := 0; i < 3; i++ {
		c.send("get", "big")
		c.send("keys", "key:*")
		c.send("ping")
		if got := c.readRaw(); got != bulk(big) {
			t.Fatalf("reply of %d bytes, want %d", len(got), len(bulk(big)))
		}
		r := c.read()
		if len(r.Elems) != 200_000 {
			t.Fatalf("KEYS: %d keys, want 200000", len(r.Elems))
		}
		if got := c.readRaw(); got != status("PONG") {
			t.Fatalf("after the replies: %q", got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls == 0 {
		t.Fatal("the loop wrote nothing through write")
	}
	if most > writeBudget {
		t.Fatalf("%d bytes written to one connection in one pass; budget %d", most, writeBudget)
	}
}
