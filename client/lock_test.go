package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// mutex is what the exclusive locks have in common.
type mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

var exclusiveKinds = []struct {
	name string
	make func(c *Client, name string) mutex
}{
	{"lock", func(c *Client, n string) mutex { return c.NewLock(n) }},
	{"fair", func(c *Client, n string) mutex { return c.NewFairLock(n) }},
	{"fenced", func(c *Client, n string) mutex { return c.NewFencedLock(n) }},
	{"spin", func(c *Client, n string) mutex { return c.NewSpinLock(n) }},
	{"write", func(c *Client, n string) mutex { return c.NewReadWriteLock(n).WriteLock() }},
}

// TestMutualExclusion: 4 clients (processes) × 4 goroutines, each with
// its own handle, increment a counter in the server with GET then SET
// under the lock; a lost update or two goroutines inside at once fails.
func TestMutualExclusion(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		for _, kind := range exclusiveKinds {
			t.Run(kind.name, func(t *testing.T) {
				testMutualExclusion(t, s.addr, kind.name, kind.make, 4, 4, 12)
			})
		}
	})
}

func testMutualExclusion(t *testing.T, addr, name string, mk func(*Client, string) mutex, procs, perProc, iters int) {
	ctx := ctxT(t, 60*time.Second)
	raw := newRedis(t, addr)
	counter := "counter:" + name
	var inside atomic.Int32
	var g group
	for p := 0; p < procs; p++ {
		c := newClient(t, addr)
		for range perProc {
			l := mk(c, "mutex:"+name)
			g.Go(func() error {
				for range iters {
					if err := l.Lock(ctx); err != nil {
						return err
					}
					if n := inside.Add(1); n != 1 {
						return fmt.Errorf("%d owners inside at once", n)
					}
					v, err := raw.Get(ctx, counter).Int()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					if err := raw.Set(ctx, counter, v+1, 0).Err(); err != nil {
						return err
					}
					inside.Add(-1)
					if err := l.Unlock(ctx); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	g.Wait(t)
	got, err := raw.Get(ctx, counter).Int()
	must(t, err)
	if want := procs * perProc * iters; got != want {
		t.Fatalf("counter = %d, want %d (lost updates)", got, want)
	}
}

func TestReentry(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		c := newClient(t, s.addr)
		raw := newRedis(t, s.addr)
		l := c.NewLock("re")
		for range 3 {
			must(t, l.Lock(ctx))
		}
		wantHolds(t, l, 3)
		if v := raw.HGet(ctx, "re", l.Owner().String()).Val(); v != "3" {
			t.Fatalf("field %s = %q, want 3", l.Owner(), v)
		}

		// Another owner of the same client is kept out and cannot unlock.
		other := c.NewLock("re")
		mustFalse(t)(other.TryLock(ctx, 0, 0))
		if err := other.Unlock(ctx); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("other.Unlock = %v, want ErrNotOwner", err)
		}

		// A handle with the same owner re-enters, and so does the first
		// handle from another goroutine.
		same := c.NewLock("re", WithOwner(l.Owner()))
		mustTrue(t)(same.TryLock(ctx, 0, 0))
		r := within(t, goDo(func() error { return l.Lock(ctx) }), 5*time.Second)
		must(t, r.err)
		wantHolds(t, l, 5)

		for range 4 {
			must(t, same.Unlock(ctx))
		}
		wantHolds(t, l, 1)
		mustTrue(t)(l.IsLocked(ctx))
		ttl, err := l.RemainTTL(ctx)
		must(t, err)
		if ttl <= 25*time.Second || ttl > DefaultWatchdogTimeout {
			t.Fatalf("RemainTTL = %v, want about %v", ttl, DefaultWatchdogTimeout)
		}
		must(t, l.Unlock(ctx))
		mustFalse(t)(l.IsLocked(ctx))
		wantHolds(t, l, 0)
		if err := l.Unlock(ctx); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("Unlock of a free lock = %v, want ErrNotOwner", err)
		}
		if ttl, err := l.RemainTTL(ctx); err != nil || ttl != 0 {
			t.Fatalf("RemainTTL of a free lock = %v, %v", ttl, err)
		}
	})
}

func wantHolds(tb testing.TB, l *Lock, want int) {
	tb.Helper()
	n, err := l.HoldCount(context.Background())
	must(tb, err)
	if n != want {
		tb.Fatalf("HoldCount = %d, want %d", n, want)
	}
}

// TestWatchdog: a lock taken without a lease outlives many leases while
// held, and its lease stays short.
func TestWatchdog(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 30*time.Second)
		// Renewed every second: a lease long enough that a busy CI
		// machine (the race detector, every package's tests at once)
		// does not stall the renewals past it, as it did a 500 ms one
		// and, once in a CI run, a 1.5 s one.
		const lease = 3 * time.Second
		c := newClient(t, s.addr, WithWatchdogTimeout(lease))
		l := c.NewLock("wd")
		must(t, l.Lock(ctx))
		time.Sleep(5 * lease / 2)
		mustTrue(t)(l.IsHeld(ctx))
		ttl, err := l.RemainTTL(ctx)
		must(t, err)
		if ttl <= 0 || ttl > lease {
			t.Fatalf("RemainTTL = %v, want in (0, %v]", ttl, lease)
		}
		mustFalse(t)(newClient(t, s.addr).NewLock("wd").TryLock(ctx, 0, 0))
		select {
		case <-l.Lost():
			t.Fatal("Lost closed while held")
		default:
		}
		must(t, l.Unlock(ctx))
		if l.Lost() != nil {
			t.Fatal("Lost not nil after Unlock")
		}
	})
}

