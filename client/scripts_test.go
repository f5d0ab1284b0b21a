package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestScriptsDifferential runs every script through one transcript on
// deadbolt and on redis-server and compares the replies and the final
// keyspace. Times passed in ARGV are fixed; server-side TTLs may differ
// by a little.
func TestScriptsDifferential(t *testing.T) {
	var outs [][]string
	for _, kind := range serverKinds {
		s := startServer(t, kind)
		// RESP2 on both sides (deadbolt speaks RESP2; redis-server would
		// answer go-redis's HELLO 3 and shape some replies differently).
		rdb := redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2})
		t.Cleanup(func() { rdb.Close() })
		outs = append(outs, scriptTranscript(t, rdb))
	}
	a, b := outs[0], outs[1]
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if !similar(x, y) {
			t.Errorf("step %d:\n  deadbolt: %s\n  redis:    %s", i, x, y)
		}
	}
}

// similar compares two rendered replies, letting numbers that come from
// a server-side TTL differ by up to 250 (ms).
func similar(x, y string) bool {
	if x == y {
		return true
	}
	fx, fy := strings.Fields(x), strings.Fields(y)
	if len(fx) != len(fy) {
		return false
	}
	for i := range fx {
		if fx[i] == fy[i] {
			continue
		}
		var a, b int64
		if _, err := fmt.Sscan(strings.Trim(fx[i], `[]{}:,"`), &a); err != nil {
			return false
		}
		if _, err := fmt.Sscan(strings.Trim(fy[i], `[]{}:,"`), &b); err != nil {
			return false
		}
		if a < 0 || b < 0 || a-b > 250 || b-a > 250 {
			return false
		}
	}
	return true
}

