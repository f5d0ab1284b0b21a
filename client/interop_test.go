package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// javaOwner is the owner id of a Java Redisson thread, as Redisson writes
// it: "<client UUID>:<thread id>".
const javaOwner = "2f9a6c1e-8d3b-4e57-9a0c-5b7d1e3f4a26:57"

// javaLock takes a lock the way Redisson's lock script does, with plain
// commands from a raw connection: only when the hash does not exist (or
// the thread holds it already), one HINCRBY of the owner's field and a
// PEXPIRE of the lease. It reports whether it took the lock.
func javaLock(ctx context.Context, tb testing.TB, raw *redis.Client, name string, lease time.Duration) bool {
	tb.Helper()
	if raw.Exists(ctx, name).Val() == 1 && !raw.HExists(ctx, name, javaOwner).Val() {
		if pttl := raw.PTTL(ctx, name).Val(); pttl <= 0 {
			tb.Fatalf("held lock without a TTL: %v", pttl)
		}
		return false
	}
	must(tb, raw.HIncrBy(ctx, name, javaOwner, 1).Err())
	must(tb, raw.PExpire(ctx, name, lease).Err())
	return true
}

// javaUnlock releases a lock the way Redisson's unlock script does: the
// last hold deletes the hash and publishes "0" on the lock's channel.
func javaUnlock(ctx context.Context, tb testing.TB, raw *redis.Client, name string) {
	tb.Helper()
	if n := raw.HIncrBy(ctx, name, javaOwner, -1).Val(); n > 0 {
		return
	}
	must(tb, raw.Del(ctx, name).Err())
	must(tb, raw.Publish(ctx, "redisson_lock__channel:{"+name+"}", "0").Err())
}

// TestInteropRedissonHolds: a lock taken with hand-issued Redisson-layout
// commands blocks the Go client, whose waiter wakes on the Redisson-style
// release message.
func TestInteropRedissonHolds(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		raw := newRedis(t, s.addr)
		c := newClient(t, s.addr)
		if !javaLock(ctx, t, raw, "shared", 30*time.Second) {
			t.Fatal("java could not take a free lock")
		}
		l := c.NewLock("shared")
		mustFalse(t)(l.TryLock(ctx, 0, 0))
		mustTrue(t)(l.IsLocked(ctx))
		won := goDo(func() error { return l.Lock(ctx) })
		notYet(t, won, 200*time.Millisecond)
		eventually(t, 5*time.Second, "go waiter asleep", func() bool {
			return waiters(c, "redisson_lock__channel:{shared}") == 1
		})
		start := time.Now()
		javaUnlock(ctx, t, raw, "shared")
		r := within(t, won, 2*time.Second)
		must(t, r.err)
		t.Logf("go waiter woken %v after the Redisson-style release (TTL was 30s)", r.at.Sub(start))
		if d := r.at.Sub(start); d > 500*time.Millisecond {
			t.Fatalf("woken after %v", d)
		}
		fields := raw.HGetAll(ctx, "shared").Val()
		if len(fields) != 1 || fields[l.Owner().String()] != "1" {
			t.Fatalf("lock hash %v, want {%s: 1}", fields, l.Owner())
		}
		must(t, l.Unlock(ctx))
	})
}

