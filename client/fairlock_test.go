package client

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFairOrder: waiters get the lock in the order they queued, across
// clients.
func TestFairOrder(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		clients := []*Client{newClient(t, s.addr), newClient(t, s.addr)}
		holder := clients[0].NewFairLock("fair")
		must(t, holder.Lock(ctx))
		const n = 6
		order := make(chan int, n)
		var g group
		for i := range n {
			l := clients[i%2].NewFairLock("fair")
			g.Go(func() error {
				if err := l.Lock(ctx); err != nil {
					return err
				}
				order <- i
				time.Sleep(2 * time.Millisecond)
				return l.Unlock(ctx)
			})
			eventually(t, 5*time.Second, "waiter queued", func() bool {
				n, err := holder.QueueLength(ctx)
				return err == nil && n == int64(i+1)
			})
		}
		must(t, holder.Unlock(ctx))
		g.Wait(t)
		close(order)
		want := 0
		for got := range order {
			if got != want {
				t.Fatalf("waiter %d got the lock in turn %d", got, want)
			}
			want++
		}
		if n, _ := holder.QueueLength(ctx); n != 0 {
			t.Fatalf("queue length %d after all took their turn", n)
		}
	})
}

// TestFairStaleWaiter: a waiter that stopped asking (its process died) is
// evicted from the head of the queue once its deadline passes, and the
// next waiter gets the lock.
func TestFairStaleWaiter(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		const wait = 300 * time.Millisecond
		c := newClient(t, s.addr, WithFairLockWaitTimeout(wait))
		raw := newRedis(t, s.addr)
		holder := c.NewFairLock("stale")
		must(t, holder.Lock(ctx))

		// A dead Redisson waiter, queued as Redisson queues one.
		dead := "9c4b7c5e-0000-4000-8000-00000000dead:1"
		deadline := time.Now().UnixMilli() + wait.Milliseconds()
		must(t, raw.RPush(ctx, "redisson_lock_queue:{stale}", dead).Err())
		must(t, raw.ZAdd(ctx, "redisson_lock_timeout:{stale}", redis.Z{Score: float64(deadline), Member: dead}).Err())

		live := c.NewFairLock("stale")
		won := goDo(func() error { return live.Lock(ctx) })
		eventually(t, 5*time.Second, "live waiter queued", func() bool {
			n, err := holder.QueueLength(ctx)
			return err == nil && n == 2
		})
		must(t, holder.Unlock(ctx)) // wakes the dead waiter, who never comes
		r := within(t, won, 5*time.Second)
		must(t, r.err)
		if late := r.at.UnixMilli() - deadline; late < -50 {
			t.Fatalf("live waiter overtook the dead one %d ms before its deadline", -late)
		}
		if n, _ := holder.QueueLength(ctx); n != 0 {
			t.Fatalf("queue length %d, want 0", n)
		}
		if n := raw.ZCard(ctx, "redisson_lock_timeout:{stale}").Val(); n != 0 {
			t.Fatalf("timeout set has %d members", n)
		}
		must(t, live.Unlock(ctx))
	})
}

// TestFairGiveUp: a waiter that gives up leaves the queue, and the next
// one is woken when the lock is free.
func TestFairGiveUp(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		c := newClient(t, s.addr)
		holder := c.NewFairLock("giveup")
		mustTrue(t)(holder.TryLock(ctx, 0, 0))
		quitter := c.NewFairLock("giveup")
		mustFalse(t)(quitter.TryLock(ctx, 150*time.Millisecond, 0))
		if n, _ := holder.QueueLength(ctx); n != 0 {
			t.Fatalf("queue length %d after the waiter gave up", n)
		}
		// TryLock without wait does not queue.
		mustFalse(t)(quitter.TryLock(ctx, 0, 0))
		if n, _ := holder.QueueLength(ctx); n != 0 {
			t.Fatalf("queue length %d after a TryLock without wait", n)
		}
		must(t, holder.Unlock(ctx))
		if err := holder.Unlock(ctx); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("second Unlock = %v", err)
		}
		// Re-entry and the hold count.
		for i := range 3 {
			must(t, holder.Lock(ctx))
			if n, _ := holder.HoldCount(ctx); n != i+1 {
				t.Fatalf("HoldCount %d, want %d", n, i+1)
			}
		}
		mustTrue(t)(holder.ForceUnlock(ctx))
		if err := holder.Unlock(ctx); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Unlock after ForceUnlock = %v, want ErrLockLost", err)
		}
	})
}

// TestFairWakeOnUnlock: the head waiter is woken by the message on its own
// channel, not by a timer.
func TestFairWakeOnUnlock(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		a, b := newClient(t, s.addr), newClient(t, s.addr)
		la, lb := a.NewFairLock("fairwake"), b.NewFairLock("fairwake")
		must(t, la.Lock(ctx))
		won := goDo(func() error { return lb.Lock(ctx) })
		ch := "redisson_lock__channel:{fairwake}:" + lb.Owner().String()
		if lb.channel != ch {
			t.Fatalf("waiter channel %q, want %q", lb.channel, ch)
		}
		eventually(t, 5*time.Second, "waiter asleep", func() bool { return waiters(b, ch) == 1 })
		start := time.Now()
		must(t, la.Unlock(ctx))
		r := within(t, won, 5*time.Second)
		must(t, r.err)
		t.Logf("woken %v after unlock", r.at.Sub(start))
		if d := r.at.Sub(start); d > 500*time.Millisecond {
			t.Fatalf("woken %v after unlock", d)
		}
		must(t, lb.Unlock(ctx))
	})
}
