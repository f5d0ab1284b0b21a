package compat

import (
	"context"
	"embed"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt"
	"github.com/deadbolt/deadbolt/internal/testredis"
)

// server is one server under test: deadbolt or redis-server.
type server struct {
	name string
	addr string
	// elapse lets d pass for the server's keys: deadbolt moves its clock
	// forward and reaps; redis-server has no such knob, so real time
	// passes (d plus a little, as Redis expires a key only once its
	// deadline is strictly in the past).
	elapse func(tb testing.TB, d time.Duration)
}

// forEachServer runs fn as a subtest against a fresh deadbolt node and a
// fresh redis-server. Without redis-server only the second subtest is
// skipped (testredis.Start decides, and fails under CI=true).
func forEachServer(t *testing.T, fn func(t *testing.T, s *server)) {
	t.Helper()
	t.Run("deadbolt", func(t *testing.T) {
		fn(t, startDeadbolt(t))
	})
	t.Run("redis-server", func(t *testing.T) {
		addr := testredis.Start(t)
		fn(t, &server{
			name: "redis-server",
			addr: addr,
			elapse: func(tb testing.TB, d time.Duration) {
				tb.Helper()
				<-time.After(d + 5*time.Millisecond)
			},
		})
	})
}

func startDeadbolt(tb testing.TB, opts ...func(*deadbolt.Config)) *server {
	tb.Helper()
	n := deadbolt.RunT(tb, opts...)
	return &server{
		name: "deadbolt",
		addr: n.Addr(),
		elapse: func(tb testing.TB, d time.Duration) {
			tb.Helper()
			n.Advance(d)
		},
	}
}

// newClient is a go-redis client as an application would make it; it is
// closed when the test ends.
func newClient(tb testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{Addr: addr}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// ctx is a context for one test, with a deadline so that a server that
// stops answering fails the test instead of hanging it.
func testContext(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

//go:embed testdata/*.lua
var testdata embed.FS

// seedScript returns the body of testdata/<name>.lua without its first
// line, which names the seed article the script comes from.
func seedScript(tb testing.TB, name string) string {
	tb.Helper()
	b, err := testdata.ReadFile("testdata/" + name + ".lua")
	if err != nil {
		tb.Fatal(err)
	}
	src := string(b)
	first, body, ok := strings.Cut(src, "\n")
	if !ok || !strings.HasPrefix(first, "-- from ") {
		tb.Fatalf("testdata/%s.lua: the first line should name the seed it comes from, got %q", name, first)
	}
	return body
}

// isRedisError reports whether err is an error reply from the server, as
// opposed to a network or client-side error.
func isRedisError(err error) bool {
	var re redis.Error
	return err != redis.Nil && errors.As(err, &re)
}

// wantInt returns a check that a reply is an integer, which it returns:
// wantInt(t, "PTTL")(c.Do(...).Result()).
func wantInt(tb testing.TB, what string) func(v any, err error) int64 {
	return func(v any, err error) int64 {
		tb.Helper()
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
		n, ok := v.(int64)
		if !ok {
			tb.Fatalf("%s: got %T %#v, want an integer", what, v, v)
		}
		return n
	}
}

// wantNil fails unless the reply was a nil bulk (go-redis's redis.Nil).
func wantNil(tb testing.TB, what string, v any, err error) {
	tb.Helper()
	if err != redis.Nil {
		tb.Fatalf("%s: got (%#v, %v), want nil", what, v, err)
	}
}

// TestBenchScriptsMatch checks that cmd/deadbolt-bench measures the same
// scripts as these tests run.
func TestBenchScriptsMatch(t *testing.T) {
	for _, name := range []string{"lock", "unlock"} {
		ours, err := testdata.ReadFile("testdata/" + name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		bench, err := os.ReadFile(filepath.Join("..", "cmd", "deadbolt-bench", name+".lua"))
		if err != nil {
			t.Fatal(err)
		}
		if string(ours) != string(bench) {
			t.Errorf("cmd/deadbolt-bench/%s.lua differs from compat/testdata/%s.lua", name, name)
		}
	}
}
