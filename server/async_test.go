//go:build linux

package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// asyncBackend stands for a cluster node: StartApply answers later, from
// a goroutine of its own (after delay), or refuses when refuse is set, and
// every other call may take a while too.
type asyncBackend struct {
	*cluster.Local
	delay   time.Duration
	refuse  atomic.Bool
	started atomic.Int64  // StartApply calls that accepted
	applied atomic.Int64  // Apply calls
	release chan struct{} // if set, accepted writes wait for it
}

func (b *asyncBackend) StartApply(cmd fsm.Command, done func(fsm.Result, error)) bool {
	if b.refuse.Load() {
		return false
	}
	b.started.Add(1)
	// The arguments are the caller's only until StartApply returns.
	args := make([][]byte, len(cmd.Args))
	for i, a := range cmd.Args {
		args[i] = append([]byte(nil), a...)
	}
	for _, a := range cmd.Args {
		clear(a) // what reusing them would do
	}
	cmd.Args = args
	go func() {
		if b.release != nil {
			<-b.release
		}
		time.Sleep(b.delay)
		done(b.Local.Apply(context.Background(), cmd))
	}()
	return true
}

func (b *asyncBackend) Apply(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	b.applied.Add(1)
	time.Sleep(b.delay)
	return b.Local.Apply(ctx, cmd)
}

func (b *asyncBackend) Read(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	time.Sleep(b.delay)
	return b.Local.Read(ctx, cmd)
}

func newAsyncServer(t *testing.T, delay time.Duration) (*testServer, *asyncBackend) {
	var b *asyncBackend
	s := newTestServerWith(t, func(l *cluster.Local) Backend {
		b = &asyncBackend{Local: l, delay: delay}
		return b
	})
	return s, b
}

// A backend whose writes wait (the cluster) is served by the event loop:
// writes start with StartApply, what the connection answers from its own
// state runs on the loop, everything else on a goroutine, and each
// connection's replies come in the order of its requests.
func TestAsyncBackendServedByLoop(t *testing.T) {
	s, b := newAsyncServer(t, time.Millisecond)
	c := dial(t, s.addr)
	c.must(status("PONG"), "ping")
	if loopOf(s) == nil {
		t.Fatal("no event loop for an AsyncApplier backend")
	}
	c.must(status("OK"), "set", "k", "v")
	c.must(bulk("v"), "get", "k")
	if b.started.Load() != 1 || b.applied.Load() != 0 {
		t.Fatalf("StartApply %d, Apply %d; want 1, 0", b.started.Load(), b.applied.Load())
	}
	// A pipeline mixing writes, reads and connection commands.
	var pipe, want strings.Builder
	for i := 0; i < 20; i++ {
		pipe.WriteString(encode("incr", "n"))
		want.WriteString(integer(int64(i + 1)))
		pipe.WriteString(encode("get", "n"))
		want.WriteString(bulk(fmt.Sprint(i + 1)))
		pipe.WriteString(encode("echo", fmt.Sprint("e", i)))
		want.WriteString(bulk(fmt.Sprint("e", i)))
	}
	c.write(pipe.String())
	var got strings.Builder
	for got.Len() < want.Len() {
		got.WriteString(c.readRaw())
	}
	if got.String() != want.String() {
		t.Fatalf("pipeline replies:\n%q\nwant\n%q", got.String(), want.String())
	}
	// Errors before the backend, inside MULTI, and from a script.
	c.mustErr("ERR wrong number of arguments for 'set' command", "set", "k")
	c.must(status("OK"), "multi")
	c.must(status("QUEUED"), "incr", "n")
	c.must(arr(integer(21)), "exec")
	c.mustErr("WRONGTYPE Operation against a key holding the wrong kind of value", "hset", "n", "f", "v")
	c.must(integer(7), "eval", "return redis.call('incrby', KEYS[1], 7)", "1", "m")
	// The command statistics count the asynchronous writes.
	info := c.doRaw("info", "commandstats")
	if !strings.Contains(info, "cmdstat_incr:calls=21,") {
		t.Fatalf("commandstats: %s", info)
	}
}

// Which requests a cluster's event loop answers itself: those that need
// only the connection's state, and inside MULTI whatever is queued or
// refused; never one that reads, writes, waits or asks the cluster.
func TestAnsweredLocally(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		multi bool
		want  bool
	}{
		{"ping", false, true}, {"echo", false, true}, {"select", false, true},
		{"subscribe", false, true}, {"unsubscribe", false, true}, {"multi", false, true},
		{"get", false, false}, {"set", false, false}, {"eval", false, false},
		{"wait", false, false}, {"watch", false, false}, {"exec", false, false},
		{"hello", false, false}, {"role", false, false}, {"info", false, false},
		{"raft", false, false}, {"client", false, false}, {"nosuchcommand", false, false},
		{"get", true, true}, {"set", true, true}, {"eval", true, true}, {"nosuchcommand", true, true},
		{"ping", true, true}, {"info", true, true}, {"discard", true, true},
		{"exec", true, false}, {"watch", true, false},
		{"hello", true, true}, {"auth", true, true}, // queued, as in Redis (multi_conn.go)
	} {
		c := &conn{}
		if tc.multi {
			c.multi = &multiState{}
		}
		cs, isConn := lookupConn([]byte(tc.cmd))
		if got := c.answeredLocally(cs, isConn); got != tc.want {
			t.Errorf("%s (in MULTI: %v): answered locally %v, want %v", tc.cmd, tc.multi, got, tc.want)
		}
	}
}

