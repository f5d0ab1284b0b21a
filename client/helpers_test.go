package client

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt"
	"github.com/deadbolt/deadbolt/internal/testredis"
)

// server is what a test runs against: a deadbolt node or a redis-server.
type server struct {
	kind string
	addr string
	node *deadbolt.Node // nil for redis
}

// advance moves a deadbolt node's clock (expiring what runs out); on
// redis it sleeps, so keep d short.
func (s *server) advance(tb testing.TB, d time.Duration) {
	tb.Helper()
	if s.node != nil {
		s.node.Advance(d)
		return
	}
	time.Sleep(d)
}

// servers are the backends every behaviour test runs on.
var serverKinds = []string{"deadbolt", "redis"}

func startServer(tb testing.TB, kind string) *server {
	tb.Helper()
	switch kind {
	case "deadbolt":
		n := deadbolt.RunT(tb)
		s := &server{kind: kind, addr: n.Addr(), node: n}
		requireScripts(tb, s.addr)
		return s
	case "redis":
		return &server{kind: kind, addr: testredis.Start(tb)}
	}
	tb.Fatalf("unknown server kind %q", kind)
	return nil
}

// eachServer runs f as a subtest on every backend.
func eachServer(t *testing.T, f func(t *testing.T, s *server)) {
	for _, kind := range serverKinds {
		t.Run(kind, func(t *testing.T) {
			f(t, startServer(t, kind))
		})
	}
}

// requireScripts skips when the server does not run Lua scripts yet.
func requireScripts(tb testing.TB, addr string) {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	err := rdb.Eval(context.Background(), "return 1", nil).Err()
	if err != nil && strings.Contains(err.Error(), "unknown command") {
		tb.Skipf("deadbolt at %s has no EVAL yet: %v", addr, err)
	}
}

// newRedis returns a go-redis client for addr, closed with the test.
func newRedis(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, PoolSize: 32})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// newClient returns a Client (one "process") on addr, closed with the
// test.
func newClient(tb testing.TB, addr string, opts ...Option) *Client {
	tb.Helper()
	c := New(newRedis(tb, addr), opts...)
	tb.Cleanup(func() { c.Close() })
	return c
}

// ctxT returns a context that ends with the test or after d.
func ctxT(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// mustTrue(t)(f()) fails unless f returns true and no error.
func mustTrue(tb testing.TB) func(bool, error) {
	return func(ok bool, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		if !ok {
			tb.Fatal("want true, got false")
		}
	}
}

// mustFalse(t)(f()) fails unless f returns false and no error.
func mustFalse(tb testing.TB) func(bool, error) {
	return func(ok bool, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		if ok {
			tb.Fatal("want false, got true")
		}
	}
}

// eventually polls cond every 5 ms until it holds or d passes.
func eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waiters returns how many goroutines of c are asleep on channel.
func waiters(c *Client, channel string) int {
	c.sub.mu.Lock()
	defer c.sub.mu.Unlock()
	if e := c.sub.entries[channel]; e != nil {
		return e.waiting
	}
	return 0
}

// subscribed reports whether c has an entry for channel.
func subscribed(c *Client, channel string) bool {
	c.sub.mu.Lock()
	defer c.sub.mu.Unlock()
	return c.sub.entries[channel] != nil
}

// result carries what a goroutine reports back.
type result struct {
	at  time.Time
	err error
}

// goLock starts f in a goroutine and returns a channel for its outcome.
func goDo(f func() error) <-chan result {
	ch := make(chan result, 1)
	go func() {
		err := f()
		ch <- result{at: time.Now(), err: err}
	}()
	return ch
}

// notYet fails if ch delivers within d.
func notYet(tb testing.TB, ch <-chan result, d time.Duration) {
	tb.Helper()
	select {
	case r := <-ch:
		tb.Fatalf("finished too early (err %v)", r.err)
	case <-time.After(d):
	}
}

// within waits up to d for ch and returns its result.
func within(tb testing.TB, ch <-chan result, d time.Duration) result {
	tb.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		tb.Fatalf("not finished within %v", d)
	}
	return result{}
}

// group runs goroutines and collects their first error.
type group struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (g *group) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	}()
}

func (g *group) Wait(tb testing.TB) {
	tb.Helper()
	g.wg.Wait()
	for _, err := range g.errs {
		tb.Error(err)
	}
}