// TestInteropGoHolds: the reverse. Redisson-layout checks see the Go
// holder's field, the lease, and are refused; a Redisson-style subscriber
// receives "0" on the lock's channel when Go unlocks, and then takes it.
func TestInteropGoHolds(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		raw := newRedis(t, s.addr)
		c := newClient(t, s.addr)
		l := c.NewLock("shared")
		must(t, l.Lock(ctx))
		must(t, l.Lock(ctx))

		owner := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:[0-9]+$`)
		fields := raw.HGetAll(ctx, "shared").Val()
		if len(fields) != 1 {
			t.Fatalf("lock hash %v", fields)
		}
		for f, v := range fields {
			if !owner.MatchString(f) || v != "2" {
				t.Fatalf("field %q = %q, want <uuid>:<thread> = 2", f, v)
			}
		}
		if pttl := raw.PTTL(ctx, "shared").Val(); pttl <= 25*time.Second || pttl > 30*time.Second {
			t.Fatalf("PTTL %v, want about 30s", pttl)
		}
		if javaLock(ctx, t, raw, "shared", 30*time.Second) {
			t.Fatal("java took a lock Go holds")
		}

		ps := raw.Subscribe(ctx, "redisson_lock__channel:{shared}")
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		must(t, l.Unlock(ctx)) // re-entered: no message yet
		must(t, l.Unlock(ctx))
		msg, err := ps.ReceiveMessage(ctxT(t, 2*time.Second))
		must(t, err)
		if msg.Payload != "0" {
			t.Fatalf("unlock message %q, want 0", msg.Payload)
		}
		if !javaLock(ctx, t, raw, "shared", 30*time.Second) {
			t.Fatal("java could not take the lock Go released")
		}
		// And Go waits for Java again.
		mustFalse(t)(l.TryLock(ctx, 50*time.Millisecond, 0))
		javaUnlock(ctx, t, raw, "shared")
		mustTrue(t)(l.TryLock(ctx, time.Second, 0))
		must(t, l.Unlock(ctx))
	})
}

// TestWireLayout checks, object by object, the keys, fields, channels and
// messages that DESIGN.md documents, with a raw subscriber and raw reads.
func TestWireLayout(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 20*time.Second)
		raw := newRedis(t, s.addr)
		c := newClient(t, s.addr)
		ps := raw.PSubscribe(ctx, "redisson*")
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		expect := func(channel, payload string) {
			t.Helper()
			m, err := ps.ReceiveMessage(ctxT(t, 2*time.Second))
			must(t, err)
			if m.Channel != channel || m.Payload != payload {
				t.Fatalf("message %q on %q, want %q on %q", m.Payload, m.Channel, payload, channel)
			}
		}
		hash := func(key string) map[string]string {
			t.Helper()
			return raw.HGetAll(ctx, key).Val()
		}

		t.Run("lock with hash tag", func(t *testing.T) {
			l := c.NewLock("{user:1}orders")
			must(t, l.Lock(ctx))
			if h := hash("{user:1}orders"); h[l.Owner().String()] != "1" || len(h) != 1 {
				t.Fatalf("hash %v", h)
			}
			must(t, l.Unlock(ctx))
			expect("redisson_lock__channel:{user:1}orders", "0")
		})

		t.Run("fenced", func(t *testing.T) {
			l := c.NewFencedLock("fl")
			tok, err := l.LockAndGetToken(ctx)
			must(t, err)
			if v := raw.Get(ctx, "redisson_lock_token:{fl}").Val(); v != strconv.FormatInt(tok, 10) {
				t.Fatalf("token key %q, token %d", v, tok)
			}
			must(t, l.Unlock(ctx))
			expect("redisson_lock__channel:{fl}", "0")
		})

		t.Run("fair", func(t *testing.T) {
			a, b := c.NewFairLock("fair"), c.NewFairLock("fair")
			must(t, a.Lock(ctx))
			waited := goDo(func() error { return b.Lock(ctx) })
			eventually(t, 5*time.Second, "queued", func() bool {
				return raw.LLen(ctx, "redisson_lock_queue:{fair}").Val() == 1
			})
			if q := raw.LRange(ctx, "redisson_lock_queue:{fair}", 0, -1).Val(); q[0] != b.Owner().String() {
				t.Fatalf("queue %v", q)
			}
			sc := raw.ZScore(ctx, "redisson_lock_timeout:{fair}", b.Owner().String()).Val()
			if d := time.Duration(int64(sc)-time.Now().UnixMilli()) * time.Millisecond; d < DefaultFairLockWaitTimeout || d > DefaultFairLockWaitTimeout+DefaultWatchdogTimeout {
				t.Fatalf("waiter deadline in %v", d)
			}
			must(t, a.Unlock(ctx))
			expect("redisson_lock__channel:{fair}:"+b.Owner().String(), "0")
			must(t, within(t, waited, 2*time.Second).err)
			must(t, b.Unlock(ctx))
			if n := raw.Exists(ctx, "fair", "redisson_lock_queue:{fair}", "redisson_lock_timeout:{fair}").Val(); n != 0 {
				t.Fatalf("%d fair lock keys left", n)
			}
		})

		t.Run("read-write", func(t *testing.T) {
			rw := c.NewReadWriteLock("rwl")
			o := rw.Owner().String()
			must(t, rw.WriteLock().Lock(ctx))
			if h := hash("rwl"); h["mode"] != "write" || h[o+":write"] != "1" {
				t.Fatalf("hash %v", h)
			}
			must(t, rw.WriteLock().Unlock(ctx))
			expect("redisson_rwlock:{rwl}", "1")
			must(t, rw.ReadLock().Lock(ctx))
			if h := hash("rwl"); h["mode"] != "read" || h[o] != "1" {
				t.Fatalf("hash %v", h)
			}
			if n := raw.Exists(ctx, "{rwl}:"+o+":rwlock_timeout:1").Val(); n != 1 {
				t.Fatal("no read timeout key")
			}
			must(t, rw.ReadLock().Unlock(ctx))
			expect("redisson_rwlock:{rwl}", "0")
		})

		t.Run("semaphore", func(t *testing.T) {
			sem := c.NewSemaphore("sem")
			mustTrue(t)(sem.TrySetPermits(ctx, 5))
			expect("redisson_sc:{sem}", "5")
			mustTrue(t)(sem.TryAcquire(ctx, 2, 0))
			if v := raw.Get(ctx, "sem").Val(); v != "3" {
				t.Fatalf("counter %q", v)
			}
			must(t, sem.Release(ctx, 1))
			expect("redisson_sc:{sem}", "4")
		})

		t.Run("permit semaphore", func(t *testing.T) {
			p := c.NewPermitExpirableSemaphore("pes")
			mustTrue(t)(p.TrySetPermits(ctx, 1))
			expect("redisson_sc:{pes}", "1")
			id, err := p.Acquire(ctx, time.Minute)
			must(t, err)
			zs := raw.ZRangeWithScores(ctx, "{pes}:timeout", 0, -1).Val()
			if len(zs) != 1 || len(zs[0].Member.(string)) != 16 {
				t.Fatalf("timeout set %v", zs)
			}
			must(t, p.Release(ctx, id))
			expect("redisson_sc:{pes}", "1")
		})

		t.Run("latch", func(t *testing.T) {
			l := c.NewCountDownLatch("cdl")
			mustTrue(t)(l.TrySetCount(ctx, 1))
			expect("redisson_countdownlatch__channel__{cdl}", "1")
			must(t, l.CountDown(ctx))
			expect("redisson_countdownlatch__channel__{cdl}", "0")
		})

		if keys := raw.Keys(ctx, "redisson_unlock_latch:*").Val(); len(keys) != 0 {
			t.Fatalf("unlock latch keys left behind: %v", keys)
		}
	})
}

// TestInteropSeedScripts contends with Redisson's own lock and unlock
// scripts, as the seed articles publish them (kept by the compat suite in
// ../compat/testdata): Go owners and "Java" owners running those scripts
// exclude each other, and a Go waiter wakes on the Java unlock's message.
func TestInteropSeedScripts(t *testing.T) {
	read := func(name string) *redis.Script {
		b, err := os.ReadFile(filepath.Join("..", "compat", "testdata", name))
		if err != nil {
			t.Skipf("seed script not available: %v", err)
		}
		return redis.NewScript(string(b))
	}
	lockScript, unlockScript := read("lock.lua"), read("unlock.lua")
	eachServer(t, func(t *testing.T, s *server) {
		ctx := ctxT(t, 60*time.Second)
		raw := newRedis(t, s.addr)
		const name = "seeded"
		channel := "redisson_lock__channel:{" + name + "}"
		var inside atomic.Int32
		var g group
		critical := func(who string) error {
			if n := inside.Add(1); n != 1 {
				return fmt.Errorf("%s inside with %d others", who, n-1)
			}
			time.Sleep(200 * time.Microsecond)
			inside.Add(-1)
			return nil
		}
		// Java threads: the seed scripts, retrying on a short sleep.
		for thread := range 3 {
			owner := fmt.Sprintf("2f9a6c1e-8d3b-4e57-9a0c-5b7d1e3f4a26:%d", thread+1)
			g.Go(func() error {
				for range 15 {
					for {
						err := lockScript.Run(ctx, raw, []string{name}, 30000, owner).Err()
						if errors.Is(err, redis.Nil) {
							break
						}
						if err != nil {
							return err
						}
						time.Sleep(time.Millisecond)
					}
					if err := critical("java " + owner); err != nil {
						return err
					}
					if v, err := unlockScript.Run(ctx, raw, []string{name, channel}, "0", 30000, owner).Int64(); err != nil || v != 1 {
						return fmt.Errorf("java unlock = %d, %v", v, err)
					}
				}
				return nil
			})
		}
		// Go owners, woken by the Java unlocks' messages.
		for p := range 2 {
			c := newClient(t, s.addr)
			for range 2 {
				l := c.NewLock(name)
				g.Go(func() error {
					for range 15 {
						if err := l.Lock(ctx); err != nil {
							return err
						}
						if err := critical(fmt.Sprintf("go %d %s", p, l.Owner())); err != nil {
							return err
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

		// A Java holder's release wakes a Go waiter at once.
		java := "2f9a6c1e-8d3b-4e57-9a0c-5b7d1e3f4a26:99"
		if err := lockScript.Run(ctx, raw, []string{name}, 30000, java).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("java lock: %v", err)
		}
		c := newClient(t, s.addr)
		l := c.NewLock(name)
		won := goDo(func() error { return l.Lock(ctx) })
		eventually(t, 5*time.Second, "go waiter asleep", func() bool { return waiters(c, channel) == 1 })
		start := time.Now()
		must(t, unlockScript.Run(ctx, raw, []string{name, channel}, "0", 30000, java).Err())
		r := within(t, won, 2*time.Second)
		must(t, r.err)
		t.Logf("go waiter woken %v after the seed unlock script", r.at.Sub(start))
		must(t, l.Unlock(ctx))
	})
}
