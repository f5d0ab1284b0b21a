// Command compat-go is the Go column of the compatibility matrix
// (docs/COMPATIBILITY.md): unmodified Go lock clients — go-redis v9 running
// Redisson's lock scripts, redsync v4, bsm/redislock — and the project's own
// client for the rest of Redisson's lock family (package family), driven
// against deadbolt in one connection mode.
//
//	compat-go SUITE MODE
//
// SUITE is rlock, redsync, redislock or family; MODE is single, sentinel,
// direct, cluster or redlock3. Addresses and the phase come from the
// environment (COMPAT_*, set by cmd/deadbolt-compat). In the check phase
// the suite runs its transcript and exits 0 or 1; in the failover phase it
// runs two contending workers, prints READY once they work, and after
// reading KILLED on stdin it exits 0 once locks are granted again.
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
		fmt.Fprintln(os.Stderr, "compat-go:", err)
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
	"rlock":     rlockSuite,
	"redsync":   redsyncSuite,
	"redislock": redislockSuite,
	"family":    familySuite,
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: compat-go SUITE MODE")
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
