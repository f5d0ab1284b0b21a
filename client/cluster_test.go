package client

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt"
)

// TestClusterLeaderKill runs against a three-node deadbolt cluster with a
// plain client per node (followers forward to the leader). While locks
// are held and waited on, the leader is killed:
//   - a lock held through a follower stays held across the election (its
//     watchdog keeps renewing through the new leader), its waiter stays
//     out, and the unlock after the failover wakes the waiter at once;
//   - a lock held by a "process" connected to the dead leader is lost when
//     its watchdog cannot renew it, and its waiter gets it once the lease
//     has run out;
//   - owners on the followers keep excluding each other throughout.
func TestClusterLeaderKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cluster test")
	}
	cl := deadbolt.RunClusterT(t, 3)
	leader := cl.WaitLeader()
	requireScripts(t, cl.Addr(leader))
	fs := cl.Followers()
	if len(fs) != 2 {
		t.Fatalf("followers %v", fs)
	}
	const lease = 6 * time.Second // the watchdog renews every 2s
	ctx := ctxT(t, 60*time.Second)
	onNode := func(i int) *Client { return newClient(t, cl.Addr(i), WithWatchdogTimeout(lease)) }
	f0, f1, dying := onNode(fs[0]), onNode(fs[1]), onNode(leader)

	held := f0.NewLock("held")
	must(t, held.Lock(ctx))
	heldWaiter := f1.NewLock("held")
	heldWon := goDo(func() error { return heldWaiter.Lock(ctx) })

	doomed := dying.NewLock("doomed")
	must(t, doomed.Lock(ctx))
	doomedWaiter := f1.NewLock("doomed")
	doomedWon := goDo(func() error { return doomedWaiter.Lock(ctx) })

	fenced := f0.NewFencedLock("fenced")
	tokBefore, err := fenced.LockAndGetToken(ctx)
	must(t, err)
	must(t, fenced.Unlock(ctx))

	// A fair lock, a semaphore and a latch, waited on across the kill.
	fairHolder := f0.NewFairLock("fair")
	must(t, fairHolder.Lock(ctx))
	fairWaiter := f1.NewFairLock("fair")
	fairWon := goDo(func() error { return fairWaiter.Lock(ctx) })
	sem := f0.NewSemaphore("sem")
	mustTrue(t)(sem.TrySetPermits(ctx, 0))
	semGot := goDo(func() error { return f1.NewSemaphore("sem").Acquire(ctx, 1) })
	latch := f0.NewCountDownLatch("latch")
	mustTrue(t)(latch.TrySetCount(ctx, 1))
	latchOpen := goDo(func() error { return f1.NewCountDownLatch("latch").Await(ctx) })

	eventually(t, 5*time.Second, "waiters asleep", func() bool {
		return waiters(f1, "redisson_lock__channel:{held}") == 1 && waiters(f1, "redisson_lock__channel:{doomed}") == 1 &&
			waiters(f1, fairWaiter.channel) == 1 && waiters(f1, "redisson_sc:{sem}") == 1 &&
			waiters(f1, "redisson_countdownlatch__channel__{latch}") == 1
	})

	// Contention across the failover, from both followers.
	stop := make(chan struct{})
	var inside atomic.Int32
	var rounds atomic.Int64
	var g group
	for i := range 4 {
		c := []*Client{f0, f1}[i%2]
		l := c.NewLock("contended")
		g.Go(func() error {
			for {
				select {
				case <-stop:
					return nil
				default:
				}
				if err := l.Lock(ctx); err != nil {
					return fmt.Errorf("lock: %w", err)
				}
				if n := inside.Add(1); n != 1 {
					return fmt.Errorf("%d owners inside at once", n)
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := l.Unlock(ctx); err != nil {
					return fmt.Errorf("unlock: %w", err)
				}
				rounds.Add(1)
			}
		})
	}
	eventually(t, 5*time.Second, "contention under way", func() bool { return rounds.Load() >= 10 })

	killed := time.Now()
	cl.Kill(leader)
	newLeader := cl.WaitNewLeader(leader)
	t.Logf("leader %d killed; node %d leads after %v", leader, newLeader, time.Since(killed))
	before := rounds.Load()
	eventually(t, 20*time.Second, "contention resumes", func() bool { return rounds.Load() >= before+10 })

	// The lock held through a follower outlives its lease across the
	// failover, and its waiter is still out.
	time.Sleep(time.Until(killed.Add(lease + time.Second)))
	mustTrue(t)(held.IsHeld(ctx))
	select {
	case r := <-heldWon:
		t.Fatalf("waiter got a held lock during the failover (err %v)", r.err)
	default:
	}
	select {
	case <-held.Lost():
		t.Fatal("the follower's holder was told its lock was lost")
	default:
	}

	// The dead leader's holder could not renew: its lock expired and the
	// waiter has it (woken by the TTL, as nobody unlocked).
	r := within(t, doomedWon, 2*lease)
	must(t, r.err)
	t.Logf("lock of the dead leader's client taken over %v after the kill", r.at.Sub(killed))
	if d := r.at.Sub(killed); d < lease-time.Second {
		t.Fatalf("lock taken over %v after the kill, before its %v lease could run out", d, lease)
	}
	select {
	case <-doomed.Lost():
	case <-time.After(lease):
		t.Fatal("the dead leader's holder was not told it lost the lock")
	}

	// Unlocking after the failover wakes the waiter within milliseconds.
	start := time.Now()
	must(t, held.Unlock(ctx))
	r = within(t, heldWon, 2*time.Second)
	must(t, r.err)
	t.Logf("waiter woken %v after the unlock", r.at.Sub(start))
	if d := r.at.Sub(start); d > time.Second {
		t.Fatalf("waiter woken %v after the unlock", d)
	}
	must(t, heldWaiter.Unlock(ctx))
	must(t, doomedWaiter.Unlock(ctx))

	// The other waiters too: still out, and woken by their release.
	for _, w := range []struct {
		name    string
		ch      <-chan result
		release func() error
	}{
		{"fair lock", fairWon, func() error { return fairHolder.Unlock(ctx) }},
		{"semaphore", semGot, func() error { return sem.Release(ctx, 1) }},
		{"latch", latchOpen, func() error { return latch.CountDown(ctx) }},
	} {
		select {
		case r := <-w.ch:
			t.Fatalf("%s waiter passed before its release (err %v)", w.name, r.err)
		default:
		}
		start := time.Now()
		must(t, w.release())
		r := within(t, w.ch, 2*time.Second)
		must(t, r.err)
		t.Logf("%s waiter woken %v after its release", w.name, r.at.Sub(start))
	}
	must(t, fairWaiter.Unlock(ctx))

	close(stop)
	g.Wait(t)

	// Fencing tokens survive the failover.
	tokAfter, err := fenced.LockAndGetToken(ctx)
	must(t, err)
	if tokAfter <= tokBefore {
		t.Fatalf("token %d after the failover, %d before", tokAfter, tokBefore)
	}
	must(t, fenced.Unlock(ctx))

	// The killed node comes back and serves the same state.
	cl.Restart(leader)
	back := redis.NewClient(&redis.Options{Addr: cl.Addr(leader)})
	defer back.Close()
	eventually(t, 15*time.Second, "restarted node serves", func() bool {
		v, err := back.Get(ctx, "redisson_lock_token:{fenced}").Int64()
		return err == nil && v == tokAfter
	})
	t.Logf("%d contended rounds", rounds.Load())
}

