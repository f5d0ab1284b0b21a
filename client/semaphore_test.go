package client

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestSemaphorePermits: 16 goroutines over 4 clients never hold more
// permits than there are.
func TestSemaphorePermits(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 60*time.Second)
		const permits = 3
		setup := newClient(t, s.addr).NewSemaphore("sem")
		mustTrue(t)(setup.TrySetPermits(ctx, permits))
		mustFalse(t)(setup.TrySetPermits(ctx, 10))
		var inUse, peak atomic.Int32
		var g group
		for range 4 {
			c := newClient(t, s.addr)
			for range 4 {
				sem := c.NewSemaphore("sem")
				g.Go(func() error {
					for range 10 {
						if err := sem.Acquire(ctx, 1); err != nil {
							return err
						}
						n := inUse.Add(1)
						if n > permits {
							return fmt.Errorf("%d permits in use, only %d exist", n, permits)
						}
						for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
						}
						time.Sleep(time.Millisecond)
						inUse.Add(-1)
						if err := sem.Release(ctx, 1); err != nil {
							return err
						}
					}
					return nil
				})
			}
		}
		g.Wait(t)
		t.Logf("peak permits in use: %d", peak.Load())
		if n, err := setup.AvailablePermits(ctx); err != nil || n != permits {
			t.Fatalf("available = %d, %v; want %d", n, err, permits)
		}
	})
}

func TestSemaphoreWake(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		a, b := newClient(t, s.addr), newClient(t, s.addr)
		sa, sb := a.NewSemaphore("semwake"), b.NewSemaphore("semwake")
		mustTrue(t)(sa.TrySetPermits(ctx, 2))
		mustFalse(t)(sa.TryAcquire(ctx, 3, 0))
		mustTrue(t)(sa.TryAcquire(ctx, 2, 0))
		mustFalse(t)(sb.TryAcquire(ctx, 1, 50*time.Millisecond))
		got := goDo(func() error { return sb.Acquire(ctx, 2) })
		eventually(t, 5*time.Second, "waiter asleep", func() bool { return waiters(b, "redisson_sc:{semwake}") == 1 })
		must(t, sa.Release(ctx, 1))
		notYet(t, got, 100*time.Millisecond) // one is not enough
		start := time.Now()
		must(t, sa.Release(ctx, 1))
		r := within(t, got, 2*time.Second)
		must(t, r.err)
		if d := r.at.Sub(start); d > 500*time.Millisecond {
			t.Fatalf("woken %v after release", d)
		}
		must(t, sa.AddPermits(ctx, 5))
		if n, _ := sa.DrainPermits(ctx); n != 5 {
			t.Fatalf("drained %d, want 5", n)
		}
		if n, _ := sa.AvailablePermits(ctx); n != 0 {
			t.Fatalf("available %d after drain", n)
		}
		mustTrue(t)(sa.Delete(ctx))
	})
}

// TestPermitExpirableSemaphore: ids, leases, expiry back to the pool,
// release, and a waiter woken by a lease running out.
func TestPermitExpirableSemaphore(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		c := newClient(t, s.addr)
		raw := newRedis(t, s.addr)
		p := c.NewPermitExpirableSemaphore("pes")
		mustTrue(t)(p.TrySetPermits(ctx, 2))
		forever, err := p.Acquire(ctx, 0)
		must(t, err)
		leased, err := p.Acquire(ctx, 300*time.Millisecond)
		must(t, err)
		if len(forever) != 32 || forever == leased {
			t.Fatalf("permit ids %q %q", forever, leased)
		}
		// Wire layout: raw 16-byte members, "never" is 922337203685477.
		b, _ := hex.DecodeString(forever)
		if sc := raw.ZScore(ctx, "{pes}:timeout", string(b)).Val(); fmt.Sprintf("%.0f", sc) != noExpiry {
			t.Fatalf("score of a permit without lease = %v", sc)
		}
		_, ok, err := p.TryAcquire(ctx, 0, 0)
		mustFalse(t)(ok, err)

		// A waiter gets the leased permit when its lease runs out: the
		// script tells it when to look again.
		start := time.Now()
		id, err := p.Acquire(ctx, 0)
		must(t, err)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("waited %v for a 300ms lease", d)
		}
		if err := p.Release(ctx, leased); !errors.Is(err, ErrPermitNotFound) {
			t.Fatalf("Release of an expired permit = %v", err)
		}
		must(t, p.Release(ctx, forever))
		if err := p.Release(ctx, forever); !errors.Is(err, ErrPermitNotFound) {
			t.Fatalf("second Release = %v", err)
		}
		if err := p.Release(ctx, "zz"); !errors.Is(err, ErrPermitNotFound) {
			t.Fatalf("Release of a malformed id = %v", err)
		}
		mustTrue(t)(p.UpdateLeaseTime(ctx, id, 100*time.Millisecond))
		mustFalse(t)(p.UpdateLeaseTime(ctx, forever, time.Second))
		time.Sleep(150 * time.Millisecond)
		if n, err := p.AvailablePermits(ctx); err != nil || n != 2 {
			t.Fatalf("available = %d, %v; want 2", n, err)
		}
		ids, err := p.TryAcquireN(ctx, 2, 0, 0)
		must(t, err)
		if len(ids) != 2 {
			t.Fatalf("ids %v", ids)
		}
		// Release wakes a waiter.
		got := goDo(func() error { _, err := p.Acquire(ctx, 0); return err })
		eventually(t, 5*time.Second, "waiter asleep", func() bool { return waiters(c, "redisson_sc:{pes}") == 1 })
		start = time.Now()
		must(t, p.Release(ctx, ids[0]))
		r := within(t, got, 2*time.Second)
		must(t, r.err)
		if d := r.at.Sub(start); d > 500*time.Millisecond {
			t.Fatalf("woken %v after release", d)
		}
		mustTrue(t)(p.Delete(ctx))
	})
}