func scriptTranscript(t *testing.T, rdb *redis.Client) []string {
	ctx := ctxT(t, 20*time.Second)
	var out []string
	step := func(name string, s *redis.Script, keys []string, args ...any) {
		v, err := s.Run(ctx, rdb, keys, args...).Result()
		out = append(out, fmt.Sprintf("%s: %s", name, render(v, err)))
	}
	const now = 1795342092073
	const pub = "PUBLISH"

	// Reentrant and fenced locks.
	lk := []string{"L", "redisson_lock__channel:{L}", "redisson_unlock_latch:{L}:r1"}
	step("lock a", scriptLock, lk[:1], 30000, "a:1")
	step("lock a again", scriptLock, lk[:1], 30000, "a:1")
	step("lock b", scriptLock, lk[:1], 30000, "b:1")
	step("renew b", scriptRenew, lk[:1], 20000, "b:1")
	step("renew a", scriptRenew, lk[:1], 20000, "a:1")
	step("unlock b", scriptUnlock, lk, "0", 30000, "b:1", pub, 15000)
	step("unlock a", scriptUnlock, lk, "0", 30000, "a:1", pub, 15000)
	step("unlock a, same latch", scriptUnlock, lk, "0", 30000, "a:1", pub, 15000)
	lk[2] = "redisson_unlock_latch:{L}:r2"
	step("unlock a", scriptUnlock, lk, "0", 30000, "a:1", pub, 15000)
	step("force unlock free", scriptForceUnlock, lk[:2], "0", pub)
	step("spin lock", scriptLock, []string{"S"}, 30000, "a:1")
	step("spin unlock b", scriptSpinUnlock, []string{"S"}, 30000, "b:1")
	step("spin unlock a", scriptSpinUnlock, []string{"S"}, 30000, "a:1")
	fk := []string{"F", "redisson_lock_token:{F}"}
	step("fenced a", scriptFencedLock, fk, 30000, "a:1")
	step("fenced a again", scriptFencedLock, fk, 30000, "a:1")
	step("fenced b", scriptFencedLock, fk, 30000, "b:1")

	// Fair lock, with the client clock fixed.
	fair := []string{"Q", "redisson_lock_queue:{Q}", "redisson_lock_timeout:{Q}"}
	fairUnlock := append(slices.Clone(fair), "redisson_lock__channel:{Q}", "redisson_unlock_latch:{Q}:r1")
	step("fair a", scriptFairLock, fair, 30000, "a:1", 300000, now)
	step("fair b queues", scriptFairLock, fair, 30000, "b:1", 300000, now)
	step("fair c queues", scriptFairLock, fair, 30000, "c:1", 300000, now+1)
	step("fair c again", scriptFairLock, fair, 30000, "c:1", 300000, now+2)
	step("fair try d", scriptFairTryLock, fair, 30000, "d:1", 300000, now+3)
	step("fair cancel b", scriptFairCancel, []string{"Q", fair[1], fair[2], "redisson_lock__channel:{Q}"}, "b:1", 300000, "0", pub)
	step("fair unlock a", scriptFairUnlock, fairUnlock, "0", 30000, "a:1", now+4, pub, 15000)
	step("fair c", scriptFairLock, fair, 30000, "c:1", 300000, now+5)
	step("fair e queues", scriptFairLock, fair, 30000, "e:1", 300000, now+6)
	step("fair e stale, f evicts", scriptFairLock, fair, 30000, "f:1", 300000, now+10000000)
	step("fair force", scriptFairForceUnlock, fairUnlock[:4], "0", "", "", now+10000001, pub)

	// Read-write lock.
	rw := "RW"
	rk := func(o string) []string { return []string{rw, "{RW}:" + o + ":rwlock_timeout"} }
	ru := func(o, req string) []string {
		return []string{rw, "redisson_rwlock:{RW}", "{RW}:" + o + ":rwlock_timeout", "{RW}", "redisson_unlock_latch:{RW}:" + req}
	}
	wu := func(req string) []string {
		return []string{rw, "redisson_rwlock:{RW}", "redisson_unlock_latch:{RW}:" + req}
	}
	step("read a", scriptReadLock, rk("a:1"), 30000, "a:1", "a:1:write")
	step("read a again", scriptReadLock, rk("a:1"), 20000, "a:1", "a:1:write")
	step("read b", scriptReadLock, rk("b:1"), 30000, "b:1", "b:1:write")
	step("write c", scriptWriteLock, []string{rw}, 30000, "c:1:write")
	step("renew read a", scriptReadRenew, []string{rw, "{RW}"}, 40000, "a:1")
	step("read unlock a", scriptReadUnlock, ru("a:1", "r1"), "0", "a:1", pub, 15000)
	step("read unlock a", scriptReadUnlock, ru("a:1", "r2"), "0", "a:1", pub, 15000)
	step("read unlock b", scriptReadUnlock, ru("b:1", "r3"), "0", "b:1", pub, 15000)
	step("write c", scriptWriteLock, []string{rw}, 30000, "c:1:write")
	step("write c again", scriptWriteLock, []string{rw}, 30000, "c:1:write")
	step("read c (downgrade)", scriptReadLock, rk("c:1"), 30000, "c:1", "c:1:write")
	step("write unlock c", scriptWriteUnlock, wu("r4"), "1", 30000, "c:1:write", pub, 15000)
	step("write unlock c", scriptWriteUnlock, wu("r5"), "1", 30000, "c:1:write", pub, 15000)
	step("write d", scriptWriteLock, []string{rw}, 30000, "d:1:write")
	step("read unlock c", scriptReadUnlock, ru("c:1", "r6"), "0", "c:1", pub, 15000)
	step("force write", scriptRWForceUnlock, []string{rw, "redisson_rwlock:{RW}"}, "1", pub, "write")

	// Semaphores.
	sk := []string{"SEM", "redisson_sc:{SEM}"}
	step("sem set", scriptSemTrySetPermits, sk, 3, pub, 0)
	step("sem set again", scriptSemTrySetPermits, sk, 5, pub, 0)
	step("sem take 2", scriptSemAcquire, sk[:1], 2)
	step("sem take 2", scriptSemAcquire, sk[:1], 2)
	step("sem release 4", scriptSemRelease, sk, 4, pub)
	step("sem drain", scriptSemDrain, sk[:1])
	pk := []string{"P", "{P}:timeout", "redisson_sc:{P}"}
	id := func(b byte) string { return strings.Repeat(string(rune(b)), 15) + "\x00" }
	step("pes set", scriptSemTrySetPermits, []string{"P", pk[2]}, 2, pub, 0)
	step("pes take forever", scriptPESAcquire, pk, 1, noExpiry, now, noExpiry, pub, id('a'))
	step("pes take leased", scriptPESAcquire, pk, 1, now+1000, now, noExpiry, pub, id('b'))
	step("pes none left", scriptPESAcquire, pk, 1, noExpiry, now, noExpiry, pub, id('c'))
	step("pes lease ran out", scriptPESAcquire, pk, 1, noExpiry, now+1000, noExpiry, pub, id('c'))
	step("pes only forever left", scriptPESAcquire, pk, 1, noExpiry, now+1000, noExpiry, pub, id('d'))
	step("pes update", scriptPESUpdateLease, pk, now+1000, pub, id('c'), now+5000)
	step("pes release", scriptPESRelease, pk, now+1000, pub, id('a'), id('z'))
	step("pes available", scriptPESAvailable, pk, now+6000, pub)

	// Count-down latch.
	ck := []string{"C", "redisson_countdownlatch__channel__{C}"}
	step("latch set", scriptLatchTrySetCount, ck, "1", 2, pub)
	step("latch set again", scriptLatchTrySetCount, ck, "1", 5, pub)
	step("latch down", scriptLatchCountDown, ck, "0", pub)
	step("latch down", scriptLatchCountDown, ck, "0", pub)
	step("latch down open", scriptLatchCountDown, ck, "0", pub)
	step("latch delete", scriptLatchDelete, ck, "0", pub)

	return append(out, dump(ctx, t, rdb)...)
}

// dump renders every key: type, TTL state and contents, sorted.
func dump(ctx context.Context, t *testing.T, rdb *redis.Client) []string {
	keys, err := rdb.Keys(ctx, "*").Result()
	must(t, err)
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		typ := rdb.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = rdb.Get(ctx, k).Val()
		case "hash":
			m := rdb.HGetAll(ctx, k).Val()
			var fs []string
			for f, x := range m {
				fs = append(fs, f+"="+x)
			}
			slices.Sort(fs)
			v = fs
		case "list":
			v = rdb.LRange(ctx, k, 0, -1).Val()
		case "zset":
			v = rdb.Do(ctx, "ZRANGE", k, 0, -1, "WITHSCORES").Val()
		}
		ttl := "persistent"
		if d := rdb.PTTL(ctx, k).Val(); d > 0 {
			ttl = "expires"
		}
		out = append(out, fmt.Sprintf("key %q %s %s %s", k, typ, ttl, render(v, nil)))
	}
	return out
}

func render(v any, err error) string {
	if err == redis.Nil {
		return "nil"
	}
	if err != nil {
		return "error " + err.Error()
	}
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = render(e, nil)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case string:
		return fmt.Sprintf("%q", x)
	case nil:
		return "nil"
	}
	return fmt.Sprint(v)
}
