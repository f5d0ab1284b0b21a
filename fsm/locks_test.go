package fsm

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/deadbolt/deadbolt/resp"
)

// evalArgs builds an EVAL of script over keys then argv.
func evalArgs(script string, keys []string, argv ...string) []string {
	out := []string{"EVAL", script, string(rune('0' + len(keys)))}
	out = append(out, keys...)
	return append(out, argv...)
}

const (
	testSemSet   = `redis.call('set', KEYS[1], ARGV[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1`
	testStrDel   = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`
	testWriteLck = `local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], left + ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
)

func locksOf(t *testing.T, f *FSM, now int64, opts ...string) string {
	t.Helper()
	r := f.Read(now, Command{Args: kvArgs(append([]string{LocksCommand}, opts...)...)})
	return kvRender(r.Reply)
}

// TestLocksLayouts builds each client's lock layout with the commands (and
// scripts) the clients send and checks what DEADBOLT LOCKS makes of it.
func TestLocksLayouts(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	t0 := kvT0
	steps := [][]string{
		// Redisson lock, taken at t0 with a 30 s lease.
		evalArgs(benchLock, []string{"orders"}, "30000", "u1:7"),
		// Fair lock: held by u1:1, u2:5 queued with a deadline.
		evalArgs(benchLock, []string{"fair"}, "30000", "u1:1"),
		{"RPUSH", "redisson_lock_queue:{fair}", "u2:5"},
		{"ZADD", "redisson_lock_timeout:{fair}", "1700000305000", "u2:5"},
		// Fenced lock: the lock and its token counter.
		evalArgs(benchLock, []string{"fence"}, "30000", "u3:2"),
		{"INCR", "redisson_lock_token:{fence}"},
		// Read-write lock in write mode.
		evalArgs(testWriteLck, []string{"rw"}, "30000", "u4:1:write"),
		// Semaphore and count-down latch, set by a script that publishes.
		evalArgs(testSemSet, []string{"sem", "redisson_sc:{sem}"}, "3"),
		evalArgs(testSemSet, []string{"latch", "redisson_countdownlatch__channel__{latch}"}, "2"),
		// Permit-expirable semaphore: counter and permits.
		evalArgs(testSemSet, []string{"psem", "redisson_sc:{psem}"}, "1"),
		{"ZADD", "{psem}:timeout", "1700000060000", "\x01\x02", "922337203685477", "p2"},
		// redsync / redislock / redis-py.
		{"SET", "job", "tok-1", "NX", "PX", "8000"},
		// Not locks: a plain string, a plain counter, a data hash.
		{"SET", "plain", "v"},
		{"SET", "n", "5"},
		{"HSET", "user", "name", "x"},
		{"HINCRBY", "hits", "page:1", "1"}, // created like a lock, but no lease
	}
	for _, s := range steps {
		if r := f.Apply(t0, Command{Args: kvArgs(s...)}); r.Reply.IsError() {
			t.Fatalf("%q: %s", s, r.Reply.Str)
		}
	}
	got := locksOf(t, f, t0+1000)
	want := []string{
		`"name" "fair" "kind" "fair" "db" :0 "holders" [["id" "u1:1" "count" :1]] "held-since-ms" :1700000000000 "lease-ms" :29000 "channels" ["redisson_lock__channel:{fair}:u2:5"] "queue" [["id" "u2:5" "deadline-ms" :1700000305000]]`,
		`"name" "fence" "kind" "fenced" "db" :0 "holders" [["id" "u3:2" "count" :1]] "held-since-ms" :1700000000000 "lease-ms" :29000 "channels" ["redisson_lock__channel:{fence}"] "queue" [] "token" :1`,
		`"name" "job" "kind" "string" "db" :0 "holders" [["id" "tok-1" "count" :1]] "held-since-ms" :1700000000000 "lease-ms" :7000 "channels" [] "queue" []`,
		`"name" "latch" "kind" "latch" "db" :0 "holders" [] "held-since-ms" :-1 "lease-ms" :-1 "channels" ["redisson_countdownlatch__channel__{latch}"] "queue" [] "count" :2`,
		`"name" "orders" "kind" "reentrant" "db" :0 "holders" [["id" "u1:7" "count" :1]] "held-since-ms" :1700000000000 "lease-ms" :29000 "channels" ["redisson_lock__channel:{orders}"] "queue" []`,
		`"name" "psem" "kind" "permit-semaphore" "db" :0 "holders" [["id" "0102" "count" :1 "expires-ms" :1700000060000] ["id" "p2" "count" :1 "expires-ms" :-1]] "held-since-ms" :-1 "lease-ms" :-1 "channels" ["redisson_sc:{psem}"] "queue" [] "permits" :1`,
		`"name" "rw" "kind" "rwlock" "db" :0 "holders" [["id" "u4:1:write" "count" :1]] "held-since-ms" :1700000000000 "lease-ms" :29000 "channels" ["redisson_rwlock:{rw}"] "queue" [] "mode" "write"`,
		`"name" "sem" "kind" "semaphore" "db" :0 "holders" [] "held-since-ms" :-1 "lease-ms" :-1 "channels" ["redisson_sc:{sem}"] "queue" [] "permits" :3`,
	}
	if w := "[[" + strings.Join(want, "] [") + "]]"; got != w {
		t.Fatalf("DEADBOLT LOCKS:\n got %s\nwant %s", got, w)
	}

	// Filters.
	if got := locksOf(t, f, t0+1000, "KIND", "fenced"); !strings.HasPrefix(got, `[["name" "fence"`) || strings.Count(got, `"name"`) != 1 {
		t.Errorf("KIND fenced: %s", got)
	}
	if got := locksOf(t, f, t0+1000, "MATCH", "*e*", "COUNT", "2"); strings.Count(got, `"name"`) != 2 || !strings.Contains(got, `"name" "fence"`) || !strings.Contains(got, `"name" "orders"`) {
		// fence and orders come first in byte order among fence, orders,
		// psem and sem.
		t.Errorf("MATCH *e* COUNT 2: %s", got)
	}
	// A lease that ran out hides the lock (not yet reaped, like GET).
	if got := locksOf(t, f, t0+40000, "KIND", "string"); got != "[]" {
		t.Errorf("after the lease: %s", got)
	}
	for _, bad := range [][]string{{"KIND", "mutex"}, {"COUNT", "0"}, {"COUNT", "x"}, {"MATCH"}, {"FOO", "1"}} {
		if got := locksOf(t, f, t0, bad...); !strings.HasPrefix(got, "-ERR") {
			t.Errorf("%q: %s", bad, got)
		}
	}
}