// TestWatchdogStops: when the watchdog stops (the process is gone), the
// lock expires after one lease and a waiter gets it.
func TestWatchdogStops(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		const lease = 1500 * time.Millisecond // long enough for a busy CI machine, as TestWatchdog's
		a := newClient(t, s.addr, WithWatchdogTimeout(lease))
		b := newClient(t, s.addr, WithWatchdogTimeout(lease))
		la := a.NewLock("gone")
		must(t, la.Lock(ctx))
		won := goDo(func() error { return b.NewLock("gone").Lock(ctx) })
		notYet(t, won, 2*lease) // the watchdog keeps it
		stopped := time.Now()
		a.Close()
		r := within(t, won, lease+3*time.Second)
		must(t, r.err)
		if d := r.at.Sub(stopped); d > lease+time.Second {
			t.Errorf("waiter got the lock %v after the watchdog stopped, want within about one lease (%v)", d, lease)
		}
		if err := la.Unlock(ctx); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Unlock after the lock expired = %v, want ErrLockLost", err)
		}
	})
}

// TestLost: the watchdog notices a lock taken away and says so.
func TestLost(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		c := newClient(t, s.addr, WithWatchdogTimeout(300*time.Millisecond))
		l := c.NewLock("lost")
		must(t, l.Lock(ctx))
		lost := l.Lost()
		if lost == nil {
			t.Fatal("Lost is nil while held")
		}
		mustTrue(t)(newClient(t, s.addr).NewLock("lost").ForceUnlock(ctx))
		select {
		case <-lost:
		case <-time.After(2 * time.Second):
			t.Fatal("Lost not closed after the lock was taken away")
		}
		if err := l.Unlock(ctx); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Unlock = %v, want ErrLockLost", err)
		}
		// A lease that runs out is lost too.
		mustTrue(t)(l.TryLock(ctx, 0, 100*time.Millisecond))
		s.advance(t, 150*time.Millisecond)
		if err := l.Unlock(ctx); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Unlock after the lease = %v, want ErrLockLost", err)
		}
	})
}

// TestWakeOnUnlock: a waiter is woken by the unlock message within
// milliseconds, not by the holder's 30 s TTL.
func TestWakeOnUnlock(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		a, b := newClient(t, s.addr), newClient(t, s.addr)
		la, lb := a.NewLock("wake"), b.NewLock("wake")
		must(t, la.Lock(ctx))
		for round := range 3 {
			won := goDo(func() error { return lb.Lock(ctx) })
			eventually(t, 5*time.Second, "waiter asleep", func() bool { return waiters(b, lb.channel) == 1 })
			start := time.Now()
			must(t, la.Unlock(ctx))
			r := within(t, won, 5*time.Second)
			must(t, r.err)
			d := r.at.Sub(start)
			t.Logf("round %d: woken %v after unlock", round, d)
			if d > 500*time.Millisecond {
				t.Fatalf("woken %v after unlock; the TTL was 30s", d)
			}
			must(t, lb.Unlock(ctx))
			must(t, la.Lock(ctx))
		}
		must(t, la.Unlock(ctx))
	})
}

