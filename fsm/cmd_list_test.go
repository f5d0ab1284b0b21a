package fsm

import (
	"strconv"
	"testing"
)

// listTranscript was recorded from redis-server 7.0.15.
var listTranscript = []ctStep{
	// pushes
	{"LPUSH l", "-ERR wrong number of arguments for 'lpush' command"},
	{"RPUSH l a b c d e a b a", ":8"},
	{"LPUSH l2 1 2 3", ":3"},
	{"LRANGE l2 0 -1", "*3[\"3\", \"2\", \"1\"]"},
	{"LPUSHX nokey a", ":0"},
	{"RPUSHX nokey a", ":0"},
	{"EXISTS nokey", ":0"},
	{"RPUSHX l2 z y", ":5"},
	{"LPUSHX l2 0", ":6"},
	{"LRANGE l2 0 -1", "*6[\"0\", \"3\", \"2\", \"1\", \"z\", \"y\"]"},
	{"LLEN l2", ":6"},
	{"LLEN nokey", ":0"},
	// LINDEX
	{"LINDEX l 0", "\"a\""},
	{"LINDEX l -1", "\"a\""},
	{"LINDEX l -8", "\"a\""},
	{"LINDEX l -9", "$-1"},
	{"LINDEX l 7", "\"a\""},
	{"LINDEX l 8", "$-1"},
	{"LINDEX l 100", "$-1"},
	{"LINDEX l x", "-ERR value is not an integer or out of range"},
	{"LINDEX l 1.5", "-ERR value is not an integer or out of range"},
	{"LINDEX nokey 0", "$-1"},
	{"LINDEX nokey x", "$-1"},
	// LRANGE
	{"LRANGE l 0 -1", "*8[\"a\", \"b\", \"c\", \"d\", \"e\", \"a\", \"b\", \"a\"]"},
	{"LRANGE l 1 2", "*2[\"b\", \"c\"]"},
	{"LRANGE l -3 -2", "*2[\"a\", \"b\"]"},
	{"LRANGE l -100 100", "*8[\"a\", \"b\", \"c\", \"d\", \"e\", \"a\", \"b\", \"a\"]"},
	{"LRANGE l 5 2", "*0[]"},
	{"LRANGE l 8 10", "*0[]"},
	{"LRANGE l -1 -100", "*0[]"},
	{"LRANGE l x 1", "-ERR value is not an integer or out of range"},
	{"LRANGE l 1 x", "-ERR value is not an integer or out of range"},
	{"LRANGE nokey 0 -1", "*0[]"},
	{"LRANGE nokey x 1", "-ERR value is not an integer or out of range"},
	{"LRANGE l 9223372036854775807 -9223372036854775808", "*0[]"},
	{"LRANGE l -9223372036854775808 9223372036854775807", "*8[\"a\", \"b\", \"c\", \"d\", \"e\", \"a\", \"b\", \"a\"]"},
	{"LRANGE l 9223372036854775808 1", "-ERR value is not an integer or out of range"},
	// LPOS
	{"LPOS l a", ":0"},
	{"LPOS l a RANK 2", ":5"},
	{"LPOS l a RANK 3", ":7"},
	{"LPOS l a RANK 4", "$-1"},
	{"LPOS l a RANK -1", ":7"},
	{"LPOS l a RANK -3", ":0"},
	{"LPOS l a RANK -4", "$-1"},
	{"LPOS l a RANK 0", "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"},
	{"LPOS l a COUNT 0", "*3[:0, :5, :7]"},
	{"LPOS l a COUNT 2", "*2[:0, :5]"},
	{"LPOS l a COUNT 2 RANK -1", "*2[:7, :5]"},
	{"LPOS l a COUNT 0 RANK 2", "*2[:5, :7]"},
	{"LPOS l a COUNT -1", "-ERR COUNT can't be negative"},
	{"LPOS l a COUNT x", "-ERR COUNT can't be negative"},
	{"LPOS l a MAXLEN -1", "-ERR MAXLEN can't be negative"},
	{"LPOS l a MAXLEN x", "-ERR MAXLEN can't be negative"},
	{"LPOS l a MAXLEN 2 COUNT 0", "*1[:0]"},
	{"LPOS l a MAXLEN 1 RANK -1", ":7"},
	{"LPOS l a MAXLEN 5 RANK 2 COUNT 0", "*0[]"},
	{"LPOS l a RANK -9223372036854775808", ":7"},
	{"LPOS l a RANK -9223372036854775808 COUNT 2", "*3[:7, :5, :0]"},
	{"LPOS l a RANK 9223372036854775807", "$-1"},
	{"LPOS l a RANK 9223372036854775807 COUNT 0", "*0[]"},
	{"LPOS l a rank x", "-ERR value is not an integer or out of range"},
	{"LPOS l a bogus 1", "-ERR syntax error"},
	{"LPOS l a rank", "-ERR syntax error"},
	{"LPOS l a COUNT 1 MAXLEN", "-ERR syntax error"},
	{"LPOS l zz", "$-1"},
	{"LPOS l zz COUNT 1", "*0[]"},
	{"LPOS l zz COUNT 0", "*0[]"},
	{"LPOS nokey a", "$-1"},
	{"LPOS nokey a COUNT 1", "*0[]"},
	{"LPOS nokey a RANK 0", "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"},
	{"LPOS nokey a bogus", "-ERR syntax error"},
	{"LPOS l a RANK 1 COUNT 1 MAXLEN 1", "*1[:0]"},
	{"LPOS l b maxlen 1", "$-1"},
	{"LPOS l b rank 1 rank -1", ":6"},
	// LREM
	{"LREM l 0 a", ":3"},
	{"LRANGE l 0 -1", "*5[\"b\", \"c\", \"d\", \"e\", \"b\"]"},
	{"RPUSH l a b a b a", ":10"},
	{"LREM l -2 a", ":2"},
	{"LRANGE l 0 -1", "*8[\"b\", \"c\", \"d\", \"e\", \"b\", \"a\", \"b\", \"b\"]"},
	{"LREM l 1 b", ":1"},
	{"LRANGE l 0 -1", "*7[\"c\", \"d\", \"e\", \"b\", \"a\", \"b\", \"b\"]"},
	{"LREM l x b", "-ERR value is not an integer or out of range"},
	{"LREM l 5 zz", ":0"},
	{"LREM nokey 1 a", ":0"},
	{"LREM nokey x a", "-ERR value is not an integer or out of range"},
	{"RPUSH r a a a", ":3"},
	{"LREM r -9223372036854775808 a", ":3"},
	{"EXISTS r", ":0"},
	// LSET
	{"LSET l 0 X", "+OK"},
	{"LSET l -1 Y", "+OK"},
	{"LSET l 100 X", "-ERR index out of range"},
	{"LSET l -100 X", "-ERR index out of range"},
	{"LSET l x X", "-ERR value is not an integer or out of range"},
	{"LSET nokey 0 x", "-ERR no such key"},
	{"LSET nokey x x", "-ERR no such key"},
	{"LRANGE l 0 -1", "*7[\"X\", \"d\", \"e\", \"b\", \"a\", \"b\", \"Y\"]"},
	// LTRIM
	{"LTRIM l 1 -2", "+OK"},
	{"LRANGE l 0 -1", "*5[\"d\", \"e\", \"b\", \"a\", \"b\"]"},
	{"LTRIM l x 1", "-ERR value is not an integer or out of range"},
	{"LTRIM nokey 0 1", "+OK"},
	{"LTRIM nokey x 1", "-ERR value is not an integer or out of range"},
	{"LTRIM l 0 100", "+OK"},
	{"LRANGE l 0 -1", "*5[\"d\", \"e\", \"b\", \"a\", \"b\"]"},
	{"LTRIM l -2 -1", "+OK"},
	{"LRANGE l 0 -1", "*2[\"a\", \"b\"]"},
	{"LTRIM l 5 1", "+OK"},
	{"EXISTS l", ":0"},
	{"RPUSH t a b c", ":3"},
	{"LTRIM t -1 -100", "+OK"},
	{"EXISTS t", ":0"},
	// LINSERT
	{"RPUSH l a b c", ":3"},
	{"LINSERT l before b X", ":4"},
	{"LINSERT l after c Y", ":5"},
	{"LINSERT l before a Z", ":6"},
	{"LINSERT l AFTER Y W", ":7"},
	{"LINSERT l after zz Y", ":-1"},
	{"LINSERT l middle c Y", "-ERR syntax error"},
	{"LINSERT nokey before a b", ":0"},
	{"LINSERT nokey middle a b", "-ERR syntax error"},
	{"LRANGE l 0 -1", "*7[\"Z\", \"a\", \"X\", \"b\", \"c\", \"Y\", \"W\"]"},
	// LPOP and RPOP with counts
	{"DEL l", ":1"},
	{"LPOP l", "$-1"},
	{"LPOP l 0", "*-1"},
	{"LPOP l 2", "*-1"},
	{"LPOP l -1", "-ERR value is out of range, must be positive"},
	{"LPOP l abc", "-ERR value is out of range, must be positive"},
	{"RPUSH l a b c", ":3"},
	{"LPOP l 0", "*0[]"},
	{"LPOP l -1", "-ERR value is out of range, must be positive"},
	{"LPOP l 2 3", "-ERR wrong number of arguments for 'lpop' command"},
	{"RPOP l 2 3", "-ERR wrong number of arguments for 'rpop' command"},
	{"LPOP l 1", "*1[\"a\"]"},
	{"RPOP l 0", "*0[]"},
	{"RPOP l 5", "*2[\"c\", \"b\"]"},
	{"LPOP l 1", "*-1"},
	{"RPOP l", "$-1"},
	{"EXISTS l", ":0"},
	{"RPUSH l a b c d", ":4"},
	{"LPOP l 9223372036854775807", "*4[\"a\", \"b\", \"c\", \"d\"]"},
	{"RPUSH l a b c d", ":4"},
	{"RPOP l 9223372036854775808", "-ERR value is out of range, must be positive"},
	{"RPOP l 3", "*3[\"d\", \"c\", \"b\"]"},
	{"RPOP l", "\"a\""},
	{"RPOP l", "$-1"},
	// LMOVE and RPOPLPUSH
	{"RPUSH l a b c", ":3"},
	{"SET s x", "+OK"},
	{"LMOVE l d left right", "\"a\""},
	{"LMOVE l d up right", "-ERR syntax error"},
	{"LMOVE l d left down", "-ERR syntax error"},
	{"LMOVE nokey d up right", "-ERR syntax error"},
	{"LMOVE nokey s left left", "$-1"},
	{"LMOVE nokey d left left", "$-1"},
	{"LMOVE l s left left", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LMOVE s l left left", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LMOVE l l left right", "\"b\""},
	{"LRANGE l 0 -1", "*2[\"c\", \"b\"]"},
	{"LRANGE d 0 -1", "*1[\"a\"]"},
	{"RPOPLPUSH l l", "\"b\""},
	{"LRANGE l 0 -1", "*2[\"b\", \"c\"]"},
	{"RPOPLPUSH nokey l", "$-1"},
	{"RPOPLPUSH l s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LMOVE l l LEFT left", "\"b\""},
	{"LMOVE l d RIGHT LEFT", "\"c\""},
	{"LMOVE l d Right Right", "\"b\""},
	{"EXISTS l", ":0"},
	{"LRANGE d 0 -1", "*3[\"c\", \"a\", \"b\"]"},
	{"RPOPLPUSH d newlist", "\"b\""},
	{"LRANGE newlist 0 -1", "*1[\"b\"]"},
	// wrong kind
	{"LPUSH s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"RPUSH s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LPUSHX s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"RPUSHX s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LPOP s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LPOP s 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LPOP s -1", "-ERR value is out of range, must be positive"},
	{"RPOP s 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LLEN s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LINDEX s 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LINDEX s x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LRANGE s 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LRANGE s a 1", "-ERR value is not an integer or out of range"},
	{"LREM s 1 a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LREM s x a", "-ERR value is not an integer or out of range"},
	{"LSET s 0 x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LSET s x x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LTRIM s 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LINSERT s before a b", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LINSERT s middle a b", "-ERR syntax error"},
	{"LPOS s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LPOS s a rank 0", "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"},
}

func TestListTranscript(t *testing.T)             { ctTranscript(t, listTranscript) }
func TestListTranscriptAgainstRedis(t *testing.T) { ctTranscriptAgainstRedis(t, listTranscript) }

func TestListCommands(t *testing.T) {
	abc := []string{"RPUSH l a b c"}
	ttl := []string{"RPUSH l a b c", "PEXPIRE l 100"}
	ctRun(t, []ctCase{
		{name: "lrange expired", setup: ttl, cmd: "LRANGE l 0 -1", now: 1100, want: "*0[]"},
		{name: "lrange live", setup: ttl, cmd: "LRANGE l 0 -1", now: 1099, want: `*3["a", "b", "c"]`},
		{name: "lpushx expired", setup: ttl, cmd: "LPUSHX l x", now: 1100, want: ":0"},
		{name: "lpush expired starts afresh", setup: ttl, cmd: "LPUSH l x", now: 1100, want: ":1"},
		{name: "lpop count expired", setup: ttl, cmd: "LPOP l 2", now: 1100, want: "*-1"},
		{name: "lset expired", setup: ttl, cmd: "LSET l 0 x", now: 1100, want: "-ERR no such key"},
		{name: "lmove from expired", setup: ttl, cmd: "LMOVE l d LEFT LEFT", now: 1100, want: "$-1"},
		{name: "lmove onto expired", setup: []string{"RPUSH s 1", "RPUSH d a b", "PEXPIRE d 10"}, cmd: "LMOVE s d LEFT LEFT", now: 1010, want: `"1"`},
		{name: "lpop count", setup: abc, cmd: "LPOP l 2", want: `*2["a", "b"]`},
		{name: "rpop count", setup: abc, cmd: "RPOP l 2", want: `*2["c", "b"]`},
		{name: "lpop zero", setup: abc, cmd: "LPOP l 0", want: "*0[]"},
		{name: "lpop missing with count", cmd: "LPOP l 0", want: "*-1"},
		{name: "lpop missing", cmd: "LPOP l", want: "$-1"},
		{name: "lpos tail", setup: []string{"RPUSH l a x a x a"}, cmd: "LPOS l a RANK -2 COUNT 0", want: "*2[:2, :0]"},
		{name: "linsert at head", setup: abc, cmd: "LINSERT l BEFORE a z", want: ":4"},
		{name: "binary elements", setup: []string{`RPUSH l "\x00\r\n" "a b"`}, cmd: "LRANGE l 0 -1", want: "*2[\"\x00\r\n\", \"a b\"]"},
	})
}

func TestListTTLKept(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	ctApply(t, f, 1000, "RPUSH l a b c d e f")
	ctApply(t, f, 1000, "PEXPIRE l 500")
	for _, cmd := range []string{"LPUSH l x", "RPUSH l y", "LPOP l", "RPOP l", "LSET l 0 z", "LREM l 1 c", "LINSERT l BEFORE z q", "LTRIM l 0 2", "LMOVE l l LEFT RIGHT"} {
		if r := ctApply(t, f, 1000, cmd); r.IsError() {
			t.Fatalf("%s: %s", cmd, ctFormat(r))
		}
	}
	if got := ctFormat(ctApply(t, f, 1000, "PTTL l")); got != ":500" {
		t.Errorf("PTTL after element changes: %s", got)
	}
}

func TestListVersions(t *testing.T) {
	l := []string{"RPUSH l a b c"}
	ctRunVersions(t, []ctVersionCase{
		{cmd: "LPUSH l a", key: "l", bumps: true},
		{setup: l, cmd: "RPUSH l a", key: "l", bumps: true},
		{setup: l, cmd: "LPUSHX l a", key: "l", bumps: true},
		{cmd: "RPUSHX l a", key: "l", bumps: false},
		{setup: l, cmd: "LPOP l", key: "l", bumps: true},
		{setup: l, cmd: "RPOP l 2", key: "l", bumps: true},
		{setup: l, cmd: "LPOP l 0", key: "l", bumps: false},
		{setup: l, cmd: "LREM l 0 a", key: "l", bumps: true},
		{setup: l, cmd: "LREM l 0 zz", key: "l", bumps: false},
		{setup: l, cmd: "LSET l 0 a", key: "l", bumps: true},
		{setup: l, cmd: "LTRIM l 0 -1", key: "l", bumps: true}, // Redis signals even when nothing goes
		{setup: l, cmd: "LINSERT l BEFORE b x", key: "l", bumps: true},
		{setup: l, cmd: "LINSERT l BEFORE zz x", key: "l", bumps: false},
		{setup: l, cmd: "LMOVE l d LEFT LEFT", key: "l", bumps: true},
		{setup: l, cmd: "LMOVE l d LEFT LEFT", key: "d", bumps: true},
		{setup: l, cmd: "RPOPLPUSH l l", key: "l", bumps: true},
		{setup: l, cmd: "LLEN l", key: "l", bumps: false},
		{setup: l, cmd: "LINDEX l 0", key: "l", bumps: false},
		{setup: l, cmd: "LRANGE l 0 -1", key: "l", bumps: false},
		{setup: l, cmd: "LPOS l a", key: "l", bumps: false},
	})
}

// TestListLarge pushes and pops far more than a ring buffer's first size
// from both ends and checks ranges against a slice.
func TestListLarge(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	var ref []string
	for i := 0; i < 3000; i++ {
		v := strconv.Itoa(i)
		if i%3 == 0 {
			ctApply(t, f, 1, "LPUSH l "+v)
			ref = append([]string{v}, ref...)
		} else {
			ctApply(t, f, 1, "RPUSH l "+v)
			ref = append(ref, v)
		}
		if i%7 == 0 {
			ctApply(t, f, 1, "LPOP l")
			ref = ref[1:]
		}
	}
	for _, q := range [][2]int{{0, 10}, {1000, 1010}, {len(ref) - 5, len(ref) - 1}} {
		r := ctApply(t, f, 1, "LRANGE l "+strconv.Itoa(q[0])+" "+strconv.Itoa(q[1]))
		for i, e := range r.Elems {
			if string(e.Str) != ref[q[0]+i] {
				t.Fatalf("LRANGE %v: element %d is %s, want %s", q, i, e.Str, ref[q[0]+i])
			}
		}
	}
	if got := ctFormat(ctApply(t, f, 1, "LINDEX l 1500")); got != `"`+ref[1500]+`"` {
		t.Errorf("LINDEX 1500: %s", got)
	}
}