// TestLocksCounters checks the lock counters against the events that make
// them: a taken, contended, re-entered, released and expired lock.
func TestLocksCounters(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	t0 := kvT0
	do := func(now int64, args ...string) resp.Reply {
		t.Helper()
		r := f.Apply(now, Command{Args: kvArgs(args...)})
		if r.Reply.IsError() {
			t.Fatalf("%q: %s", args, r.Reply.Str)
		}
		return r.Reply
	}
	// String lock: taken, contended twice, released after 3 ms; taken
	// again and left to expire after 8 s.
	do(t0, "SET", "s", "a", "NX", "PX", "8000")
	do(t0, "SET", "s", "b", "NX", "PX", "8000")
	do(t0+1, "SETNX", "s", "b")
	do(t0+3, evalArgs(testStrDel, []string{"s"}, "a")...)
	do(t0+10, "SET", "s", "c", "NX", "PX", "8000")
	// Redisson lock: taken, re-entered, contended, released (two unlocks).
	do(t0, evalArgs(benchLock, []string{"r"}, "30000", "u:1")...)
	do(t0, evalArgs(benchLock, []string{"r"}, "30000", "u:1")...)
	do(t0, evalArgs(benchLock, []string{"r"}, "30000", "v:1")...)
	unlock := evalArgs(benchUnlock, []string{"r", "redisson_lock__channel:{r}"}, "0", "30000", "u:1")
	do(t0+20, unlock...)
	do(t0+20, unlock...)
	// Write lock: taken, re-entered (its PTTL is no contention), contended.
	do(t0, evalArgs(testWriteLck, []string{"w"}, "30000", "u:1:write")...)
	do(t0, evalArgs(testWriteLck, []string{"w"}, "30000", "u:1:write")...)
	do(t0, evalArgs(testWriteLck, []string{"w"}, "30000", "v:1:write")...)
	// A PTTL read outside the log is no contention either.
	f.Read(t0, Command{Args: kvArgs("PTTL", "w")})
	// Not locks: a settings hash with a "mode", a counter hash.
	do(t0, "HSET", "prefs", "mode", "dark")
	do(t0, "HINCRBY", "hits", "page", "1")
	do(t0, "DEL", "prefs", "hits")
	// Semaphore: set (published), two permits taken, one given back.
	do(t0+20, evalArgs(testSemSet, []string{"sem", "redisson_sc:{sem}"}, "3")...)
	do(t0+20, "DECRBY", "sem", "2")
	do(t0+20, "INCRBY", "sem", "1")
	// A write meets the string lock expired and removes it; the reaper
	// expires the write lock.
	do(t0+9000, "SET", "s", "d", "XX")
	f.Apply(t0+100000, ReapCommand(100))

	st := f.LockStats()
	type row struct{ acq, re, cont, rel, exp, holds uint64 }
	want := map[LockKind]row{
		LockString:    {acq: 2, cont: 2, rel: 1, exp: 1, holds: 2},
		LockReentrant: {acq: 1, re: 1, cont: 1, rel: 1, holds: 1},
		LockReadWrite: {acq: 1, re: 1, cont: 1, exp: 1, holds: 1},
		LockSemaphore: {acq: 1, rel: 1},
	}
	for _, s := range st {
		got := row{s.Acquired, s.Reentered, s.Contended, s.Released, s.Expired, s.HoldCount}
		if got != want[s.Kind] {
			t.Errorf("%s: got %+v, want %+v", s.Kind, got, want[s.Kind])
		}
		if s.HoldBuckets[len(s.HoldBuckets)-1] != s.HoldCount {
			t.Errorf("%s: +Inf bucket %d, count %d", s.Kind, s.HoldBuckets[len(s.HoldBuckets)-1], s.HoldCount)
		}
	}
	// String holds: 3 ms (bucket <=5) and 8000 ms (<=10000).
	s := st[LockString]
	if s.HoldSumMs != 8003 || s.HoldBuckets[0] != 0 || s.HoldBuckets[1] != 1 || s.HoldBuckets[7] != 1 || s.HoldBuckets[8] != 2 {
		t.Errorf("string hold histogram: sum %d buckets %v", s.HoldSumMs, s.HoldBuckets)
	}
}

