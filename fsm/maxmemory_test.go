package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/resp"
)

// memLog is randomLog's commands and more that change sizes in other
// ways: encodings converted, keys moved, copied or stored, long lists,
// bitmaps, flushes of every database, thresholds changed.
func memLog(rng *rand.Rand, n int) (times []int64, cmds []Command) {
	times, cmds = randomLog(rng, n)
	keys := []string{"a", "b", "h", "l", "s", "z", "long"}
	key := func() string { return keys[rng.Intn(len(keys))] }
	num := func() string { return strconv.Itoa(rng.Intn(2000) - 5) }
	big := func() string { return strings.Repeat("x", rng.Intn(300)) }
	gens := []func() []string{
		func() []string { return []string{"HSET", key(), "f" + num(), big()} },
		func() []string { return []string{"SADD", key(), "m" + num(), num()} },
		func() []string { return []string{"ZADD", key(), num(), big() + "m"} },
		func() []string {
			args := []string{"RPUSH", "long"}
			for range 50 {
				args = append(args, big())
			}
			return args
		},
		func() []string { return []string{"LPOP", "long", "30"} },
		func() []string { return []string{"LSET", "long", "3", big()} },
		func() []string { return []string{"SETRANGE", key(), num(), big()} },
		func() []string { return []string{"SETBIT", key(), num(), "1"} },
		func() []string { return []string{"INCRBYFLOAT", key(), "1.5"} },
		func() []string { return []string{"COPY", key(), key(), "DB", "3", "REPLACE"} },
		func() []string { return []string{"MOVE", key(), "1"} },
		func() []string { return []string{"RENAME", key(), key()} },
		func() []string { return []string{"SORT", key(), "ALPHA", "STORE", key()} },
		func() []string { return []string{"SUNIONSTORE", key(), key(), key()} },
		func() []string { return []string{"ZUNIONSTORE", key(), "2", key(), key()} },
		func() []string { return []string{"GETDEL", key()} },
		func() []string {
			return []string{"__setconfig", "hash-max-listpack-entries", strconv.Itoa(rng.Intn(600))}
		},
		func() []string {
			return []string{"__setconfig", "hash-max-listpack-value", strconv.Itoa(rng.Intn(300))}
		},
		func() []string {
			return []string{"EVAL", "redis.call('select', 2) redis.call('set', KEYS[1], ARGV[1]) redis.call('flushdb') return redis.call('set', 'k', ARGV[1])", "1", key(), big()}
		},
		func() []string { return []string{"FLUSHALL"} },
	}
	for i := range cmds {
		switch r := rng.Intn(60); {
		case r == 0:
			// The limit switched on, changed or off (counting starts
			// and stops with it).
			cmds[i] = Command{Args: toArgs([]string{"__setconfig", "maxmemory", memLimit(rng)})}
		case r == 1:
			// ... and in the middle of a transaction, between writes.
			cmds[i] = Command{DB: rng.Intn(2), Tx: [][][]byte{
				toArgs(gens[rng.Intn(3)]()),
				toArgs([]string{"__setconfig", "maxmemory", memLimit(rng)}),
				toArgs(gens[rng.Intn(3)]()),
				toArgs([]string{"__setconfig", "maxmemory", memLimit(rng)}),
				toArgs(gens[rng.Intn(3)]()),
			}}
		case r < 20:
			g := rng.Intn(len(gens))
			if g == len(gens)-1 && rng.Intn(20) != 0 {
				g = 0
			}
			cmds[i] = Command{DB: rng.Intn(2), Args: toArgs(gens[g]())}
		}
	}
	return times, cmds
}

// memLimit is a maxmemory for memLog: none, one the log rarely reaches, or
// one it passes (writes are then refused until DEL and FLUSHALL make room).
func memLimit(rng *rand.Rand) string {
	switch rng.Intn(3) {
	case 0:
		return "0"
	case 1:
		return strconv.Itoa(1<<20 + rng.Intn(1<<20))
	}
	return strconv.Itoa(500 + rng.Intn(20000))
}

// recount is the logical size by measuring every key.
func recount(f *FSM) int64 {
	var n int64
	for _, ks := range f.dbs {
		for k, v := range ks.keys.all() {
			n += accountSize(v, len(k))
		}
	}
	return n
}

