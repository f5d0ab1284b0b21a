package client

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// threeServers starts three independent servers of one kind, each with a
// client for "us" and one for "them".
func threeServers(t *testing.T, kind string) (us, them []*Client) {
	for range 3 {
		s := startServer(t, kind)
		us = append(us, newClient(t, s.addr))
		them = append(them, newClient(t, s.addr))
	}
	return us, them
}

func locksOn(cs []*Client, names ...string) []Locker {
	var ls []Locker
	for i, c := range cs {
		ls = append(ls, c.NewLock(names[i]))
	}
	return ls
}

func TestMultiLock(t *testing.T) {
	t.Parallel()
	for _, kind := range serverKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			us, them := threeServers(t, kind)
			names := []string{"a", "b", "c"}
			m := NewMultiLock(locksOn(us, names...)...)
			if m.Name() != "a,b,c" {
				t.Fatalf("Name %q", m.Name())
			}
			must(t, m.Lock(ctx))
			for i, c := range us {
				mustTrue(t)(c.NewLock(names[i]).IsLocked(ctx))
			}
			other := NewMultiLock(locksOn(them, names...)...)
			mustFalse(t)(other.TryLock(ctx, 0, 0))
			must(t, m.Unlock(ctx))

			// One lock held elsewhere: the attempt fails within its
			// wait and leaves nothing behind.
			c := them[2].NewLock("c")
			must(t, c.Lock(ctx))
			start := time.Now()
			mustFalse(t)(m.TryLock(ctx, 300*time.Millisecond, 0))
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("TryLock took %v", d)
			}
			for i := range 2 {
				mustFalse(t)(us[i].NewLock(names[i]).IsLocked(ctx))
			}
			// It is released while we wait: we get all three.
			got := goDo(func() error { return m.Lock(ctx) })
			notYet(t, got, 100*time.Millisecond)
			must(t, c.Unlock(ctx))
			must(t, within(t, got, 5*time.Second).err)

			// Re-entry goes through to every lock.
			must(t, m.Lock(ctx))
			for _, l := range m.Locks() {
				if n, _ := l.(*Lock).HoldCount(ctx); n != 2 {
					t.Fatalf("%s hold count %d", l.Name(), n)
				}
			}
			must(t, m.Unlock(ctx))
			must(t, m.Unlock(ctx))

			// A lease is applied to every lock once all are held.
			mustTrue(t)(m.TryLock(ctx, time.Second, 500*time.Millisecond))
			for _, l := range m.Locks() {
				ttl, err := l.(*Lock).RemainTTL(ctx)
				must(t, err)
				if ttl <= 0 || ttl > 500*time.Millisecond {
					t.Fatalf("%s TTL %v, want ≤ 500ms", l.Name(), ttl)
				}
			}
			must(t, m.Unlock(ctx))
			if err := m.Unlock(ctx); err == nil {
				t.Fatal("Unlock of a free MultiLock succeeded")
			}
			if err := NewMultiLock().Lock(ctx); err != ErrNoLocks {
				t.Fatalf("empty MultiLock: %v", err)
			}
		})
	}
}

func TestRedLock(t *testing.T) {
	t.Parallel()
	for _, kind := range serverKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			us, them := threeServers(t, kind)
			// The third server is down for us: two of three is a majority.
			deadRedis := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialerRetries: 1, MaxRetries: -1})
			t.Cleanup(func() { deadRedis.Close() })
			down := New(deadRedis)
			t.Cleanup(func() { down.Close() })
			r := NewRedLock(us[0].NewLock("red"), us[1].NewLock("red"), down.NewLock("red"))
			mustTrue(t)(r.TryLock(ctx, time.Second, 0))
			mustTrue(t)(us[0].NewLock("red").IsLocked(ctx))
			mustTrue(t)(us[1].NewLock("red").IsLocked(ctx))

			// A contender that can reach all three gets one: no majority.
			other := NewRedLock(them[0].NewLock("red"), them[1].NewLock("red"), them[2].NewLock("red"))
			mustFalse(t)(other.TryLock(ctx, 200*time.Millisecond, 0))
			mustFalse(t)(them[2].NewLock("red").IsLocked(ctx))
			must(t, r.Unlock(ctx))
			mustTrue(t)(other.TryLock(ctx, time.Second, 2*time.Second))
			must(t, other.Unlock(ctx))
		})
	}
}
