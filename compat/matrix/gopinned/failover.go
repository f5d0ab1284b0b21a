package main

// A copy of compat/matrix/go/failover.go; keep them in step.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The failover phase (docs/COMPATIBILITY.md, "The leader kill"): two
// workers, each with its own connections, contend for one lock in a loop.
// Once both have held it the run prints READY. The runner writes KILLING
// on stdin (the run answers ARMED: from then on errors count as the
// kill's), SIGKILLs the leader and writes KILLED; the run ends well once
// the lock has been granted three more times by cycles that began after
// KILLED.
// Two holders at once fail the run at any time. Errors are counted, before
// and after the kill, and reported on the RECOVERED line; the runner
// judges errors before the kill (they are a failure unless the cluster
// changed leader on its own meanwhile).
const (
	failoverWorkers  = 2
	grantsAfterKill  = 3
	holdFor          = 20 * time.Millisecond
	pauseAfterCycle  = 250 * time.Millisecond
	pauseAfterError  = 250 * time.Millisecond
	cycleTimeLimit   = 6 * time.Second
	failoverLockTTL  = 4 * time.Second
	failoverLockWait = 300 * time.Millisecond
)

// A cycle tries once to take the lock (waiting at most about
// failoverLockWait); when it is granted it calls hold and then releases.
// ok reports whether the lock was granted.
type cycle func(ctx context.Context, hold func()) (ok bool, err error)

type counters struct {
	mu         sync.Mutex
	grants     [failoverWorkers]int
	armed      bool // KILLING was read: errors are the kill's
	killedAt   time.Time
	afterKill  int
	errsBefore int
	errsAfter  int
	lastErr    string
}

func failover(t *T, stdin io.Reader, stdout io.Writer, mk func(w int) cycle) {
	var (
		c       counters
		inside  atomic.Int32
		overlap atomic.Value
	)
	hold := func() {
		if n := inside.Add(1); n > 1 {
			overlap.Store(fmt.Sprintf("%d holders of the lock at %.3fs", n, time.Since(t.start).Seconds()))
		}
		time.Sleep(holdFor)
		inside.Add(-1)
	}
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := range failoverWorkers {
		cy := mk(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				began := time.Now()
				cctx, ccancel := context.WithTimeout(ctx, cycleTimeLimit)
				ok, err := cy(cctx, hold)
				ccancel()
				c.mu.Lock()
				killed := !c.killedAt.IsZero()
				switch {
				case err != nil && ctx.Err() == nil:
					if c.armed || killed {
						c.errsAfter++
					} else {
						c.errsBefore++
					}
					c.lastErr = err.Error()
				case ok:
					c.grants[w]++
					if killed && began.After(c.killedAt) {
						c.afterKill++
					}
				}
				c.mu.Unlock()
				pause := pauseAfterCycle
				if err != nil && ctx.Err() == nil {
					t.Logf("worker %d: %v", w, err)
					pause = pauseAfterError
				}
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		}()
	}
	defer wg.Wait()
	defer cancel()

	killed := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			switch strings.TrimSpace(sc.Text()) {
			case "KILLING":
				c.mu.Lock()
				c.armed = true
				c.mu.Unlock()
				fmt.Fprintln(stdout, "ARMED")
			case "KILLED":
				killed <- nil
				return
			}
		}
		killed <- fmt.Errorf("stdin closed before KILLED")
	}()

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	ready := false
	for {
		if v := overlap.Load(); v != nil {
			t.Fatalf("mutual exclusion broken: %s", v)
		}
		if msg := t.Failed(); msg != "" {
			t.Fatalf("%s", msg)
		}
		c.mu.Lock()
		grants, after, errsBefore, errsAfter, lastErr, killedAt := c.grants, c.afterKill, c.errsBefore, c.errsAfter, c.lastErr, c.killedAt
		c.mu.Unlock()
		if !ready && grants[0] > 0 && grants[1] > 0 {
			ready = true
			t.Logf("both workers have held the lock")
			fmt.Fprintln(stdout, "READY")
		}
		if !killedAt.IsZero() && after >= grantsAfterKill {
			t.Logf("RECOVERED: %d grants %.1fs after the kill; errors: %d before the kill, %d after (last: %s)",
				after, time.Since(killedAt).Seconds(), errsBefore, errsAfter, lastErr)
			return
		}
		select {
		case <-t.ctx.Done():
			t.Fatalf("deadline: ready=%v grants=%v after kill=%d errors before/after kill=%d/%d (last: %s)",
				ready, grants, after, errsBefore, errsAfter, lastErr)
		case err := <-killed:
			if err != nil {
				t.Fatalf("%v", err)
			}
			c.mu.Lock()
			c.killedAt = time.Now()
			c.mu.Unlock()
			t.Logf("KILLED received")
		case <-tick.C:
		}
	}
}
