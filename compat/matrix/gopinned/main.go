// Command compat-gopinned is one row of the compatibility matrix
// (docs/COMPATIBILITY.md): bsm/redislock v0.9.4 on go-redis v9.0.3, the
// exact versions redislock v0.9.4's own go.mod requires. It is a module of
// its own so that the root go.mod, which needs a newer go-redis for the
// other Go clients, cannot raise it: minimal version selection would
// otherwise build redislock on the newest go-redis anything requires, and
// the combination a team gets from `go get github.com/bsm/redislock@v0.9.4`
// in a fresh module would go untested.
//
// go-redis v9.0.3 has no Protocol option: it opens every connection with
// HELLO 3 and gives up on the connection unless HELLO succeeds or the
// error starts with "ERR unknown command" (or "NOAUTH Authentication"),
// where v9.0.4 and later (the root module has v9.23.0) fall back to RESP2
// on any error reply.
//
//	compat-gopinned SUITE MODE
//
// SUITE is redislock; MODE is single, sentinel, direct or cluster. The
// protocol with the runner (cmd/deadbolt-compat) is compat-go's, and so is
// the harness: main.go, env.go, failover.go and redislock.go are copies
// of compat/matrix/go's, cut down to this one suite and to go-redis
// v9.0.3's API; keep them in step. Nothing here imports the root module.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "compat-gopinned:", err)
		os.Exit(1)
	}
}

// A suite is one client library: a transcript of checks, and one
// acquire-hold-release cycle for the failover phase.
type suite struct {
	modes []string
	check func(t *T, e *env)
	// worker returns the cycle of failover worker w, with connections of
	// its own.
	worker func(t *T, e *env, w int) cycle
}

var suites = map[string]suite{
	"redislock": redislockSuite,
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: compat-gopinned SUITE MODE")
	}
	s, ok := suites[args[0]]
	if !ok {
		return fmt.Errorf("unknown suite %q", args[0])
	}
	e, err := readEnv(args[1])
	if err != nil {
		return err
	}
	supported := false
	for _, m := range s.modes {
		supported = supported || m == e.mode
	}
	if !supported {
		return fmt.Errorf("suite %s does not run in mode %s", args[0], e.mode)
	}
	ctx, cancel := context.WithTimeout(ctx, e.limit)
	defer cancel()
	stdout = &lockedWriter{w: stdout}
	t := newT(ctx, stdout)
	defer t.cleanup()
	switch e.phase {
	case "check":
		return t.run(func() {
			refused(t, e)
			s.check(t, e)
		})
	case "failover":
		return t.run(func() { failover(t, stdin, stdout, func(w int) cycle { return s.worker(t, e, w) }) })
	}
	return fmt.Errorf("unknown phase %q", e.phase)
}

// T is a small testing.T for a program: Fatalf stops the suite, Logf
// writes to stdout (the runner keeps it in the log), cleanups run at the
// end.
type T struct {
	ctx      context.Context
	out      io.Writer
	cleanups []func()
	start    time.Time
	failed   atomic.Value // string: the first Errorf
}

type failNow struct{ msg string }

func newT(ctx context.Context, out io.Writer) *T {
	return &T{ctx: ctx, out: out, start: time.Now()}
}

func (t *T) Logf(format string, args ...any) {
	fmt.Fprintf(t.out, "%7.3fs %s\n", time.Since(t.start).Seconds(), fmt.Sprintf(format, args...))
}

func (t *T) Fatalf(format string, args ...any) {
	panic(failNow{fmt.Sprintf(format, args...)})
}

// Errorf records a failure without stopping; safe from any goroutine.
func (t *T) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.failed.CompareAndSwap(nil, msg)
	t.Logf("ERROR %s", msg)
}

// Failed returns the first Errorf message, or "".
func (t *T) Failed() string {
	if v := t.failed.Load(); v != nil {
		return v.(string)
	}
	return ""
}

// Cleanup registers f to run when the suite ends, last first.
func (t *T) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *T) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// run runs f and turns Fatalf into an error.
func (t *T) run(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fn, ok := r.(failNow)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("FAIL after %.1fs: %s", time.Since(t.start).Seconds(), fn.msg)
		}
	}()
	f()
	if msg := t.Failed(); msg != "" {
		return fmt.Errorf("FAIL after %.1fs: %s", time.Since(t.start).Seconds(), msg)
	}
	return nil
}

// Step logs the start of a named part of a transcript.
func (t *T) Step(name string) { t.Logf("--- %s", name) }

// must fails the suite on a non-nil error.
func (t *T) must(err error, what string) {
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// lockedWriter serialises writes from the failover workers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
