package deadbolt

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkLockUnlockACL is BenchmarkLockUnlock's pair as the default user
// (no check) and as a user limited to the lock keys and channels, whose
// commands and every redis.call of their scripts are checked: the cost of
// ACLs on the lock path.
func BenchmarkLockUnlockACL(b *testing.B) {
	for _, user := range []string{"default", "locker"} {
		b.Run(user, func(b *testing.B) {
			n := RunT(b)
			ctx := context.Background()
			opt := &redis.Options{Addr: n.Addr(), PoolSize: 64}
			if user != "default" {
				admin := redis.NewClient(&redis.Options{Addr: n.Addr()})
				err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~{lock*", "~redisson_lock__channel:*",
					"&redisson_lock__channel:*", "+@all", "-@admin", "-@dangerous").Err()
				admin.Close()
				if err != nil {
					b.Fatal(err)
				}
				opt.Username, opt.Password = user, "pw"
			}
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			lock, unlock := redis.NewScript(rLock), redis.NewScript(rUnlock)
			if err := lock.Load(ctx, rdb).Err(); err != nil {
				b.Fatal(err)
			}
			if err := unlock.Load(ctx, rdb).Err(); err != nil {
				b.Fatal(err)
			}
			var id atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			cpu0 := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
			b.RunParallel(func(pb *testing.PB) {
				me := id.Add(1)
				key := fmt.Sprintf("{lock%d}", me)
				owner := fmt.Sprintf("uuid:%d", me)
				for pb.Next() {
					if err := lock.EvalSha(ctx, rdb, []string{key}, 30000, owner).Err(); err != redis.Nil {
						b.Fatal(err)
					}
					if err := unlock.EvalSha(ctx, rdb, []string{key, "redisson_lock__channel:" + key}, 0, 30000, owner).Err(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