func TestTryLockTimesOut(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		c := newClient(t, s.addr)
		must(t, c.NewLock("busy").Lock(ctx))
		l := c.NewLock("busy")
		start := time.Now()
		mustFalse(t)(l.TryLock(ctx, 200*time.Millisecond, 0))
		if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
			t.Fatalf("TryLock gave up after %v, want about 200ms", d)
		}
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := l.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock with an expiring context = %v", err)
		}
		if subscribed(c, l.channel) {
			t.Fatal("subscription left behind")
		}
		// A lease, not the watchdog: the lock expires by itself.
		other := c.NewLock("leased")
		mustTrue(t)(other.TryLock(ctx, 0, 200*time.Millisecond))
		ttl, err := other.RemainTTL(ctx)
		must(t, err)
		if ttl <= 0 || ttl > 200*time.Millisecond {
			t.Fatalf("RemainTTL = %v", ttl)
		}
		s.advance(t, 250*time.Millisecond)
		mustFalse(t)(other.IsLocked(ctx))
	})
}

// TestUnlockLatch: an unlock retried with the same latch key answers as
// the first time and does not release a second hold.
func TestUnlockLatch(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		c := newClient(t, s.addr)
		raw := newRedis(t, s.addr)
		l := c.NewLock("latched")
		must(t, l.Lock(ctx))
		must(t, l.Lock(ctx))
		latch := "redisson_unlock_latch:{latched}:req-1"
		unlock := func() (int64, error) {
			return c.run(ctx, scriptUnlock, []string{l.name, l.channel, latch},
				"0", 30000, l.field, "PUBLISH", 15000).Int64()
		}
		for range 3 {
			n, err := unlock()
			must(t, err)
			if n != 0 {
				t.Fatalf("unlock = %d, want 0", n)
			}
		}
		wantHolds(t, l, 1)
		if pttl := raw.PTTL(ctx, latch).Val(); pttl <= 0 || pttl > 15*time.Second {
			t.Fatalf("latch PTTL = %v", pttl)
		}
		// A normal Unlock leaves no latch behind.
		must(t, l.Unlock(ctx))
		if n := raw.Exists(ctx, latch).Val(); n != 1 {
			t.Fatal("the hand-made latch vanished")
		}
		keys := raw.Keys(ctx, "redisson_unlock_latch:*").Val()
		if len(keys) != 1 {
			t.Fatalf("latch keys = %v, want only the hand-made one", keys)
		}
	})
}

func TestForceUnlockWakes(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		a, b := newClient(t, s.addr), newClient(t, s.addr)
		must(t, a.NewLock("force").Lock(ctx))
		lb := b.NewLock("force")
		won := goDo(func() error { return lb.Lock(ctx) })
		eventually(t, 5*time.Second, "waiter asleep", func() bool { return waiters(b, lb.channel) == 1 })
		mustTrue(t)(a.NewLock("force").ForceUnlock(ctx))
		must(t, within(t, won, time.Second).err)
		mustTrue(t)(lb.IsHeld(ctx))
		mustFalse(t)(b.NewLock("nothing").ForceUnlock(ctx))
	})
}

func TestClosedClient(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		a, b := newClient(t, s.addr), newClient(t, s.addr)
		must(t, a.NewLock("closing").Lock(ctx))
		lb := b.NewLock("closing")
		waiting := goDo(func() error { return lb.Lock(ctx) })
		eventually(t, 5*time.Second, "waiter asleep", func() bool { return waiters(b, lb.channel) == 1 })
		b.Close()
		if r := within(t, waiting, time.Second); !errors.Is(r.err, ErrClosed) {
			t.Fatalf("waiter of a closed client: %v", r.err)
		}
		if err := lb.Lock(ctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("Lock on a closed client: %v", err)
		}
	})
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{prefixName("redisson_lock__channel", "orders"), "redisson_lock__channel:{orders}"},
		{prefixName("redisson_lock__channel", "{user}:orders"), "redisson_lock__channel:{user}:orders"},
		{suffixName("sem", "timeout"), "{sem}:timeout"},
		{suffixName("a{b}c", "timeout"), "a{b}c:timeout"},
		{tagged("rw"), "{rw}"},
		{tagged("{t}rw"), "{t}rw"},
		{OwnerOf("u", 7).String(), "u:7"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	c := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	defer c.Close()
	o1, o2 := c.NewOwner(), c.NewOwner()
	if o1 == o2 || o1.UUID() != c.ID() || o2.Thread() != o1.Thread()+1 {
		t.Fatalf("owners %v %v", o1, o2)
	}
	if _, err := strconv.ParseInt(c.NewLock("x").Owner().String()[len(c.ID())+1:], 10, 64); err != nil {
		t.Fatal(err)
	}
}
