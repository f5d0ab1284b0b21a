package deadbolt

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkLockUnlock runs the Redisson-style lock+unlock pair (EVALSHA)
// end to end through go-redis against an in-process node, with 64
// parallel clients each on its own lock.
func BenchmarkLockUnlock(b *testing.B) {
	n := RunT(b)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), PoolSize: 64})
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
}
