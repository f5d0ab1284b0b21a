package fsm

import (
	"strconv"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// setTranscript was recorded from redis-server 7.0.15.
var setTranscript = []ctStep{
	// SADD, SMEMBERS order of integer sets (Redis's intset order)
	{"SADD s", "-ERR wrong number of arguments for 'sadd' command"},
	{"SADD s 3 1 2 10 -5", ":5"},
	{"SADD s 3 4", ":1"},
	{"SMEMBERS s", "*6[\"-5\", \"1\", \"2\", \"3\", \"4\", \"10\"]"},
	{"SADD s 9223372036854775807 -9223372036854775808 0", ":3"},
	{"SMEMBERS s", "*9[\"-9223372036854775808\", \"-5\", \"0\", \"1\", \"2\", \"3\", \"4\", \"10\", \"9223372036854775807\"]"},
	{"SCARD s", ":9"},
	{"SISMEMBER s 3", ":1"},
	{"SISMEMBER s 33", ":0"},
	{"SISMEMBER nokey 3", ":0"},
	{"SMISMEMBER s 2 zz 3", "*3[:1, :0, :1]"},
	{"SMISMEMBER nokey a", "*1[:0]"},
	{"SMEMBERS nokey", "*0[]"},
	{"SCARD nokey", ":0"},
	{"SREM s 1 zz 2", ":2"},
	{"SREM s zz", ":0"},
	{"SREM nokey a", ":0"},
	{"SMEMBERS s", "*7[\"-9223372036854775808\", \"-5\", \"0\", \"3\", \"4\", \"10\", \"9223372036854775807\"]"},
	{"SADD one x", ":1"},
	{"SMEMBERS one", "*1[\"x\"]"},
	{"SREM one x", ":1"},
	{"EXISTS one", ":0"},
	// SPOP and SRANDMEMBER: deterministic replies only
	{"SPOP nokey", "$-1"},
	{"SPOP nokey 0", "*0[]"},
	{"SPOP nokey 2", "*0[]"},
	{"SPOP nokey -1", "-ERR value is out of range, must be positive"},
	{"SPOP nokey x", "-ERR value is out of range, must be positive"},
	{"SPOP s 1 2", "-ERR syntax error"},
	{"SPOP s -1", "-ERR value is out of range, must be positive"},
	{"SPOP s 0", "*0[]"},
	{"SRANDMEMBER nokey", "$-1"},
	{"SRANDMEMBER nokey 0", "*0[]"},
	{"SRANDMEMBER nokey -5", "*0[]"},
	{"SRANDMEMBER nokey 5", "*0[]"},
	{"SRANDMEMBER nokey x", "-ERR value is not an integer or out of range"},
	{"SRANDMEMBER nokey -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
	{"SRANDMEMBER s -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
	{"SRANDMEMBER s 1.5", "-ERR value is not an integer or out of range"},
	{"SRANDMEMBER s 3 x", "-ERR syntax error"},
	{"SRANDMEMBER s 0", "*0[]"},
	{"SRANDMEMBER s 100", "*7[\"-9223372036854775808\", \"-5\", \"0\", \"3\", \"4\", \"10\", \"9223372036854775807\"]"},
	{"SADD p 5 3 1", ":3"},
	{"SRANDMEMBER p 3", "*3[\"1\", \"3\", \"5\"]"},
	{"SPOP p 3", "*3[\"1\", \"3\", \"5\"]"},
	{"EXISTS p", ":0"},
	{"SADD p 7", ":1"},
	{"SPOP p", "\"7\""},
	{"EXISTS p", ":0"},
	{"SADD p 8 9", ":2"},
	{"SPOP p 10", "*2[\"8\", \"9\"]"},
	{"EXISTS p", ":0"},
	// wrong kind
	{"SET str x", "+OK"},
	{"SADD str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SREM str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SISMEMBER str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SMISMEMBER str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SMEMBERS str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SCARD str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SPOP str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SPOP str 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SPOP str x", "-ERR value is out of range, must be positive"},
	{"SRANDMEMBER str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SRANDMEMBER str 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SRANDMEMBER str x", "-ERR value is not an integer or out of range"},
}

func TestSetTranscript(t *testing.T)             { ctTranscript(t, setTranscript) }
func TestSetTranscriptAgainstRedis(t *testing.T) { ctTranscriptAgainstRedis(t, setTranscript) }

func TestSetCommands(t *testing.T) {
	ttl := []string{"SADD s a b", "PEXPIRE s 100"}
	ctRun(t, []ctCase{
		{name: "smembers expired", setup: ttl, cmd: "SMEMBERS s", now: 1100, want: "*0[]"},
		{name: "sismember live", setup: ttl, cmd: "SISMEMBER s a", now: 1099, want: ":1"},
		{name: "sadd expired starts afresh", setup: ttl, cmd: "SADD s a", now: 1100, want: ":1"},
		{name: "spop expired", setup: ttl, cmd: "SPOP s", now: 1100, want: "$-1"},
		{name: "order: integers, then bytes", setup: []string{"SADD s b 10 a 9 -1 B"}, cmd: "SMEMBERS s", want: `*6["-1", "9", "10", "B", "a", "b"]`},
		{name: "non-canonical integers sort as strings", setup: []string{"SADD s 2 02 +3 -0 1"}, cmd: "SMEMBERS s", want: `*5["1", "2", "+3", "-0", "02"]`},
		{name: "binary member", setup: []string{`SADD s "\x00a" "\xff"`}, cmd: "SMEMBERS s", want: "*2[\"\x00a\", \"\xff\"]"},
		{name: "spop count 0 keeps key", setup: []string{"SADD s a"}, cmd: "SPOP s 0", want: "*0[]"},
		{name: "srandmember count above size", setup: []string{"SADD s b a"}, cmd: "SRANDMEMBER s 5", want: `*2["a", "b"]`},
		{name: "srandmember huge negative", setup: []string{"SADD s a"}, cmd: "SRANDMEMBER s -100001", want: "-ERR value is out of range"},
	})
}

func TestSetVersions(t *testing.T) {
	s := []string{"SADD s a b c"}
	ctRunVersions(t, []ctVersionCase{
		{cmd: "SADD s a", key: "s", bumps: true},
		{setup: s, cmd: "SADD s d", key: "s", bumps: true},
		{setup: s, cmd: "SADD s a", key: "s", bumps: false},
		{setup: s, cmd: "SREM s a", key: "s", bumps: true},
		{setup: s, cmd: "SREM s zz", key: "s", bumps: false},
		{setup: s, cmd: "SPOP s", key: "s", bumps: true},
		{setup: s, cmd: "SPOP s 2", key: "s", bumps: true},
		{setup: s, cmd: "SPOP s 5", key: "s", bumps: true},
		{setup: s, cmd: "SPOP s 0", key: "s", bumps: false},
		{setup: s, cmd: "SISMEMBER s a", key: "s", bumps: false},
		{setup: s, cmd: "SMISMEMBER s a b", key: "s", bumps: false},
		{setup: s, cmd: "SMEMBERS s", key: "s", bumps: false},
		{setup: s, cmd: "SCARD s", key: "s", bumps: false},
		{setup: s, cmd: "SRANDMEMBER s -3", key: "s", bumps: false},
	})
}

// SPOP and SRANDMEMBER choose the same members on every node for the same
// log, choose distinct members for a positive count, and vary.
func TestSetRandomDeterministic(t *testing.T) {
	build := func() *FSM {
		f := New(Options{})
		for i := 0; i < 50; i++ {
			ctApply(t, f, 1000, "SADD s m"+strconv.Itoa(i))
		}
		return f
	}
	f1, f2 := build(), build()
	defer f1.Close()
	defer f2.Close()
	seen := map[string]bool{}
	for now := int64(1000); now < 1030; now++ {
		for _, cmd := range []string{"SRANDMEMBER s", "SRANDMEMBER s 4", "SRANDMEMBER s -4"} {
			a, b := ctFormat(ctRead(t, f1, now, cmd)), ctFormat(ctApply(t, f2, now, cmd))
			if a != b {
				t.Fatalf("%s at %d: %s vs %s", cmd, now, a, b)
			}
			seen[a] = true
		}
		for _, cmd := range []string{"SPOP s", "SPOP s 3"} {
			a, b := ctApply(t, f1, now, cmd), ctApply(t, f2, now, cmd)
			if ctFormat(a) != ctFormat(b) {
				t.Fatalf("%s at %d: %s vs %s", cmd, now, ctFormat(a), ctFormat(b))
			}
			if a.Type == resp.Array {
				distinct := map[string]bool{}
				for _, e := range a.Elems {
					distinct[string(e.Str)] = true
				}
				if len(distinct) != len(a.Elems) {
					t.Fatalf("%s repeats: %s", cmd, ctFormat(a))
				}
			}
		}
		if r := ctApply(t, f1, now, "SRANDMEMBER s 5"); len(r.Elems) != min(5, int(ctApply(t, f1, now, "SCARD s").Int)) {
			t.Fatalf("SRANDMEMBER s 5: %s", ctFormat(r))
		}
	}
	if len(seen) < 20 {
		t.Errorf("SRANDMEMBER hardly varies: %d distinct replies", len(seen))
	}
	if !bytesEqualSnapshots(t, f1, f2) {
		t.Error("states differ after the same SPOPs")
	}
	// 30 rounds of four pops take all 50 members, and the key with them.
	if got := ctFormat(ctApply(t, f1, 2000, "EXISTS s")); got != ":0" {
		t.Errorf("EXISTS after pops: %s", got)
	}
}

func bytesEqualSnapshots(tb testing.TB, a, b *FSM) bool {
	return string(ctSnapshot(tb, a)) == string(ctSnapshot(tb, b))
}