// TestLogicalMemoryIncremental checks the running total against a full
// count after every command of random logs, and that a restore from a
// snapshot (and a replica applying the same log) has the same total. The
// logs switch maxmemory on and off (alone and inside transactions): the
// size is counted only while there is a limit, from a full count at the
// entry that sets it, and is 0 without one.
func TestLogicalMemoryIncremental(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			times, cmds := memLog(rng, 1500)
			a, b := New(Options{}), New(Options{})
			defer a.Close()
			defer b.Close()
			if seed%2 == 0 {
				// A limit from the start (--maxmemory).
				start := Command{Args: toArgs([]string{"__setconfig", "maxmemory", memLimit(rng)})}
				a.Apply(0, start)
				b.Apply(0, start)
			}
			peak := int64(0)
			var on, off, starts, refused int
			for i := range cmds {
				if i%500 == 250 || i%500 == 400 {
					c := New(Options{})
					if err := c.Restore(bytes.NewReader(snapshotBytes(t, a))); err != nil {
						t.Fatal(err)
					}
					if got, limit := c.LogicalMemory(); got != a.mem.total || limit != a.mem.limit || c.mem.over.Load() != a.mem.over.Load() {
						t.Fatalf("command %d: restored total %d limit %d, the state machine's %d and %d", i, got, limit, a.mem.total, a.mem.limit)
					}
					b.Close()
					b = c
				}
				wasOn := a.mem.limit > 0
				r := a.Apply(times[i], cmds[i])
				b.Apply(times[i], cmds[i])
				if r.Reply.IsError() && bytes.Contains(r.Reply.Str, []byte("OOM")) {
					refused++
				}
				want := recount(a)
				if a.mem.limit == 0 {
					off++
					want = 0 // not counted
				} else {
					on++
					if !wasOn {
						starts++
					}
				}
				if a.mem.total != want {
					t.Fatalf("command %d %q %q (limit %d): total %d, want %d", i, cmds[i].Args, cmds[i].Tx, a.mem.limit, a.mem.total, want)
				}
				var sum int64
				for _, u := range a.mem.used {
					sum += u
				}
				if sum != want || b.mem.total != want {
					t.Fatalf("command %d: per-db sum %d, replica %d, want %d", i, sum, b.mem.total, want)
				}
				if a.mem.over.Load() != (a.mem.limit > 0 && want > a.mem.limit) || b.mem.over.Load() != a.mem.over.Load() {
					t.Fatalf("command %d: over %v, replica's %v; size %d, limit %d", i, a.mem.over.Load(), b.mem.over.Load(), want, a.mem.limit)
				}
				if a.mem.limit == 0 && (len(a.mem.dirty) != 0 || a.mem.index != nil) {
					t.Fatalf("command %d: %d keys noted without a limit", i, len(a.mem.dirty))
				}
				peak = max(peak, recount(a))
			}
			t.Logf("peak logical size %d; %d commands counted, %d not, counting started %d times, %d refused", peak, on, off, starts, refused)
			if peak == 0 || on == 0 || off == 0 || starts == 0 {
				t.Fatal("the log never stored anything, or never switched the limit on and off")
			}
		})
	}
}

// TestListSizeBounded: the bounded estimate equals MEMORY USAGE's for
// short lists and stays close for long ones whose first elements are
// typical of the rest.
func TestListSizeBounded(t *testing.T) {
	for _, n := range []int{1, 10, 64, 65, 200, 1000, 5000, 100000} {
		l := &List{}
		for i := range n {
			l.PushBack([]byte(strings.Repeat("e", i%16*6))) // the first listWalk elements are typical
		}
		v := &Value{Kind: KindList, agg: l}
		exact := objectSize(v, defaultSamples)
		got := listSizeBounded(l)
		if n <= listWalk && got != exact {
			t.Errorf("%d elements: %d, MEMORY USAGE's %d", n, got, exact)
		}
		t.Logf("%d elements: %d, MEMORY USAGE's %d", n, got, exact)
		// Within jemalloc's size classes (steps of 12 to 25 %) of the
		// exact packing.
		if d := float64(got-exact) / float64(exact); d > 0.2 || d < -0.2 {
			t.Errorf("%d elements: %d, MEMORY USAGE's %d", n, got, exact)
		}
	}
}

func applyArgs(f *FSM, now int64, args ...string) resp.Reply {
	return f.Apply(now, Command{Args: toArgs(args)}).Reply
}

