package client

import (
	"context"
	"testing"
	"time"
)

// BenchmarkLockUnlock: one owner takes and releases an uncontended lock,
// with the watchdog and with a lease (the watchdog adds no round trip,
// only a goroutine per hold). An iteration is three round trips: the
// lock script, the unlock script and the DEL of the unlock latch (a
// SpinLock unlock needs no latch: two).
func BenchmarkLockUnlock(b *testing.B) {
	for _, kind := range serverKinds {
		b.Run(kind, func(b *testing.B) {
			s := startServer(b, kind)
			c := newClient(b, s.addr)
			ctx := context.Background()
			l := c.NewLock("bench")
			b.Run("watchdog", func(b *testing.B) {
				for b.Loop() {
					if err := l.Lock(ctx); err != nil {
						b.Fatal(err)
					}
					if err := l.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("lease", func(b *testing.B) {
				for b.Loop() {
					if _, err := l.TryLock(ctx, 0, 10*time.Second); err != nil {
						b.Fatal(err)
					}
					if err := l.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			sl := c.NewSpinLock("bench-spin")
			b.Run("spin", func(b *testing.B) {
				for b.Loop() {
					if _, err := sl.TryLock(ctx, 0, 10*time.Second); err != nil {
						b.Fatal(err)
					}
					if err := sl.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					l := c.NewLock("bench-" + c.NewOwner().String()) // one lock per goroutine: uncontended
					for pb.Next() {
						if _, err := l.TryLock(ctx, 0, 10*time.Second); err != nil {
							b.Fatal(err)
						}
						if err := l.Unlock(ctx); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		})
	}
}
