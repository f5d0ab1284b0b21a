package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadWriteExclusion: readers share, a writer excludes readers and
// writers, a write unlock wakes every waiting reader at once.
func TestReadWriteExclusion(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		a, b := newClient(t, s.addr), newClient(t, s.addr)
		raw := newRedis(t, s.addr)
		r1 := a.NewReadWriteLock("rw").ReadLock()
		r2 := b.NewReadWriteLock("rw").ReadLock()
		must(t, r1.Lock(ctx))
		must(t, r2.Lock(ctx))
		if m := raw.HGet(ctx, "rw", "mode").Val(); m != "read" {
			t.Fatalf("mode %q", m)
		}
		mustTrue(t)(r1.IsLocked(ctx))
		w := a.NewReadWriteLock("rw").WriteLock()
		mustFalse(t)(w.IsLocked(ctx))
		mustFalse(t)(w.TryLock(ctx, 0, 0))
		wrote := goDo(func() error { return w.Lock(ctx) })
		notYet(t, wrote, 100*time.Millisecond)
		must(t, r1.Unlock(ctx))
		notYet(t, wrote, 100*time.Millisecond)
		must(t, r2.Unlock(ctx))
		must(t, within(t, wrote, 2*time.Second).err)
		if m := raw.HGet(ctx, "rw", "mode").Val(); m != "write" {
			t.Fatalf("mode %q", m)
		}

		// Readers wait for the writer; its unlock wakes them all.
		var reads []<-chan result
		var readers []*ReadLock
		for i := range 4 {
			r := []*Client{a, b}[i%2].NewReadWriteLock("rw").ReadLock()
			readers = append(readers, r)
			reads = append(reads, goDo(func() error { return r.Lock(ctx) }))
		}
		eventually(t, 5*time.Second, "readers asleep", func() bool {
			return waiters(a, "redisson_rwlock:{rw}")+waiters(b, "redisson_rwlock:{rw}") == 4
		})
		start := time.Now()
		must(t, w.Unlock(ctx))
		for _, ch := range reads {
			r := within(t, ch, 2*time.Second)
			must(t, r.err)
			if d := r.at.Sub(start); d > 500*time.Millisecond {
				t.Fatalf("reader woken %v after the write unlock", d)
			}
		}
		for _, r := range readers {
			must(t, r.Unlock(ctx))
		}
		mustFalse(t)(r1.IsLocked(ctx))
		if n := raw.Exists(ctx, "rw").Val(); n != 0 {
			t.Fatal("lock hash left behind")
		}
		if keys := raw.Keys(ctx, "{rw}:*").Val(); len(keys) != 0 {
			t.Fatalf("timeout keys left behind: %v", keys)
		}
	})
}

// TestReadWriteDowngrade: the writer may read; a reader cannot write.
func TestReadWriteDowngrade(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 10*time.Second)
		c := newClient(t, s.addr)
		rw := c.NewReadWriteLock("down")
		w, r := rw.WriteLock(), rw.ReadLock()
		must(t, w.Lock(ctx))
		must(t, r.Lock(ctx))              // the writer reads too
		mustTrue(t)(w.TryLock(ctx, 0, 0)) // and re-enters the write lock
		must(t, w.Unlock(ctx))
		must(t, w.Unlock(ctx))
		// Now only the read hold is left, and the mode says so.
		mustTrue(t)(r.IsLocked(ctx))
		other := c.NewReadWriteLock("down").WriteLock()
		mustFalse(t)(other.TryLock(ctx, 0, 0))
		must(t, r.Unlock(ctx))
		mustTrue(t)(other.TryLock(ctx, 0, 0))
		if err := r.Unlock(ctx); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("reader Unlock while another writes = %v", err)
		}
		must(t, other.Unlock(ctx))
	})
}

// TestReadWriteStress: random readers and writers from several clients
// never see a writer together with anyone else.
func TestReadWriteStress(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 60*time.Second)
		var readersIn, writersIn atomic.Int32
		var g group
		for p := range 3 {
			c := newClient(t, s.addr)
			for i := range 3 {
				rw := c.NewReadWriteLock("stress")
				seed := uint64(p*10 + i)
				g.Go(func() error {
					rnd := rand.New(rand.NewPCG(seed, 1))
					for range 15 {
						if rnd.IntN(3) == 0 {
							w := rw.WriteLock()
							if err := w.Lock(ctx); err != nil {
								return err
							}
							if n := writersIn.Add(1); n != 1 || readersIn.Load() != 0 {
								return fmt.Errorf("writer inside with %d writers, %d readers", n, readersIn.Load())
							}
							time.Sleep(time.Millisecond)
							writersIn.Add(-1)
							if err := w.Unlock(ctx); err != nil {
								return err
							}
							continue
						}
						r := rw.ReadLock()
						if err := r.Lock(ctx); err != nil {
							return err
						}
						readersIn.Add(1)
						if n := writersIn.Load(); n != 0 {
							return fmt.Errorf("reader inside with %d writers", n)
						}
						time.Sleep(time.Millisecond)
						readersIn.Add(-1)
						if err := r.Unlock(ctx); err != nil {
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

// TestReadLockWatchdog: read holds are kept alive by the watchdog, hash
// and timeout keys alike.
func TestReadLockWatchdog(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 30*time.Second)
		const lease = 3 * time.Second // long enough for a busy CI machine, as TestWatchdog's
		c := newClient(t, s.addr, WithWatchdogTimeout(lease))
		raw := newRedis(t, s.addr)
		r := c.NewReadWriteLock("rwdog").ReadLock()
		must(t, r.Lock(ctx))
		must(t, r.Lock(ctx))
		time.Sleep(5 * lease / 2)
		for _, k := range []string{"rwdog", "{rwdog}:" + r.Owner().String() + ":rwlock_timeout:1", "{rwdog}:" + r.Owner().String() + ":rwlock_timeout:2"} {
			if d := raw.PTTL(ctx, k).Val(); d <= 0 || d > lease {
				t.Fatalf("PTTL %s = %v", k, d)
			}
		}
		must(t, r.Unlock(ctx))
		must(t, r.Unlock(ctx))
		if n := raw.Exists(ctx, "rwdog").Val(); n != 0 {
			t.Fatal("lock hash left behind")
		}
	})
}