// TestLocksSnapshot: lock shapes and creation times are state, so a
// restored node answers DEADBOLT LOCKS as the node it copied, and the
// counters (not state) stay with the node.
func TestLocksSnapshot(t *testing.T) {
	a := New(Options{})
	defer a.Close()
	var buf bytes.Buffer
	if err := a.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[len(snapshotMagic)]; v != 1 {
		t.Errorf("empty state: snapshot version %d, want 1", v)
	}
	a.Apply(kvT0, Command{Args: kvArgs(evalArgs(benchLock, []string{"r"}, "30000", "u:1")...)})
	a.Apply(kvT0+5, Command{Args: kvArgs("SET", "s", "t", "NX", "PX", "9000")})
	a.Apply(kvT0+7, Command{Args: kvArgs(evalArgs(testSemSet, []string{"sem", "redisson_sc:{sem}"}, "3")...)})
	buf.Reset()
	if err := a.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[len(snapshotMagic)]; v != 3 {
		t.Errorf("with locks: snapshot version %d, want 3", v)
	}
	b := New(Options{})
	defer b.Close()
	b.Apply(kvT0, Command{Args: kvArgs("SET", "x", "y", "NX")})
	if err := b.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := b.LockStats()[LockString].Acquired; got != 1 {
		t.Errorf("after a restore, this node's string lock count is %d, want the 1 it counted (the snapshot's node counted another)", got)
	}
	wa, wb := locksOf(t, a, kvT0+10), locksOf(t, b, kvT0+10)
	if wa != wb || !strings.Contains(wa, `"held-since-ms" :1700000000005`) || !strings.Contains(wa, `"kind" "semaphore"`) {
		t.Errorf("restored:\n%s\noriginal:\n%s", wb, wa)
	}
	var again bytes.Buffer
	if err := b.Snapshot(&again); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Errorf("snapshot of the restored state differs (%v)", err)
	}
	// A shape on a key of the wrong type is refused with a clear error.
	bad := bytes.Replace(buf.Bytes(), []byte("\x01s\x01"), []byte("\x01s\x02"), 1) // key "s": kind string -> hash
	if err := New(Options{}).Restore(bytes.NewReader(bad)); err == nil {
		t.Error("a string lock shape on a hash key was accepted")
	}
}

// TestValueSize guards the claim that lock shapes cost no memory: they
// live in what was padding.
func TestValueSize(t *testing.T) {
	if n := unsafe.Sizeof(Value{}); n != 80 {
		t.Errorf("Value is %d bytes, was 80 (a size class of the allocator; 96 until 2026-11-26)", n)
	}
}

// A lock taken the way node-redlock takes it (a script that checks EXISTS
// and then SETs the token with PX, no NX) is a string lock, and setting
// the same token again with a new lease (its extend) keeps it held since
// it was taken; a plain SET with a TTL outside a script is data.
func TestLocksScriptSetWithLease(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	t0 := kvT0
	const take = `if redis.call('exists', KEYS[1]) == 1 then return 0 end redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1`
	const extend = `if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1`
	for _, s := range []struct {
		now  int64
		args []string
	}{
		{t0, evalArgs(take, []string{"rl"}, "tok", "10000")},
		{t0, []string{"SET", "cache", "v", "PX", "10000"}},
		{t0 + 4000, evalArgs(extend, []string{"rl"}, "tok", "10000")},
		{t0 + 4500, evalArgs(take, []string{"rl"}, "other", "10000")}, // held: contended
	} {
		if r := f.Apply(s.now, Command{Args: kvArgs(s.args...)}); r.Reply.IsError() {
			t.Fatalf("%q: %s", s.args, r.Reply.Str)
		}
	}
	got := locksOf(t, f, t0+5000)
	if !strings.Contains(got, `"name" "rl" "kind" "string"`) || strings.Contains(got, `"cache"`) {
		t.Fatalf("DEADBOLT LOCKS after a redlock-style take and extend:\n%s", got)
	}
	if !strings.Contains(got, `"held-since-ms" :1700000000000`) || !strings.Contains(got, `"lease-ms" :9000`) {
		t.Fatalf("the extended lock is held since it was taken, with the new lease:\n%s", got)
	}
	if st := f.LockStats()[LockString]; st.Acquired != 1 || st.Contended != 1 {
		t.Fatalf("acquisitions %d, want 1 (the extend is not another); contended %d, want 1 (the other owner's take)", st.Acquired, st.Contended)
	}
}