// TestClusterWaitAcrossNodes: holder and waiter on different nodes, the
// wake-up message crosses from the node that applied the unlock to the
// waiter's node.
func TestClusterWaitAcrossNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cluster test")
	}
	cl := deadbolt.RunClusterT(t, 3)
	requireScripts(t, cl.Addr(cl.WaitLeader()))
	ctx := ctxT(t, 30*time.Second)
	var clients []*Client
	for i := range 3 {
		clients = append(clients, newClient(t, cl.Addr(i)))
	}
	for from := range 3 {
		to := (from + 1) % 3
		a, b := clients[from].NewLock("x"), clients[to].NewLock("x")
		must(t, a.Lock(ctx))
		won := goDo(func() error { return b.Lock(ctx) })
		eventually(t, 5*time.Second, "waiter asleep", func() bool { return waiters(clients[to], "redisson_lock__channel:{x}") == 1 })
		start := time.Now()
		must(t, a.Unlock(ctx))
		r := within(t, won, 2*time.Second)
		must(t, r.err)
		t.Logf("node %d → node %d: woken %v after unlock", from, to, r.at.Sub(start))
		must(t, b.Unlock(ctx))
	}
	// Semaphores and latches too.
	sem := clients[0].NewSemaphore("s")
	mustTrue(t)(sem.TrySetPermits(ctx, 0))
	got := goDo(func() error { return clients[2].NewSemaphore("s").Acquire(ctx, 1) })
	latch := clients[1].NewCountDownLatch("l")
	mustTrue(t)(latch.TrySetCount(ctx, 1))
	opened := goDo(func() error { return clients[2].NewCountDownLatch("l").Await(ctx) })
	notYet(t, got, 50*time.Millisecond)
	must(t, sem.Release(ctx, 1))
	must(t, within(t, got, 2*time.Second).err)
	must(t, latch.CountDown(ctx))
	must(t, within(t, opened, 2*time.Second).err)
	if err := clients[0].NewLock("x").Unlock(ctx); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("unlock by a stranger: %v", err)
	}

	// The other go-redis modes (redis.UniversalClient): cluster mode and
	// Sentinel (failover) mode find the leader through deadbolt's
	// discovery answers; a plain per-node client holds, they wait.
	addrs := []string{cl.Addr(0), cl.Addr(1), cl.Addr(2)}
	modes := []struct {
		name string
		rdb  redis.UniversalClient
	}{
		{"cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})},
		{"sentinel", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: addrs})},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			defer m.rdb.Close()
			if err := m.rdb.Ping(ctx).Err(); err != nil {
				t.Skipf("%s discovery not available: %v", m.name, err)
			}
			c := New(m.rdb)
			defer c.Close()
			holder := clients[0].NewLock("{modes}lock")
			must(t, holder.Lock(ctx))
			l := c.NewLock("{modes}lock")
			mustFalse(t)(l.TryLock(ctx, 0, 0))
			won := goDo(func() error { return l.Lock(ctx) })
			eventually(t, 5*time.Second, "waiter asleep", func() bool {
				return waiters(c, "redisson_lock__channel:{modes}lock") == 1
			})
			start := time.Now()
			must(t, holder.Unlock(ctx))
			r := within(t, won, 2*time.Second)
			must(t, r.err)
			t.Logf("%s-mode waiter woken %v after unlock", m.name, r.at.Sub(start))
			rw := c.NewReadWriteLock("{modes}rw")
			must(t, rw.ReadLock().Lock(ctx))
			must(t, rw.ReadLock().Unlock(ctx))
			must(t, l.Unlock(ctx))
		})
	}
}
