package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
)

// randomLog builds a log of commands over a few keys and every value kind,
// with expiry, scripts and transactions, and times that sometimes go
// backward (as stamps from a new leader might).
func randomLog(rng *rand.Rand, n int) (times []int64, cmds []Command) {
	keys := []string{"a", "b", "c", "{lock}", "h", "l", "s", "z"}
	key := func() string { return keys[rng.Intn(len(keys))] }
	num := func() string { return strconv.Itoa(rng.Intn(20) - 5) }
	script := `local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
local t = {}
for i = 1, n do t[#t+1] = math.random(100) end
return t`
	gens := []func() []string{
		func() []string { return []string{"SET", key(), num()} },
		func() []string { return []string{"SET", key(), "v", "PX", strconv.Itoa(rng.Intn(3000))} },
		func() []string { return []string{"SET", key(), "v", "NX", "EX", "2"} },
		func() []string { return []string{"INCRBY", key(), num()} },
		func() []string { return []string{"APPEND", key(), "x"} },
		func() []string { return []string{"DEL", key(), key()} },
		func() []string { return []string{"PEXPIRE", key(), strconv.Itoa(rng.Intn(2000))} },
		func() []string { return []string{"PERSIST", key()} },
		func() []string { return []string{"HSET", key(), "f" + num(), num()} },
		func() []string { return []string{"HDEL", key(), "f" + num()} },
		func() []string { return []string{"HINCRBY", key(), "f" + num(), num()} },
		func() []string { return []string{"LPUSH", key(), num(), num()} },
		func() []string { return []string{"RPOP", key()} },
		func() []string { return []string{"LREM", key(), "0", num()} },
		func() []string { return []string{"SADD", key(), num(), num()} },
		func() []string { return []string{"SREM", key(), num()} },
		func() []string { return []string{"ZADD", key(), num(), "m" + num()} },
		func() []string { return []string{"ZINCRBY", key(), "-1", "m" + num()} },
		func() []string { return []string{"ZREMRANGEBYSCORE", key(), "-inf", num()} },
		func() []string { return []string{"RENAME", key(), key()} },
		func() []string { return []string{"GET", key()} },
		func() []string { return []string{"PTTL", key()} },
		func() []string { return []string{"HGETALL", key()} },
		func() []string { return []string{"ZRANGE", key(), "0", "-1", "WITHSCORES"} },
		func() []string { return []string{"SMEMBERS", key()} },
		func() []string { return []string{"KEYS", "*"} },
		func() []string { return []string{"EVAL", script, "1", key(), "owner", strconv.Itoa(rng.Intn(3000))} },
		func() []string { return []string{"PUBLISH", "ch", num()} },
		func() []string { return []string{"__reap", "3"} },
		func() []string { return []string{"FLUSHDB"} },
	}
	now := int64(1_700_000_000_000)
	for i := 0; i < n; i++ {
		now += int64(rng.Intn(200) - 20)
		times = append(times, now)
		var cmd Command
		cmd.DB = rng.Intn(2)
		if rng.Intn(15) == 0 {
			for j := rng.Intn(4); j >= 0; j-- {
				cmd.Tx = append(cmd.Tx, toArgs(gens[rng.Intn(len(gens)-1)]()))
			}
			if rng.Intn(2) == 0 {
				cmd.Watch = []Watch{{DB: cmd.DB, Key: key(), Version: uint64(rng.Intn(int(i + 1)))}}
			}
		} else {
			gi := rng.Intn(len(gens))
			if gi == len(gens)-1 && rng.Intn(40) != 0 {
				gi = 0 // FLUSHDB, rarely
			}
			cmd.Args = toArgs(gens[gi]())
		}
		cmds = append(cmds, cmd)
	}
	return times, cmds
}

func toArgs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f.Snapshot(&b); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return b.Bytes()
}

// TestDeterminism applies the same random log to two fresh state machines
// (one restored from a snapshot half way) and requires the same replies,
// the same effects and byte-identical snapshots.
func TestDeterminism(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			times, cmds := randomLog(rand.New(rand.NewSource(seed)), 1500)
			a, b := New(Options{}), New(Options{})
			defer a.Close()
			defer b.Close()
			for i := range cmds {
				if i == len(cmds)/2 {
					// b restarts from a's snapshot: restore must give the same future.
					snap := snapshotBytes(t, a)
					c := New(Options{})
					if err := c.Restore(bytes.NewReader(snap)); err != nil {
						t.Fatalf("restore: %v", err)
					}
					if got := snapshotBytes(t, c); !bytes.Equal(got, snap) {
						t.Fatalf("snapshot after restore differs")
					}
					b.Close()
					b = c
				}
				ra := a.Apply(times[i], cmds[i])
				rb := b.Apply(times[i], cmds[i])
				if !ra.Reply.Equal(rb.Reply) || fmt.Sprint(ra.Effects) != fmt.Sprint(rb.Effects) || ra.DB != rb.DB {
					t.Fatalf("command %d %q: replies differ:\n%q %+v\n%q %+v", i, cmds[i].Args, ra.Reply.Append(nil), ra, rb.Reply.Append(nil), rb)
				}
			}
			if sa, sb := snapshotBytes(t, a), snapshotBytes(t, b); !bytes.Equal(sa, sb) {
				t.Fatalf("snapshots differ (%d vs %d bytes)", len(sa), len(sb))
			}
		})
	}
}

// TestReadDoesNotChangeState serves reads of expired keys and checks the
// snapshot is unchanged.
func TestReadDoesNotChangeState(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	f.Apply(1000, Command{Args: toArgs([]string{"SET", "k", "v", "PX", "10"})})
	before := snapshotBytes(t, f)
	for _, c := range [][]string{{"GET", "k"}, {"PTTL", "k"}, {"EXISTS", "k"}, {"KEYS", "*"}} {
		r := f.Read(5000, Command{Args: toArgs(c)})
		if r.Reply.IsError() {
			t.Fatalf("%v: %s", c, r.Reply.Str)
		}
	}
	if after := snapshotBytes(t, f); !bytes.Equal(before, after) {
		t.Fatal("a read changed the state")
	}
	if r := f.Read(5000, Command{Args: toArgs([]string{"SET", "k", "v"})}); !r.Reply.IsError() {
		t.Fatalf("write on the read path: %+v", r.Reply)
	}
}