// TestPermitExpirableSemaphoreStress: permits are never over-granted.
func TestPermitExpirableSemaphoreStress(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 60*time.Second)
		const permits = 2
		mustTrue(t)(newClient(t, s.addr).NewPermitExpirableSemaphore("pess").TrySetPermits(ctx, permits))
		var inUse atomic.Int32
		var g group
		for range 3 {
			c := newClient(t, s.addr)
			for range 3 {
				p := c.NewPermitExpirableSemaphore("pess")
				g.Go(func() error {
					for range 8 {
						id, err := p.Acquire(ctx, 0)
						if err != nil {
							return err
						}
						if n := inUse.Add(1); n > permits {
							return fmt.Errorf("%d permits in use", n)
						}
						time.Sleep(time.Millisecond)
						inUse.Add(-1)
						if err := p.Release(ctx, id); err != nil {
							return err
						}
					}
					return nil
				})
			}
		}
		g.Wait(t)
	})
}

// TestLatchOpensOnce: waiters on several clients all pass once the count
// reaches zero, the latch opens (publishes "0") exactly once, and it can
// be armed again.
func TestLatchOpensOnce(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		a, b := newClient(t, s.addr), newClient(t, s.addr)
		raw := newRedis(t, s.addr)
		ps := raw.Subscribe(ctx, "redisson_countdownlatch__channel__{latch}")
		defer ps.Close()
		_, err := ps.Receive(ctx)
		must(t, err)

		l := a.NewCountDownLatch("latch")
		mustTrue(t)(l.TrySetCount(ctx, 3))
		mustFalse(t)(l.TrySetCount(ctx, 5))
		var passed atomic.Int32
		var done []<-chan result
		for i := range 6 {
			w := []*Client{a, b}[i%2].NewCountDownLatch("latch")
			done = append(done, goDo(func() error {
				err := w.Await(ctx)
				passed.Add(1)
				return err
			}))
		}
		eventually(t, 5*time.Second, "waiters asleep", func() bool {
			ch := "redisson_countdownlatch__channel__{latch}"
			return waiters(a, ch)+waiters(b, ch) == 6
		})
		must(t, l.CountDown(ctx))
		must(t, b.NewCountDownLatch("latch").CountDown(ctx))
		time.Sleep(50 * time.Millisecond)
		if n := passed.Load(); n != 0 {
			t.Fatalf("%d waiters passed a closed latch", n)
		}
		start := time.Now()
		must(t, l.CountDown(ctx))
		for _, ch := range done {
			r := within(t, ch, 2*time.Second)
			must(t, r.err)
			if d := r.at.Sub(start); d > 500*time.Millisecond {
				t.Fatalf("waiter passed %v after the latch opened", d)
			}
		}
		// Counting down an open latch changes nothing.
		must(t, l.CountDown(ctx))
		must(t, l.CountDown(ctx))
		if n, _ := l.Count(ctx); n != 0 {
			t.Fatalf("count %d", n)
		}
		mustTrue(t)(l.AwaitTimeout(ctx, 0))

		var msgs []string
		for len(msgs) < 2 {
			m, err := ps.ReceiveMessage(ctx)
			must(t, err)
			msgs = append(msgs, m.Payload)
		}
		if msgs[0] != "1" || msgs[1] != "0" {
			t.Fatalf("messages %v, want [1 0]", msgs)
		}
		// Armed again, it closes again.
		mustTrue(t)(l.TrySetCount(ctx, 1))
		mustFalse(t)(l.AwaitTimeout(ctx, 50*time.Millisecond))
		mustTrue(t)(l.Delete(ctx))
		mustTrue(t)(l.AwaitTimeout(ctx, 0))
		for _, want := range []string{"1", "0"} {
			m, err := ps.ReceiveMessage(ctx)
			must(t, err)
			if m.Payload != want {
				t.Fatalf("message %q, want %q", m.Payload, want)
			}
		}
		select {
		case m := <-ps.Channel():
			t.Fatalf("extra message %v", m)
		case <-time.After(50 * time.Millisecond):
		}
	})
}

// TestFencingTokens: every acquisition gets a larger token than any
// before it, across clients and re-entries.
func TestFencingTokens(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 60*time.Second)
		var last atomic.Int64
		var g group
		for range 4 {
			c := newClient(t, s.addr)
			for range 4 {
				l := c.NewFencedLock("fence")
				g.Go(func() error {
					for range 8 {
						tok, err := l.LockAndGetToken(ctx)
						if err != nil {
							return err
						}
						if prev := last.Swap(tok); tok <= prev {
							return fmt.Errorf("token %d after %d", tok, prev)
						}
						if err := l.Unlock(ctx); err != nil {
							return err
						}
					}
					return nil
				})
			}
		}
		g.Wait(t)
		c := newClient(t, s.addr)
		l := c.NewFencedLock("fence")
		if tok, err := l.Token(ctx); err != nil || tok != last.Load() {
			t.Fatalf("Token = %d, %v; last handed out %d", tok, err, last.Load())
		}
		t1, ok, err := l.TryLockAndGetToken(ctx, 0, time.Second)
		mustTrue(t)(ok, err)
		t2, err := l.LockAndGetToken(ctx) // re-entry: a new token too
		must(t, err)
		if t1 != last.Load()+1 || t2 != t1+1 {
			t.Fatalf("tokens %d, %d after %d", t1, t2, last.Load())
		}
		_, ok, err = c.NewFencedLock("fence").TryLockAndGetToken(ctx, 0, 0)
		mustFalse(t)(ok, err)
		must(t, l.Unlock(ctx))
		must(t, l.Unlock(ctx))
	})
}
