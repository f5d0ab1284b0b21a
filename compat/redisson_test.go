package compat

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Owners as Redisson names them: <client UUID>:<thread id>.
const (
	ownerA = "285475da-9152-4c83-822a-67ee2f116a79:52"
	ownerB = "9a1c47e2-3f0b-4d6e-8c51-0b7f2d9e4a13:1"
)

// lease is Redisson's default lock lease (the watchdog timeout).
const lease = 30 * time.Second

// redisson runs the seed scripts for one lock the way Redisson does: by
// EVAL (Redisson 3.18), or by EVALSHA falling back to EVAL on NOSCRIPT
// (Redisson 3.46 and later; go-redis's Script.Run does the same).
type redisson struct {
	t       *testing.T
	s       *server
	c       *redis.Client
	evalsha bool
	name    string
	scripts map[string]*redis.Script
}

func (r *redisson) channel() string { return "redisson_lock__channel:{" + r.name + "}" }

func (r *redisson) run(script string, keys []string, args ...any) (any, error) {
	r.t.Helper()
	s := r.scripts[script]
	ctx := testContext(r.t)
	if r.evalsha {
		return s.Run(ctx, r.c, keys, args...).Result()
	}
	return s.Eval(ctx, r.c, keys, args...).Result()
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// lock runs the lock script: nil when acquired (or re-entered), else the
// holder's PTTL.
func (r *redisson) lock(owner string, lease time.Duration) (any, error) {
	r.t.Helper()
	return r.run("lock", []string{r.name}, ms(lease), owner)
}

func (r *redisson) mustAcquire(owner string, lease time.Duration) {
	r.t.Helper()
	v, err := r.lock(owner, lease)
	wantNil(r.t, "lock by "+owner, v, err)
}

func (r *redisson) renew(owner string, lease time.Duration) (any, error) {
	r.t.Helper()
	return r.run("renew", []string{r.name}, ms(lease), owner)
}

func (r *redisson) unlock(owner string, lease time.Duration) (any, error) {
	r.t.Helper()
	return r.run("unlock", []string{r.name, r.channel()}, "0", ms(lease), owner)
}

func (r *redisson) forceUnlock() (any, error) {
	r.t.Helper()
	return r.run("forceunlock", []string{r.name, r.channel()}, "0")
}

func (r *redisson) pttl() int64 {
	r.t.Helper()
	v, err := r.c.PTTL(testContext(r.t), r.name).Result()
	if err != nil {
		r.t.Fatalf("PTTL %s: %v", r.name, err)
	}
	// go-redis turns -1 and -2 into durations of -1 and -2 nanoseconds.
	if v < 0 {
		return int64(v)
	}
	return v.Milliseconds()
}

// wantPTTL checks 0 < got <= max (ms).
func wantPTTL(tb testing.TB, what string, got, max int64) {
	tb.Helper()
	if got <= 0 || got > max {
		tb.Fatalf("%s: PTTL %d, want in (0, %d]", what, got, max)
	}
}

func (r *redisson) wantCount(owner string, want string) {
	r.t.Helper()
	got, err := r.c.HGetAll(testContext(r.t), r.name).Result()
	if err != nil {
		r.t.Fatalf("HGETALL %s: %v", r.name, err)
	}
	if want == "" {
		if len(got) != 0 {
			r.t.Fatalf("HGETALL %s = %v, want no lock", r.name, got)
		}
		return
	}
	if len(got) != 1 || got[owner] != want {
		r.t.Fatalf("HGETALL %s = %v, want {%s: %s}", r.name, got, owner, want)
	}
}

// subscriber is a go-redis subscriber on its own connection, subscribed
// (confirmed by the server) when returned.
type subscriber struct {
	t  *testing.T
	ps *redis.PubSub
}

func subscribe(t *testing.T, addr, channel string) *subscriber {
	t.Helper()
	ctx := testContext(t)
	ps := newClient(t, addr).Subscribe(ctx, channel)
	t.Cleanup(func() { _ = ps.Close() })
	msg, err := ps.Receive(ctx)
	if err != nil {
		t.Fatalf("SUBSCRIBE %s: %v", channel, err)
	}
	if sub, ok := msg.(*redis.Subscription); !ok || sub.Kind != "subscribe" || sub.Channel != channel {
		t.Fatalf("SUBSCRIBE %s: got %#v, want the subscription's confirmation", channel, msg)
	}
	return &subscriber{t: t, ps: ps}
}

// next waits for the next message and checks its channel and payload.
func (s *subscriber) next(channel, payload string) {
	s.t.Helper()
	msg, err := s.ps.ReceiveTimeout(testContext(s.t), 10*time.Second)
	if err != nil {
		s.t.Fatalf("waiting for %q on %s: %v", payload, channel, err)
	}
	m, ok := msg.(*redis.Message)
	if !ok || m.Channel != channel || m.Payload != payload {
		s.t.Fatalf("got %#v, want message %q on %s", msg, payload, channel)
	}
}

// marker publishes a marker from another connection and checks that it
// is the next message the subscriber gets, which shows nothing else was
// published on the channel since the last message.
func (s *subscriber) marker(c *redis.Client, channel string) {
	s.t.Helper()
	n, err := c.Publish(testContext(s.t), channel, "marker").Result()
	if err != nil || n != 1 {
		s.t.Fatalf("PUBLISH %s marker = (%d, %v), want 1 receiver", channel, n, err)
	}
	s.next(channel, "marker")
}

var redissonCases = []struct {
	name string
	run  func(t *testing.T, r *redisson)
}{
	{"acquire", func(t *testing.T, r *redisson) {
		r.mustAcquire(ownerA, lease)
		r.wantCount(ownerA, "1")
		wantPTTL(t, "after lock", r.pttl(), ms(lease))
	}},
	{"contended", func(t *testing.T, r *redisson) {
		r.mustAcquire(ownerA, lease)
		v, err := r.lock(ownerB, lease)
		wantPTTL(t, "second owner's lock reply", wantInt(t, "lock by B")(v, err), ms(lease))
		r.wantCount(ownerA, "1")
	}},
	{"reentry", func(t *testing.T, r *redisson) {
		r.mustAcquire(ownerA, lease)
		r.mustAcquire(ownerA, lease)
		r.mustAcquire(ownerA, lease)
		r.wantCount(ownerA, "3")
		wantPTTL(t, "after re-entry", r.pttl(), ms(lease))
	}},
	{"renew", func(t *testing.T, r *redisson) {
		const lease, pass = 2 * time.Second, 500 * time.Millisecond
		r.mustAcquire(ownerA, lease)
		r.s.elapse(t, pass)
		before := r.pttl()
		wantPTTL(t, "after time passed", before, ms(lease-pass))
		if got := wantInt(t, "renew by A")(r.renew(ownerA, lease)); got != 1 {
			t.Fatalf("renew by the owner = %d, want 1", got)
		}
		after := r.pttl()
		wantPTTL(t, "after renew", after, ms(lease))
		if after <= before {
			t.Fatalf("renew did not extend the lease: PTTL %d before, %d after", before, after)
		}
		if got := wantInt(t, "renew by B")(r.renew(ownerB, lease)); got != 0 {
			t.Fatalf("renew by another owner = %d, want 0", got)
		}
		r.wantCount(ownerA, "1")
	}},
	{"unlock", func(t *testing.T, r *redisson) {
		sub := subscribe(t, r.s.addr, r.channel())
		r.mustAcquire(ownerA, lease)
		r.mustAcquire(ownerA, lease)

		if got := wantInt(t, "first unlock")(r.unlock(ownerA, lease)); got != 0 {
			t.Fatalf("unlock with a re-entry left = %d, want 0", got)
		}
		r.wantCount(ownerA, "1")
		wantPTTL(t, "after the first unlock", r.pttl(), ms(lease))
		sub.marker(r.c, r.channel()) // nothing published yet

		if got := wantInt(t, "second unlock")(r.unlock(ownerA, lease)); got != 1 {
			t.Fatalf("last unlock = %d, want 1", got)
		}
		r.wantCount(ownerA, "")
		if p := r.pttl(); p != -2 {
			t.Fatalf("PTTL after release = %d, want -2", p)
		}
		sub.next(r.channel(), "0")

		v, err := r.unlock(ownerA, lease)
		wantNil(t, "unlock of a released lock", v, err)
		sub.marker(r.c, r.channel())
	}},
	{"unlock by another owner", func(t *testing.T, r *redisson) {
		sub := subscribe(t, r.s.addr, r.channel())
		r.mustAcquire(ownerA, lease)
		v, err := r.unlock(ownerB, lease)
		wantNil(t, "unlock by B", v, err)
		r.wantCount(ownerA, "1")
		sub.marker(r.c, r.channel())
	}},
	{"older unlock publishes for a missing lock", func(t *testing.T, r *redisson) {
		sub := subscribe(t, r.s.addr, r.channel())
		keys := []string{r.name, r.channel()}
		if got := wantInt(t, "unlock of a missing lock")(r.run("unlock_exists", keys, "0", ms(lease), ownerA)); got != 1 {
			t.Fatalf("unlock of a missing lock = %d, want 1", got)
		}
		sub.next(r.channel(), "0")
		r.mustAcquire(ownerA, lease)
		r.mustAcquire(ownerA, lease)
		if got := wantInt(t, "unlock")(r.run("unlock_exists", keys, "0", ms(lease), ownerA)); got != 0 {
			t.Fatalf("unlock with a re-entry left = %d, want 0", got)
		}
		v, err := r.run("unlock_exists", keys, "0", ms(lease), ownerB)
		wantNil(t, "unlock by B", v, err)
		if got := wantInt(t, "unlock")(r.run("unlock_exists", keys, "0", ms(lease), ownerA)); got != 1 {
			t.Fatalf("last unlock = %d, want 1", got)
		}
		sub.next(r.channel(), "0")
		r.wantCount(ownerA, "")
	}},
	{"force unlock", func(t *testing.T, r *redisson) {
		sub := subscribe(t, r.s.addr, r.channel())
		r.mustAcquire(ownerA, lease)
		r.mustAcquire(ownerA, lease)
		if got := wantInt(t, "force unlock")(r.forceUnlock()); got != 1 {
			t.Fatalf("force unlock of a held lock = %d, want 1", got)
		}
		r.wantCount(ownerA, "")
		sub.next(r.channel(), "0")
		if got := wantInt(t, "force unlock")(r.forceUnlock()); got != 0 {
			t.Fatalf("force unlock of a free lock = %d, want 0", got)
		}
		sub.marker(r.c, r.channel())
		r.mustAcquire(ownerB, lease)
	}},
	{"expiry frees the lock", func(t *testing.T, r *redisson) {
		const lease = 300 * time.Millisecond
		r.mustAcquire(ownerA, lease)
		v, err := r.lock(ownerB, lease)
		wantPTTL(t, "B while A holds", wantInt(t, "lock by B")(v, err), ms(lease))
		r.s.elapse(t, lease)
		if p := r.pttl(); p != -2 {
			t.Fatalf("PTTL after the lease = %d, want -2", p)
		}
		r.mustAcquire(ownerB, lease)
		r.wantCount(ownerB, "1")
		v, err = r.unlock(ownerA, lease)
		wantNil(t, "unlock by A after expiry", v, err)
	}},
	{"watchdog keeps the lock", func(t *testing.T, r *redisson) {
		const lease = time.Second
		r.mustAcquire(ownerA, lease)
		for range 3 { // renew at lease/3, as the watchdog does
			r.s.elapse(t, lease/3)
			if got := wantInt(t, "renew")(r.renew(ownerA, lease)); got != 1 {
				t.Fatalf("renew = %d, want 1", got)
			}
		}
		v, err := r.lock(ownerB, lease)
		wantPTTL(t, "B while the watchdog renews", wantInt(t, "lock by B")(v, err), ms(lease))
		r.wantCount(ownerA, "1")
	}},
}

// TestRedissonScripts runs the seed articles' Redisson scripts through
// go-redis, by EVAL and by EVALSHA, against deadbolt and redis-server.
func TestRedissonScripts(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *server) {
		// EVALSHA first, so that its first call of each script falls back to
		// EVAL as on a fresh server; EVAL then finds the scripts cached.
		for _, mode := range []string{"EVALSHA", "EVAL"} {
			t.Run(mode, func(t *testing.T) {
				c := newClient(t, s.addr)
				scripts := map[string]*redis.Script{}
				for _, name := range []string{"lock", "renew", "unlock", "unlock_exists", "forceunlock"} {
					scripts[name] = redis.NewScript(seedScript(t, name))
				}
				for i, tc := range redissonCases {
					t.Run(tc.name, func(t *testing.T) {
						tc.run(t, &redisson{
							t: t, s: s, c: c, evalsha: mode == "EVALSHA", scripts: scripts,
							name: "lock:" + mode + ":" + strconv.Itoa(i),
						})
					})
				}
			})
		}
	})
}

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestScriptCache checks SCRIPT LOAD, EVALSHA, NOSCRIPT and go-redis's
// EVALSHA-then-EVAL fallback with the seed lock script.
func TestScriptCache(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *server) {
		ctx := testContext(t)
		c := newClient(t, s.addr)
		lock := seedScript(t, "lock")

		t.Run("SCRIPT LOAD then EVALSHA", func(t *testing.T) {
			sha, err := c.ScriptLoad(ctx, lock).Result()
			if err != nil {
				t.Fatalf("SCRIPT LOAD: %v", err)
			}
			if want := sha1hex(lock); sha != want {
				t.Fatalf("SCRIPT LOAD = %s, want %s (lowercase hex SHA1 of the body)", sha, want)
			}
			v, err := c.EvalSha(ctx, sha, []string{"cache:1"}, ms(lease), ownerA).Result()
			wantNil(t, "EVALSHA lock", v, err)
			v, err = c.EvalSha(ctx, strings.ToUpper(sha), []string{"cache:1"}, ms(lease), ownerB).Result()
			wantPTTL(t, "EVALSHA (upper-case sha) lock by B", wantInt(t, "EVALSHA")(v, err), ms(lease))
			exists, err := c.ScriptExists(ctx, sha, sha1hex("never loaded")).Result()
			if err != nil || len(exists) != 2 || !exists[0] || exists[1] {
				t.Fatalf("SCRIPT EXISTS = (%v, %v), want [true false]", exists, err)
			}
		})

		t.Run("EVALSHA of an unknown sha", func(t *testing.T) {
			err := c.EvalSha(ctx, sha1hex("return 'never loaded'"), []string{"cache:2"}).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
				t.Fatalf("EVALSHA of an unknown sha: %v, want an error starting with NOSCRIPT", err)
			}
			if !redis.HasErrorPrefix(err, "NOSCRIPT") {
				t.Fatalf("go-redis does not see NOSCRIPT in %q", err)
			}
		})

		t.Run("Script.Run falls back to EVAL", func(t *testing.T) {
			// A body no server has seen, so the first EVALSHA fails.
			body := lock + "\n-- " + t.Name() + "\n"
			script := redis.NewScript(body)
			if err := c.EvalSha(ctx, script.Hash(), []string{"cache:3"}, ms(lease), ownerA).Err(); !redis.HasErrorPrefix(err, "NOSCRIPT") {
				t.Fatalf("EVALSHA before any EVAL: %v, want NOSCRIPT", err)
			}
			v, err := script.Run(ctx, c, []string{"cache:3"}, ms(lease), ownerA).Result()
			wantNil(t, "Script.Run lock", v, err)
			// EVAL cached the body, as Redis does.
			v, err = c.EvalSha(ctx, script.Hash(), []string{"cache:3"}, ms(lease), ownerA).Result()
			wantNil(t, "EVALSHA re-entry after EVAL", v, err)
			got, err := c.HGet(ctx, "cache:3", ownerA).Result()
			if err != nil || got != "2" {
				t.Fatalf("HGET cache:3 = (%q, %v), want 2", got, err)
			}
		})
	})
}