// TestMaxmemoryDecisions checks Redis 7.0's rules as applied: denyoom
// commands refused once over the limit, others (DEL, GET, EXPIRE) not,
// scripts by their flags and by whether they already wrote, a
// transaction with a denied command discarded whole.
func TestMaxmemoryDecisions(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	now := int64(1_700_000_000_000)
	applyArgs(f, now, "SET", "lock", "owner-1")
	applyArgs(f, now, "HSET", "rlock", "c:1", "1")
	if r := applyArgs(f, now, "__setconfig", "maxmemory", "1"); r.IsError() {
		t.Fatal(r.String())
	}
	if used, limit := f.LogicalMemory(); used <= limit {
		t.Fatalf("used %d, limit %d", used, limit)
	}
	unlock := `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`
	oom := resp.Err(msgOOM)
	for _, tc := range []struct {
		args []string
		want resp.Reply
	}{
		{[]string{"SET", "x", "1"}, oom},
		{[]string{"SETNX", "x", "1"}, oom},
		{[]string{"HSET", "x", "f", "1"}, oom},
		{[]string{"HINCRBY", "rlock", "c:1", "1"}, oom},
		{[]string{"GET", "lock"}, resp.BulkString("owner-1")},
		{[]string{"PEXPIRE", "lock", "100000"}, resp.One},
		{[]string{"EVAL", "return redis.call('set', 'x', '1')", "0"}, resp.Err(msgOOM)},
		{[]string{"EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', 'x', '1')", "0"}, resp.OK},
		{[]string{"EVAL", "#!lua\nreturn redis.call('get', 'lock')", "0"}, oom},
		{[]string{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'lock')", "0"}, resp.BulkString("owner-1")},
		// The script wrote (DEL) first: it goes on.
		{[]string{"EVAL", "redis.call('del', 'x') return redis.call('set', 'y', '1')", "0"}, resp.OK},
		{[]string{"EVAL", unlock, "1", "lock", "owner-1"}, resp.One},
		// A HINCRBY of a field that exists, from a script, goes (deadbolt
		// only: countsInPlace), and the script then counts as written;
		// one of a new field or a new key does not.
		{[]string{"EVAL", "redis.call('hincrby', KEYS[1], 'c:1', -1) return redis.call('set', 'y', '1')", "1", "rlock"}, resp.OK},
		{[]string{"EVAL", "return redis.call('hincrby', KEYS[1], 'c:2', 1)", "1", "rlock"}, oom},
		{[]string{"EVAL", "return redis.call('hincrby', KEYS[1], 'c:1', 1)", "1", "nosuch"}, oom},
		{[]string{"HGET", "rlock", "c:1"}, resp.BulkString("0")},
		{[]string{"DEL", "y"}, resp.One},
		{[]string{"__setconfig", "maxmemory", "-1"}, resp.Err("ERR bad replicated setting")},
	} {
		got := applyArgs(f, now, tc.args...)
		if tc.args[0] == "EVAL" && tc.want.IsError() {
			// luaexec adds where the script failed.
			if !got.IsError() || !bytes.HasPrefix(got.Str, tc.want.Str) {
				t.Errorf("%q: %q, want %q", tc.args, got.String(), tc.want.String())
			}
			continue
		}
		if !got.Equal(tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got.String(), tc.want.String())
		}
	}
	tx := f.Apply(now, Command{Tx: [][][]byte{toArgs([]string{"GET", "lock"}), toArgs([]string{"SET", "z", "1"})}}).Reply
	if want := resp.Err("EXECABORT Transaction discarded because of: " + msgOOM); !tx.Equal(want) {
		t.Errorf("EXEC: %q", tx.String())
	}
	if r := applyArgs(f, now, "GET", "z"); r.Type != resp.Nil {
		t.Errorf("the discarded transaction wrote: %q", r.String())
	}
	// Under the limit again (the keys deleted), writes go through.
	applyArgs(f, now, "DEL", "rlock", "x")
	if used, _ := f.LogicalMemory(); used != 0 {
		t.Fatalf("empty keyspace, logical size %d", used)
	}
	if r := applyArgs(f, now, "SET", "x", "1"); !r.Equal(resp.OK) {
		t.Fatalf("SET under the limit: %q", r.String())
	}
	// No limit: nothing refused.
	applyArgs(f, now, "__setconfig", "maxmemory", "0")
	if r := applyArgs(f, now, "SET", "x", "2"); !r.Equal(resp.OK) {
		t.Fatalf("SET without a limit: %q", r.String())
	}
}

// TestDenyOOMTable: the commands refused are exactly those Redis's table
// flags denyoom, among the state machine's.
func TestDenyOOMTable(t *testing.T) {
	n := 0
	for name, spec := range commands {
		if spec.Flags&(Internal|Scripting) != 0 {
			continue
		}
		c := &Ctx{}
		got := c.deniedOnOOM(spec, [][]byte{[]byte(name), []byte("k"), []byte("v")})
		if want := hasFlag(acl.Lookup(name), "denyoom"); got != want {
			t.Errorf("%s: denied %v, table %v", name, got, want)
		}
		if got {
			n++
		}
	}
	if n < 30 {
		t.Fatalf("only %d commands denied", n)
	}
}
