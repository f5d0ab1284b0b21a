package deadbolt

import (
	"context"
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
			var opt func(*redis.Options)
			if user != "default" {
				admin := redis.NewClient(&redis.Options{Addr: n.Addr()})
				err := admin.Do(context.Background(), "ACL", "SETUSER", user, "on", ">pw", "~{lock*", "~redisson_lock__channel:*",
					"&redisson_lock__channel:*", "+@all", "-@admin", "-@dangerous").Err()
				admin.Close()
				if err != nil {
					b.Fatal(err)
				}
				opt = func(o *redis.Options) { o.Username, o.Password = user, "pw" }
			}
			benchLockUnlock(b, n, opt)
		})
	}
}