func TestAsyncBackendRefusedFallsBack(t *testing.T) {
	s, b := newAsyncServer(t, 0)
	b.refuse.Store(true) // a follower: the write goes through Apply
	c := dial(t, s.addr)
	c.must(status("OK"), "set", "k", "v")
	c.must(bulk("v"), "get", "k")
	if b.started.Load() != 0 || b.applied.Load() != 1 {
		t.Fatalf("StartApply %d, Apply %d; want 0, 1", b.started.Load(), b.applied.Load())
	}
}

// Many clients with writes in flight at once each get their own replies.
func TestAsyncBackendManyClients(t *testing.T) {
	s, _ := newAsyncServer(t, 200*time.Microsecond)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s.addr)
			key := fmt.Sprint("key", i)
			for j := 1; j <= 50; j++ {
				if got := c.doRaw("incr", key); got != integer(int64(j)) {
					errs <- fmt.Sprintf("client %d: INCR %d answered %q", i, j, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A client that goes away while its write is pending: the write's outcome
// goes nowhere, and the server goes on serving.
func TestAsyncBackendCloseWhilePending(t *testing.T) {
	s, b := newAsyncServer(t, 0)
	b.release = make(chan struct{})
	c := dial(t, s.addr)
	c.send("set", "k", "v")
	deadline := time.Now().Add(5 * time.Second)
	for b.started.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	c.nc.Close()
	time.Sleep(20 * time.Millisecond) // the loop sees the close
	close(b.release)
	other := dial(t, s.addr)
	// It is applied; nobody is told.
	for other.doRaw("get", "k") != bulk("v") {
		if time.Now().After(deadline) {
			t.Fatal("the write of the closed connection was not applied")
		}
		time.Sleep(time.Millisecond)
	}
	other.must(status("OK"), "set", "k2", "v2")
}

// badReplyBackend's writes come back with a reply the server cannot
// encode, standing for any bug on the path that finishes a write.
type badReplyBackend struct{ *asyncBackend }

func (b *badReplyBackend) StartApply(cmd fsm.Command, done func(fsm.Result, error)) bool {
	go done(fsm.Result{Reply: resp.Reply{Type: 99}}, nil)
	return true
}

// A panic while finishing an asynchronous write is answered like one in
// any handler: an error reply, and the server and connection go on.
func TestAsyncBackendPanicInCompletion(t *testing.T) {
	s := newTestServerWith(t, func(l *cluster.Local) Backend {
		return &badReplyBackend{&asyncBackend{Local: l}}
	})
	c := dial(t, s.addr)
	c.mustErr("ERR internal error", "set", "k", "v")
	c.must(status("PONG"), "ping")
	other := dial(t, s.addr)
	other.must(status("PONG"), "ping")
}

// Commands of a cluster node run on goroutines while the loop goes on
// reading: CONFIG SET of the query buffer limit and CLIENT INFO's qbuf
// must not race with it (run under -race).
func TestAsyncBackendConfigAndClientInfo(t *testing.T) {
	s, _ := newAsyncServer(t, 0)
	a := dial(t, s.addr)
	b := dial(t, s.addr)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			b.must(status("PONG"), "ping")
		}
	}()
	for i := 0; i < 50; i++ {
		a.must(status("OK"), "config", "set", "client-query-buffer-limit", "1073741824")
	}
	wg.Wait()
	// A pipeline dribbled in while each CLIENT INFO runs.
	var pipe strings.Builder
	for i := 0; i < 100; i++ {
		pipe.WriteString(encode("client", "info"))
	}
	p := pipe.String()
	go func() {
		for i := 0; i < len(p); i += 7 {
			a.nc.Write([]byte(p[i:min(i+7, len(p))]))
		}
	}()
	for i := 0; i < 100; i++ {
		if got := a.readRaw(); !strings.Contains(got, "qbuf=") {
			t.Fatalf("CLIENT INFO: %q", got)
		}
	}
}

// In a cluster SHUTDOWN runs on a goroutine of its own, as other admin
// commands do; it halts its connection as on a single node.
func TestAsyncBackendShutdown(t *testing.T) {
	var calls atomic.Int32
	s := newTestServerWith(t, func(l *cluster.Local) Backend { return &asyncBackend{Local: l, delay: time.Millisecond} },
		func(c *Config) { c.Shutdown = func() { calls.Add(1) } })
	testShutdownHalts(t, s, &calls)
}
