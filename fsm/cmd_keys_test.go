package fsm

import (
	"bytes"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/resp"
)

// Test helpers shared by cmd_keys_test.go and cmd_string_test.go. Replies
// are compared in a compact text form:
//
//	+OK  -ERR text  :3  "bulk"  nil  *nil  ["a" :1 nil]

func kvArgs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func kvRender(r resp.Reply) string {
	r = r.RESP2()
	switch r.Type {
	case resp.Nil:
		return "nil"
	case resp.NilArray:
		return "*nil"
	case resp.Status:
		return "+" + string(r.Str)
	case resp.Error:
		return "-" + string(r.Str)
	case resp.Int:
		return ":" + strconv.FormatInt(r.Int, 10)
	case resp.Bulk:
		return strconv.Quote(string(r.Str))
	case resp.Array:
		parts := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			parts[i] = kvRender(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return "?"
}

// kvStep is one command of a transcript: at time now (ms; 0 keeps the
// previous), in the database the previous step left selected.
type kvStep struct {
	now  int64
	cmd  []string
	want string
}

// kvCase is a table test: setup commands (whose replies must not be
// errors), then steps.
type kvCase struct {
	name  string
	setup [][]string
	steps []kvStep
}

// kvT0 is the default time of table tests: 2023-11-14T22:13:20Z.
const kvT0 = int64(1_700_000_000_000)

func kvRun(t *testing.T, cases []kvCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := New(Options{})
			defer f.Close()
			now, db := kvT0, 0
			for _, s := range tc.setup {
				r := f.Apply(now, Command{DB: db, Args: kvArgs(s...)})
				if r.Reply.IsError() {
					t.Fatalf("setup %q: %s", s, r.Reply.Str)
				}
				db = r.DB
			}
			for _, st := range tc.steps {
				if st.now != 0 {
					now = st.now
				}
				r := f.Apply(now, Command{DB: db, Args: kvArgs(st.cmd...)})
				db = r.DB
				if got := kvRender(r.Reply); got != st.want {
					t.Errorf("%q at %d:\n got %s\nwant %s", st.cmd, now, got, st.want)
				}
			}
		})
	}
}

// kvDo applies one command and returns the rendered reply.
func kvDo(tb testing.TB, f *FSM, now int64, cmd ...string) string {
	tb.Helper()
	return kvRender(f.Apply(now, Command{Args: kvArgs(cmd...)}).Reply)
}

// kvVersion is the WATCH version of a key in db 0.
func kvVersion(f *FSM, key string) uint64 {
	return f.KeyVersion(0, key, 0)
}

func TestStringMatch(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"*", "", false}, // KEYS and SCAN special-case "*" itself
		{"**", "", false},
		{"*", "abc", true},
		{"", "", true},
		{"", "a", false},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*c", "abc", true},
		{"a*c", "abbbc", true},
		{"a**c", "ac", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"?", "a", true},
		{"?", "", false},
		{"??", "a", false},
		{"h?llo", "hello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hallo", true}, // reversed range
		{"h[a-b]llo", "hcllo", false},
		{"[a-]", "]", true}, // "a-]" is a range up to ']'
		{"[a-]", "-", false},
		{"[abc", "b", true}, // unterminated class runs to the end
		{"[abc", "bc", false},
		{"[\\]]", "]", true},
		{"[\\", "\\", true},
		{"\\*", "*", true},
		{"\\*", "a", false},
		{"a\\", "a\\", true},
		{"\\", "\\", true},
		{"*\\?", "ab?", true},
		{"[^]", "a", true},
		{"a*", "a", true},
		{"a*b", "a", false},
		{"[\x80-\xff]", "a", false}, // signed char: the range is -128..-1
		{"[a-\xff]", "b", false},    // swapped to -1..'a'
		{"[a-\xff]", "a", true},
		{"*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false},
	}
	for _, tc := range tests {
		if got := stringMatch([]byte(tc.pat), []byte(tc.s), false); got != tc.want {
			t.Errorf("stringMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
	if !stringMatch([]byte("H[A-C]LLO"), []byte("hbllo"), true) {
		t.Error("nocase range")
	}
}

func TestParseCursor(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"", 0, true},
		{"17", 17, true},
		{"+5", 5, true},
		{"007", 7, true},
		{"-1", 1<<64 - 1, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"+", 0, false},
		{"x", 0, false},
		{"1\x00junk", 1, true},
	}
	for _, tc := range tests {
		got, ok := parseCursor([]byte(tc.in))
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseCursor(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestKeyCommands(t *testing.T) {
	kvRun(t, []kvCase{
		{name: "del", setup: [][]string{{"set", "a", "1"}, {"set", "b", "2"}}, steps: []kvStep{
			{cmd: []string{"del", "a", "b", "c", "a"}, want: ":2"},
			{cmd: []string{"exists", "a"}, want: ":0"},
			{cmd: []string{"UNLINK", "nothing"}, want: ":0"},
			{cmd: []string{"del"}, want: "-ERR wrong number of arguments for 'del' command"},
		}},
		{name: "exists counts repeats", setup: [][]string{{"set", "a", "1"}}, steps: []kvStep{
			{cmd: []string{"exists", "a", "a", "b"}, want: ":2"},
			{cmd: []string{"touch", "a", "b"}, want: ":1"},
		}},
		{name: "type", setup: [][]string{{"set", "s", "1"}, {"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"type", "s"}, want: "+string"},
			{cmd: []string{"type", "h"}, want: "+hash"},
			{cmd: []string{"type", "nope"}, want: "+none"},
		}},
		{name: "ttl of missing and persistent keys", setup: [][]string{{"set", "k", "v"}}, steps: []kvStep{
			{cmd: []string{"ttl", "k"}, want: ":-1"},
			{cmd: []string{"pttl", "k"}, want: ":-1"},
			{cmd: []string{"expiretime", "k"}, want: ":-1"},
			{cmd: []string{"ttl", "nope"}, want: ":-2"},
			{cmd: []string{"pexpiretime", "nope"}, want: ":-2"},
		}},
		{name: "expire and ttl rounding", setup: [][]string{{"set", "k", "v"}}, steps: []kvStep{
			{cmd: []string{"expire", "k", "10"}, want: ":1"},
			{cmd: []string{"pttl", "k"}, want: ":10000"},
			{cmd: []string{"ttl", "k"}, want: ":10"},
			{now: kvT0 + 4501, cmd: []string{"ttl", "k"}, want: ":5"},     // 5499 ms
			{now: kvT0 + 4500, cmd: []string{"pttl", "k"}, want: ":5499"}, // time never goes back
			{cmd: []string{"expiretime", "k"}, want: ":1700000010"},
			{cmd: []string{"pexpiretime", "k"}, want: ":1700000010000"},
			{now: kvT0 + 9999, cmd: []string{"pttl", "k"}, want: ":1"},
			{now: kvT0 + 10000, cmd: []string{"pttl", "k"}, want: ":-2"},
			{cmd: []string{"get", "k"}, want: "nil"},
		}},
		{name: "expire variants", setup: [][]string{{"set", "k", "v"}}, steps: []kvStep{
			{cmd: []string{"pexpire", "k", "1500"}, want: ":1"},
			{cmd: []string{"ttl", "k"}, want: ":2"},
			{cmd: []string{"expireat", "k", "1700000100"}, want: ":1"},
			{cmd: []string{"pttl", "k"}, want: ":100000"},
			{cmd: []string{"pexpireat", "k", "1700000000123"}, want: ":1"},
			{cmd: []string{"pttl", "k"}, want: ":123"},
			{cmd: []string{"expire", "nope", "10"}, want: ":0"},
		}},
		{name: "expire in the past deletes", setup: [][]string{{"set", "k", "v"}, {"set", "k2", "v"}, {"set", "k3", "v"}}, steps: []kvStep{
			{cmd: []string{"expire", "k", "-1"}, want: ":1"},
			{cmd: []string{"exists", "k"}, want: ":0"},
			{cmd: []string{"pexpireat", "k2", "1700000000000"}, want: ":1"}, // exactly now
			{cmd: []string{"exists", "k2"}, want: ":0"},
			{cmd: []string{"expire", "k3", "0"}, want: ":1"},
			{cmd: []string{"dbsize"}, want: ":0"},
		}},
		{name: "expire NX XX GT LT", setup: [][]string{{"set", "k", "v"}}, steps: []kvStep{
			{cmd: []string{"expire", "k", "100", "xx"}, want: ":0"},
			{cmd: []string{"expire", "k", "100", "gt"}, want: ":0"}, // no ttl counts as infinite
			{cmd: []string{"expire", "k", "100", "lt"}, want: ":1"},
			{cmd: []string{"expire", "k", "50", "NX"}, want: ":0"},
			{cmd: []string{"expire", "k", "50", "xx"}, want: ":1"},
			{cmd: []string{"expire", "k", "40", "gt"}, want: ":0"},
			{cmd: []string{"expire", "k", "50", "gt"}, want: ":0"},
			{cmd: []string{"expire", "k", "60", "gt"}, want: ":1"},
			{cmd: []string{"expire", "k", "60", "lt"}, want: ":0"},
			{cmd: []string{"expire", "k", "59", "lt", "xx"}, want: ":1"},
			{cmd: []string{"ttl", "k"}, want: ":59"},
			{cmd: []string{"persist", "k"}, want: ":1"},
			{cmd: []string{"expire", "k", "5", "nx"}, want: ":1"},
		}},
		{name: "expire errors", setup: [][]string{{"set", "k", "v"}}, steps: []kvStep{
			{cmd: []string{"expire", "k", "10", "foo"}, want: "-ERR Unsupported option foo"},
			{cmd: []string{"expire", "k", "abc", "foo"}, want: "-ERR Unsupported option foo"},
			{cmd: []string{"expire", "k", "10", "nx", "xx"}, want: "-ERR NX and XX, GT or LT options at the same time are not compatible"},
			{cmd: []string{"expire", "k", "10", "nx", "gt"}, want: "-ERR NX and XX, GT or LT options at the same time are not compatible"},
			{cmd: []string{"expire", "k", "10", "gt", "lt"}, want: "-ERR GT and LT options at the same time are not compatible"},
			{cmd: []string{"expire", "k", "abc"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"expire", "k", " 1"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"expire", "k", "9223372036854775"}, want: "-ERR invalid expire time in 'expire' command"},
			{cmd: []string{"expire", "k", "9223372036854776"}, want: "-ERR invalid expire time in 'expire' command"},
			{cmd: []string{"expire", "k", "-9223372036854776"}, want: "-ERR invalid expire time in 'expire' command"},
			{cmd: []string{"PEXPIRE", "k", "9223372036854775807"}, want: "-ERR invalid expire time in 'pexpire' command"},
			{cmd: []string{"expireat", "k", "9223372036854776"}, want: "-ERR invalid expire time in 'expireat' command"},
			{cmd: []string{"pexpireat", "k", "9223372036854775807"}, want: ":1"},
			{cmd: []string{"expire", "k"}, want: "-ERR wrong number of arguments for 'expire' command"},
		}},
		{name: "persist", setup: [][]string{{"set", "k", "v", "ex", "10"}, {"set", "p", "v"}}, steps: []kvStep{
			{cmd: []string{"persist", "k"}, want: ":1"},
			{cmd: []string{"ttl", "k"}, want: ":-1"},
			{cmd: []string{"persist", "k"}, want: ":0"},
			{cmd: []string{"persist", "p"}, want: ":0"},
			{cmd: []string{"persist", "nope"}, want: ":0"},
		}},
		{name: "keys", setup: [][]string{{"mset", "b", "1", "a", "1", "ab", "1", "h*llo", "1", "hello", "1"}, {"set", "gone", "1", "px", "5"}}, steps: []kvStep{
			{cmd: []string{"keys", "*"}, want: `["a" "ab" "b" "gone" "h*llo" "hello"]`},
			{now: kvT0 + 5, cmd: []string{"keys", "*"}, want: `["a" "ab" "b" "h*llo" "hello"]`},
			{cmd: []string{"keys", "a*"}, want: `["a" "ab"]`},
			{cmd: []string{"keys", "h\\*llo"}, want: `["h*llo"]`},
			{cmd: []string{"keys", "h?llo"}, want: `["h*llo" "hello"]`},
			{cmd: []string{"keys", "[ab]"}, want: `["a" "b"]`},
			{cmd: []string{"keys", "zz*"}, want: `[]`},
		}},
		{name: "randomkey", setup: [][]string{{"set", "gone", "1", "px", "5"}}, steps: []kvStep{
			{cmd: []string{"randomkey"}, want: `"gone"`},
			{now: kvT0 + 5, cmd: []string{"randomkey"}, want: "nil"},
		}},
		{name: "dbsize", setup: [][]string{{"mset", "a", "1", "b", "2"}, {"set", "c", "1", "px", "10"}, {"pexpire", "c", "20"}, {"select", "1"}, {"set", "x", "1", "px", "10"}, {"select", "0"}}, steps: []kvStep{
			{cmd: []string{"dbsize"}, want: ":3"},
			{now: kvT0 + 10, cmd: []string{"dbsize"}, want: ":3"},
			{now: kvT0 + 20, cmd: []string{"dbsize"}, want: ":2"},
			{cmd: []string{"select", "1"}, want: "+OK"},
			{cmd: []string{"dbsize"}, want: ":0"},
			{cmd: []string{"dbsize", "x"}, want: "-ERR wrong number of arguments for 'dbsize' command"},
		}},
		{name: "rename", setup: [][]string{{"set", "a", "1", "ex", "100"}, {"set", "b", "2"}}, steps: []kvStep{
			{cmd: []string{"rename", "a", "c"}, want: "+OK"},
			{cmd: []string{"get", "c"}, want: `"1"`},
			{cmd: []string{"ttl", "c"}, want: ":100"},
			{cmd: []string{"exists", "a"}, want: ":0"},
			{cmd: []string{"rename", "a", "c"}, want: "-ERR no such key"},
			{cmd: []string{"rename", "c", "c"}, want: "+OK"},
			{cmd: []string{"renamenx", "c", "c"}, want: ":0"},
			{cmd: []string{"renamenx", "c", "b"}, want: ":0"},
			{cmd: []string{"rename", "c", "b"}, want: "+OK"},
			{cmd: []string{"ttl", "b"}, want: ":100"},
			{cmd: []string{"renamenx", "b", "d"}, want: ":1"},
			{cmd: []string{"renamenx", "nope", "d"}, want: "-ERR no such key"},
			{cmd: []string{"keys", "*"}, want: `["d"]`},
		}},
		{name: "copy", setup: [][]string{{"set", "a", "1", "ex", "100"}, {"hset", "h", "f1", "v1", "f2", "v2"}, {"set", "b", "2"}}, steps: []kvStep{
			{cmd: []string{"copy", "a", "c"}, want: ":1"},
			{cmd: []string{"ttl", "c"}, want: ":100"},
			{cmd: []string{"copy", "a", "b"}, want: ":0"},
			{cmd: []string{"copy", "a", "b", "REPLACE"}, want: ":1"},
			{cmd: []string{"get", "b"}, want: `"1"`},
			{cmd: []string{"copy", "a", "a"}, want: "-ERR source and destination objects are the same"},
			{cmd: []string{"copy", "nope", "x"}, want: ":0"},
			{cmd: []string{"copy", "h", "h2"}, want: ":1"},
			{cmd: []string{"hset", "h2", "f3", "v3"}, want: ":1"},
			{cmd: []string{"hgetall", "h"}, want: `["f1" "v1" "f2" "v2"]`},
			{cmd: []string{"copy", "a", "a", "db", "2"}, want: ":1"},
			{cmd: []string{"copy", "a", "a", "db", "16"}, want: "-ERR DB index is out of range"},
			{cmd: []string{"copy", "a", "a", "db", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"copy", "a", "a", "db"}, want: "-ERR syntax error"},
			{cmd: []string{"copy", "a", "a", "foo"}, want: "-ERR syntax error"},
			{cmd: []string{"select", "2"}, want: "+OK"},
			{cmd: []string{"ttl", "a"}, want: ":100"},
		}},
		{name: "move", setup: [][]string{{"set", "a", "1", "ex", "100"}, {"set", "b", "2"}, {"select", "3"}, {"set", "b", "3"}, {"select", "0"}}, steps: []kvStep{
			{cmd: []string{"move", "a", "3"}, want: ":1"},
			{cmd: []string{"exists", "a"}, want: ":0"},
			{cmd: []string{"move", "b", "3"}, want: ":0"},
			{cmd: []string{"move", "nope", "3"}, want: ":0"},
			{cmd: []string{"move", "b", "0"}, want: "-ERR source and destination objects are the same"},
			{cmd: []string{"move", "b", "16"}, want: "-ERR DB index is out of range"},
			{cmd: []string{"move", "b", "-1"}, want: "-ERR DB index is out of range"},
			{cmd: []string{"move", "b", "1.5"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"select", "3"}, want: "+OK"},
			{cmd: []string{"ttl", "a"}, want: ":100"},
			{cmd: []string{"get", "b"}, want: `"3"`},
		}},
		{name: "flush", setup: [][]string{{"set", "a", "1"}, {"select", "1"}, {"set", "b", "1"}}, steps: []kvStep{
			{cmd: []string{"flushdb", "bogus"}, want: "-ERR syntax error"},
			{cmd: []string{"flushdb", "sync", "async"}, want: "-ERR syntax error"},
			{cmd: []string{"flushdb", "ASYNC"}, want: "+OK"},
			{cmd: []string{"dbsize"}, want: ":0"},
			{cmd: []string{"select", "0"}, want: "+OK"},
			{cmd: []string{"dbsize"}, want: ":1"},
			{cmd: []string{"set", "x", "1", "ex", "10"}, want: "+OK"},
			{cmd: []string{"select", "1"}, want: "+OK"},
			{cmd: []string{"set", "y", "1"}, want: "+OK"},
			{cmd: []string{"flushall"}, want: "+OK"},
			{cmd: []string{"dbsize"}, want: ":0"},
			{cmd: []string{"select", "0"}, want: "+OK"},
			{cmd: []string{"dbsize"}, want: ":0"},
		}},
		{name: "object", setup: [][]string{{"set", "i", "123"}, {"set", "s", "hello"}, {"set", "r", strings.Repeat("x", 45)}, {"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"object", "encoding", "i"}, want: `"int"`},
			{cmd: []string{"object", "encoding", "s"}, want: `"embstr"`},
			{cmd: []string{"object", "encoding", "r"}, want: `"raw"`},
			{cmd: []string{"object", "encoding", "h"}, want: `"listpack"`},
			{cmd: []string{"object", "encoding", "nope"}, want: "nil"},
			{cmd: []string{"object", "refcount", "i"}, want: ":2147483647"},
			{cmd: []string{"object", "refcount", "s"}, want: ":1"},
			{cmd: []string{"object", "idletime", "s"}, want: ":0"},
			{cmd: []string{"object", "encoding"}, want: "-ERR wrong number of arguments for 'object|encoding' command"},
			{cmd: []string{"object", "foo", "s"}, want: "-ERR unknown subcommand 'foo'. Try OBJECT HELP."},
		}},
	})
}

func TestScan(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	want := map[string]bool{}
	for i := 0; i < 100; i++ {
		k := "key:" + strconv.Itoa(i)
		want[k] = true
		f.Apply(kvT0, Command{Args: kvArgs("set", k, "v")})
	}
	f.Apply(kvT0, Command{Args: kvArgs("hset", "hash:1", "f", "v")})

	scanAll := func(extra ...string) (seen map[string]int, calls int) {
		seen = map[string]int{}
		cursor := "0"
		for {
			calls++
			r := f.Apply(kvT0, Command{Args: kvArgs(append([]string{"scan", cursor}, extra...)...)}).Reply
			if r.Type != resp.Array || len(r.Elems) != 2 {
				t.Fatalf("scan reply %s", kvRender(r))
			}
			for _, e := range r.Elems[1].Elems {
				seen[string(e.Str)]++
			}
			cursor = string(r.Elems[0].Str)
			if cursor == "0" || calls > 1000 {
				return seen, calls
			}
			// Churn: keys that come and go during the scan.
			f.Apply(kvT0, Command{Args: kvArgs("set", "tmp:"+strconv.Itoa(calls), "v")})
			f.Apply(kvT0, Command{Args: kvArgs("del", "tmp:"+strconv.Itoa(calls-1))})
		}
	}

	seen, calls := scanAll("count", "7", "match", "key:*")
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("%s returned %d times", k, seen[k])
		}
	}
	if len(seen) != len(want) || calls < 10 {
		t.Errorf("returned %d keys in %d calls", len(seen), calls)
	}
	seen, _ = scanAll("type", "HASH", "count", "1000")
	if len(seen) != 1 || seen["hash:1"] != 1 {
		t.Errorf("type filter: %v", seen)
	}

	kvRun(t, []kvCase{
		{name: "errors", steps: []kvStep{
			{cmd: []string{"scan", "x"}, want: "-ERR invalid cursor"},
			{cmd: []string{"scan", " 1"}, want: "-ERR invalid cursor"},
			{cmd: []string{"scan", "18446744073709551616"}, want: "-ERR invalid cursor"},
			{cmd: []string{"scan", "0", "count", "0"}, want: "-ERR syntax error"},
			{cmd: []string{"scan", "0", "count", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"scan", "0", "count"}, want: "-ERR syntax error"},
			{cmd: []string{"scan", "0", "foo", "bar"}, want: "-ERR syntax error"},
			{cmd: []string{"scan", "-1"}, want: `["0" []]`},
			{cmd: []string{"scan", ""}, want: `["0" []]`},
		}},
		{name: "expired keys are skipped", setup: [][]string{{"set", "a", "1", "px", "10"}, {"set", "b", "1"}}, steps: []kvStep{
			{now: kvT0 + 10, cmd: []string{"scan", "0"}, want: `["0" ["b"]]`},
		}},
	})
}

// A flush changes the versions of the keys it removes and of no other, as
// Redis 7.0 touches only the watched keys that existed: a WATCH of an
// absent key, or of a key in another database, survives FLUSHALL or
// FLUSHDB (it used to be broken by every flush).
func TestFlushTouchesOnlyKeysItRemoves(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	f.Apply(kvT0, Command{Args: kvArgs("set", "k", "v")})
	f.Apply(kvT0, Command{DB: 1, Args: kvArgs("set", "other", "v")})
	absent, present := kvVersion(f, "nokey"), kvVersion(f, "k")
	other := f.KeyVersion(1, "other", kvT0)
	otherAbsent := f.KeyVersion(1, "nokey", kvT0)
	f.Apply(kvT0, Command{Args: kvArgs("flushdb")})
	if kvVersion(f, "nokey") != absent {
		t.Error("FLUSHDB changed the version of a key that did not exist")
	}
	if kvVersion(f, "k") == present {
		t.Error("FLUSHDB left the version of a key it removed")
	}
	if f.KeyVersion(1, "other", kvT0) != other || f.KeyVersion(1, "nokey", kvT0) != otherAbsent {
		t.Error("FLUSHDB changed versions in another database")
	}
	f.Apply(kvT0, Command{Args: kvArgs("flushall")})
	if kvVersion(f, "nokey") != absent {
		t.Error("FLUSHALL changed the version of a key that did not exist")
	}
	if f.KeyVersion(1, "other", kvT0) == other {
		t.Error("FLUSHALL left the version of a key it removed in database 1")
	}
	// Past the tombstone bound every absent key takes the flush's version
	// (aborting more than Redis would, never less).
	big := New(Options{})
	defer big.Close()
	for i := range maxTombstones + 1 {
		big.Apply(kvT0, Command{Args: kvArgs("set", "k"+strconv.Itoa(i), "v")})
	}
	before := kvVersion(big, "nokey")
	big.Apply(kvT0, Command{Args: kvArgs("flushall")})
	if kvVersion(big, "nokey") == before || kvVersion(big, "k0") == before {
		t.Error("a flush past the tombstone bound kept an old version")
	}
}

func TestKeyCommandsBumpVersions(t *testing.T) {
	writes := []struct {
		setup [][]string
		cmd   []string
		key   string
	}{
		{[][]string{{"set", "k", "v"}}, []string{"del", "k"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"unlink", "k"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"expire", "k", "10"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"pexpire", "k", "10"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"expireat", "k", "1800000000"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"pexpireat", "k", "1800000000000"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"expire", "k", "-1"}, "k"},
		{[][]string{{"set", "k", "v", "ex", "5"}}, []string{"persist", "k"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"rename", "k", "d"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"rename", "k", "d"}, "d"},
		{[][]string{{"set", "k", "v"}, {"set", "d", "v"}}, []string{"rename", "k", "d"}, "d"},
		{[][]string{{"set", "k", "v"}}, []string{"renamenx", "k", "d"}, "d"},
		{[][]string{{"set", "k", "v"}}, []string{"copy", "k", "d"}, "d"},
		{[][]string{{"set", "k", "v"}}, []string{"move", "k", "1"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"flushdb"}, "k"},
		{[][]string{{"set", "k", "v"}}, []string{"flushall"}, "k"},
	}
	for _, w := range writes {
		f := New(Options{})
		for _, s := range w.setup {
			f.Apply(kvT0, Command{Args: kvArgs(s...)})
		}
		before := kvVersion(f, w.key)
		r := f.Apply(kvT0, Command{Args: kvArgs(w.cmd...)})
		if r.Reply.IsError() {
			t.Errorf("%q: %s", w.cmd, r.Reply.Str)
		}
		if kvVersion(f, w.key) == before {
			t.Errorf("%q did not change the version of %q", w.cmd, w.key)
		}
		f.Close()
	}

	// Commands that change nothing leave versions alone, through the log
	// and on the read path.
	noops := [][]string{
		{"exists", "k"}, {"touch", "k"}, {"type", "k"}, {"ttl", "k"}, {"pttl", "k"},
		{"expiretime", "k"}, {"pexpiretime", "k"}, {"keys", "*"}, {"scan", "0"},
		{"randomkey"}, {"dbsize"}, {"object", "encoding", "k"},
		{"persist", "k"}, {"expire", "k", "10", "xx"}, {"expire", "k", "10", "gt"},
		{"rename", "k", "k"}, {"renamenx", "k", "p"}, {"copy", "k", "p"}, {"move", "k", "0"},
		{"expire", "nope", "10"}, {"del", "nope"},
	}
	for _, cmd := range noops {
		f := New(Options{})
		f.Apply(kvT0, Command{Args: kvArgs("set", "k", "v")})
		f.Apply(kvT0, Command{Args: kvArgs("set", "p", "v")})
		vk, vp := kvVersion(f, "k"), kvVersion(f, "p")
		if spec, _ := Lookup([]byte(cmd[0])); spec.Flags&Read != 0 {
			f.Read(kvT0, Command{Args: kvArgs(cmd...)})
		}
		f.Apply(kvT0, Command{Args: kvArgs(cmd...)})
		if kvVersion(f, "k") != vk || kvVersion(f, "p") != vp {
			t.Errorf("%q changed a version", cmd)
		}
		f.Close()
	}
}

// TestReadPathKeys runs the read commands on the read path against
// expired keys: they must not change anything (the helpers panic if they
// try) and must answer as through the log.
func TestReadPathKeys(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	f.Apply(kvT0, Command{Args: kvArgs("set", "gone", "v", "px", "1")})
	f.Apply(kvT0, Command{Args: kvArgs("set", "k", "v", "ex", "100")})
	for _, cmd := range [][]string{
		{"exists", "gone", "k"}, {"touch", "gone"}, {"type", "gone"}, {"ttl", "k"}, {"pttl", "gone"},
		{"expiretime", "k"}, {"keys", "*"}, {"scan", "0"}, {"randomkey"}, {"dbsize"},
		{"get", "gone"}, {"mget", "gone", "k"}, {"strlen", "gone"}, {"getrange", "k", "0", "-1"},
		{"time"}, {"ping"}, {"echo", "x"}, {"object", "encoding", "gone"},
	} {
		got := kvRender(f.Read(kvT0+1, Command{Args: kvArgs(cmd...)}).Reply)
		f2 := New(Options{})
		f2.Apply(kvT0, Command{Args: kvArgs("set", "gone", "v", "px", "1")})
		f2.Apply(kvT0, Command{Args: kvArgs("set", "k", "v", "ex", "100")})
		want := kvRender(f2.Apply(kvT0+1, Command{Args: kvArgs(cmd...)}).Reply)
		f2.Close()
		if got != want {
			t.Errorf("%q: read path %s, log %s", cmd, got, want)
		}
	}
	if r := f.Read(kvT0, Command{Args: kvArgs("del", "k")}); !r.Reply.IsError() {
		t.Errorf("del on the read path: %s", kvRender(r.Reply))
	}
}

// TestAgainstRedis runs transcripts against a real redis-server and the
// state machine and compares the replies byte for byte: with a
// redis-server testredis starts, or the scratch server DEADBOLT_REDIS names
// (host:port), which it flushes.
//
// Commands starting with '~' compare their array replies as sets (KEYS
// order differs by design).
func TestAgainstRedis(t *testing.T) {
	addr := os.Getenv("DEADBOLT_REDIS")
	if addr == "" {
		addr = testredis.Start(t)
	}
	for _, tr := range kvRedisTranscripts {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rc := &kvRedisConn{t: t, c: conn}
		rc.do("select", "0")
		rc.do("flushall")
		f := New(Options{})
		db := 0
		for _, cmd := range tr {
			unordered := strings.HasPrefix(cmd[0], "~")
			if unordered {
				cmd = append([]string{cmd[0][1:]}, cmd[1:]...)
			}
			want := rc.do(cmd...)
			r := f.Apply(time.Now().UnixMilli(), Command{DB: db, Args: kvArgs(cmd...)})
			db = r.DB
			got := r.Reply
			if unordered {
				kvSortReply(&want)
				kvSortReply(&got)
			}
			if !got.Equal(want) {
				t.Errorf("%q:\n got %s\nwant %s", cmd, kvRender(got), kvRender(want))
			}
		}
		f.Close()
		conn.Close()
	}
}

func kvSortReply(r *resp.Reply) {
	if r.Type == resp.Array {
		sort.Slice(r.Elems, func(i, j int) bool { return kvRender(r.Elems[i]) < kvRender(r.Elems[j]) })
	}
}

type kvRedisConn struct {
	t   *testing.T
	c   net.Conn
	buf []byte
}

func (rc *kvRedisConn) do(args ...string) resp.Reply {
	rc.t.Helper()
	var out []byte
	out = append(out, '*')
	out = strconv.AppendInt(out, int64(len(args)), 10)
	out = append(out, "\r\n"...)
	for _, a := range args {
		out = append(out, '$')
		out = strconv.AppendInt(out, int64(len(a)), 10)
		out = append(out, "\r\n"...)
		out = append(out, a...)
		out = append(out, "\r\n"...)
	}
	rc.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.c.Write(out); err != nil {
		rc.t.Fatal(err)
	}
	for {
		if r, n, ok := resp.Parse(rc.buf); ok {
			rc.buf = rc.buf[n:]
			return r
		}
		var b [4096]byte
		n, err := rc.c.Read(b[:])
		if err != nil {
			rc.t.Fatal(err)
		}
		rc.buf = append(rc.buf, b[:n]...)
	}
}

// kvRedisTranscripts are compared against redis-server by TestAgainstRedis.
// Each runs on a flushed server and a fresh state machine.
var kvRedisTranscripts = [][][]string{
	{ // keys
		{"set", "a", "1"}, {"set", "b", "2"}, {"del", "a", "b", "c"}, {"del"}, {"exists", "a"},
		{"set", "k", "v"}, {"exists", "k", "k", "x"}, {"touch", "k", "x"}, {"type", "k"}, {"type", "x"},
		{"hset", "h", "f", "v"}, {"type", "h"},
		{"ttl", "k"}, {"pttl", "k"}, {"ttl", "x"}, {"expiretime", "k"}, {"pexpiretime", "x"},
		{"expire", "k", "100"}, {"ttl", "k"}, {"expire", "k", "100", "nx"}, {"expire", "k", "100", "xx"},
		{"expire", "k", "50", "gt"}, {"expire", "k", "150", "gt"}, {"expire", "k", "200", "lt"}, {"expire", "k", "20", "LT"},
		{"ttl", "k"}, {"persist", "k"}, {"persist", "k"}, {"persist", "x"}, {"ttl", "k"},
		{"expire", "k", "100", "gt"}, {"expire", "k", "100", "lt"}, {"persist", "k"},
		{"expire", "k", "10", "foo"}, {"expire", "k", "abc", "foo"}, {"expire", "k", "10", "nx", "xx"},
		{"expire", "k", "10", "gt", "lt"}, {"expire", "k", "10", "nx", "lt"}, {"expire", "k", "abc"}, {"expire", "k", "1.5"},
		{"expire", "k", "9223372036854775"}, {"expire", "k", "-9223372036854776"}, {"pexpire", "k", "9223372036854775807"},
		{"expireat", "k", "9223372036854776"}, {"pexpireat", "k", "9223372036854775807"}, {"ttl", "k"}, {"persist", "k"},
		{"expire", "x", "10"}, {"expire", "k", "-5"}, {"exists", "k"}, {"set", "k", "v"}, {"pexpireat", "k", "1"}, {"get", "k"},
		{"set", "k", "v"}, {"expire", "k", "0"}, {"get", "k"},
		{"mset", "a", "1", "ab", "2", "b", "3", "h*llo", "4", "hello", "5", "hallo", "6", "[x", "7"},
		{"~keys", "*"}, {"~keys", "a*"}, {"~keys", "h?llo"}, {"~keys", "h[ae]llo"}, {"~keys", "h[^e]llo"}, {"~keys", "h\\*llo"},
		{"~keys", "[a-b]"}, {"~keys", "[b-a]"}, {"~keys", "\\[x"}, {"~keys", "[[]x"}, {"~keys", "[a"}, {"~keys", "*llo"}, {"~keys", "nomatch*"},
		{"set", "", "empty"}, {"set", "\x90", "hi"}, {"set", "\xff", "hi"}, {"~keys", "*"}, {"~keys", "**"}, {"~keys", "?"},
		{"~keys", "[\x80-\xff]"}, {"~keys", "[a-\xff]"}, {"~keys", "[\x80-\x91]"}, {"~keys", "[\x91-\xff]"}, {"~keys", "[^a]"},
		{"dbsize"}, {"flushdb", "foo"}, {"flushall", "sync", "x"}, {"flushdb", "ASYNC"}, {"dbsize"}, {"randomkey"},
		{"set", "a", "1"}, {"randomkey"}, {"flushall", "SYNC"}, {"flushall"}, {"dbsize"},
		{"scan", "x"}, {"scan", " 1"}, {"scan", "18446744073709551616"}, {"scan", "0", "count", "0"},
		{"scan", "0", "count", "x"}, {"scan", "0", "count"}, {"scan", "0", "bar", "x"}, {"scan", "-1"}, {"scan", "+0"},
	},
	{ // rename, copy, move, select
		{"set", "a", "1"}, {"expire", "a", "100"}, {"rename", "a", "b"}, {"ttl", "b"}, {"get", "b"}, {"exists", "a"},
		{"rename", "a", "b"}, {"renamenx", "a", "b"}, {"rename", "b", "b"}, {"renamenx", "b", "b"},
		{"set", "c", "3"}, {"renamenx", "b", "c"}, {"rename", "b", "c"}, {"ttl", "c"}, {"renamenx", "c", "d"},
		{"copy", "d", "e"}, {"ttl", "e"}, {"copy", "d", "e"}, {"copy", "d", "e", "replace"}, {"copy", "d", "d"},
		{"copy", "x", "y"}, {"copy", "d", "d", "db", "1"}, {"copy", "d", "d", "db", "16"}, {"copy", "d", "d", "db", "x"},
		{"copy", "d", "d", "db"}, {"copy", "d", "d", "foo"}, {"copy", "d", "d", "replace", "db", "1", "replace"},
		{"move", "d", "0"}, {"move", "d", "16"}, {"move", "d", "-1"}, {"move", "d", "x"}, {"move", "d", "1"}, {"move", "d", "2"},
		{"move", "zz", "2"}, {"select", "2"}, {"get", "d"}, {"ttl", "d"}, {"select", "1"}, {"get", "d"}, {"select", "16"},
		{"select", "-1"}, {"select", "x"}, {"select", "4294967296"}, {"select", "0"}, {"dbsize"},
		{"ping"}, {"ping", "hi"}, {"ping", "a", "b"}, {"echo", "x"}, {"echo"},
		{"object", "encoding", "e"}, {"object", "encoding", "nope"}, {"object", "encoding"}, {"object", "foo"}, {"object"},
		{"set", "s", "hello"}, {"object", "encoding", "s"}, {"object", "refcount", "s"},
		{"set", "r", strings.Repeat("x", 45)}, {"object", "encoding", "r"}, {"set", "r", strings.Repeat("x", 44)}, {"object", "encoding", "r"},
		{"set", "n", "12345678901234567890"}, {"object", "encoding", "n"}, {"set", "n", "-9223372036854775808"}, {"object", "encoding", "n"},
		{"set", "n", "10000"}, {"object", "refcount", "n"}, {"object", "help"}, {"object", "help", "x"},
		{"object", "freq", "n"}, {"object", "idletime"},
	},
	{ // strings
		{"get", "k"}, {"set", "k", "v"}, {"get", "k"}, {"set", "k", "v2", "nx"}, {"set", "k", "v3", "xx"}, {"get", "k"},
		{"set", "n", "v", "xx"}, {"set", "k", "v", "nx", "xx"}, {"set", "k", "v", "xx", "nx"}, {"set", "k", "v", "nx", "nx"},
		{"set", "k", "v", "ex"}, {"set", "k", "v", "ex", "10", "px", "100"}, {"set", "k", "v", "ex", "10", "ex", "20"}, {"ttl", "k"},
		{"set", "k", "v", "keepttl"}, {"ttl", "k"}, {"set", "k", "v", "keepttl", "ex", "10"}, {"set", "k", "v", "ex", "10", "keepttl"},
		{"set", "k", "v", "persist"}, {"set", "k", "v", "foo"}, {"set", "k", "v", "ex", "0"}, {"set", "k", "v", "ex", "-1"},
		{"set", "k", "v", "ex", "x"}, {"set", "k", "v", "px", "9223372036854775807"}, {"set", "k", "v", "ex", "9223372036854775"},
		{"set", "k", "v", "exat", "9223372036854775"}, {"set", "k", "v", "exat", "9223372036854776"}, {"set", "k", "v", "pxat", "1"}, {"get", "k"},
		{"set", "k", "v1"}, {"set", "k", "v2", "get"}, {"set", "k", "v3", "get", "nx"}, {"set", "x", "v3", "get", "xx"}, {"set", "x", "v3", "get", "nx"},
		{"hset", "h", "f", "v"}, {"set", "h", "v", "get"}, {"set", "h", "v", "get", "ex", "0"}, {"set", "h", "str"}, {"get", "h"},
		{"set", "k", "v", "EX", "100", "GET"}, {"ttl", "k"}, {"set", "k", "v"}, {"ttl", "k"},
		{"setnx", "k", "x"}, {"setnx", "new", "x"}, {"setex", "k", "10", "v"}, {"ttl", "k"}, {"setex", "k", "0", "v"},
		{"setex", "k", "x", "v"}, {"psetex", "k", "1700", "v"}, {"ttl", "k"}, {"psetex", "k", "-1", "v"}, {"setex", "k", "9223372036854775", "v"},
		{"getset", "k", "new"}, {"ttl", "k"}, {"getset", "nope", "x"}, {"hset", "h2", "f", "v"}, {"getset", "h2", "x"},
		{"getdel", "k"}, {"getdel", "k"}, {"getdel", "h2"},
		{"set", "g", "v"}, {"getex", "g"}, {"getex", "g", "ex", "100"}, {"ttl", "g"}, {"getex", "g", "persist"}, {"ttl", "g"},
		{"getex", "g", "px", "100", "persist"}, {"getex", "g", "persist", "ex", "1"}, {"getex", "g", "ex"}, {"getex", "g", "nx"},
		{"getex", "g", "keepttl"}, {"getex", "g", "ex", "0"}, {"getex", "g", "ex", "x"}, {"getex", "nope", "ex", "0"},
		{"getex", "h2", "ex", "0"}, {"getex", "g", "exat", "1"}, {"get", "g"}, {"set", "g", "v"}, {"getex", "g", "pxat", "9223372036854775807"},
		{"getex", "g", "px", "9223372036854775807"}, {"getex", "g", "get"},
		{"mset", "a", "1", "b", "2"}, {"mget", "a", "b", "c", "h2"}, {"mset", "a"}, {"mset", "a", "1", "b"},
		{"msetnx", "a", "1", "z", "2"}, {"exists", "z"}, {"msetnx", "y", "1", "z", "2"}, {"mget", "y", "z"}, {"msetnx", "q"},
		{"set", "i", "10"}, {"incr", "i"}, {"decr", "i"}, {"incrby", "i", "-20"}, {"decrby", "i", "5"}, {"incr", "nope"}, {"decr", "nope2"},
		{"incrby", "i", "x"}, {"incrby", "i", " 1"}, {"incrby", "i", "+1"}, {"incrby", "i", "01"}, {"decrby", "i", "-9223372036854775808"},
		{"set", "i", "9223372036854775807"}, {"incr", "i"}, {"set", "i", "-9223372036854775808"}, {"decr", "i"}, {"incrby", "i", "-1"},
		{"set", "i", "abc"}, {"incr", "i"}, {"set", "i", " 1"}, {"incr", "i"}, {"set", "i", "1.0"}, {"incr", "i"}, {"incr", "h2"},
		{"set", "f", "10.50"}, {"incrbyfloat", "f", "0.1"}, {"incrbyfloat", "f", "-5"}, {"incrbyfloat", "f", "5.0e3"},
		{"incrbyfloat", "nf", "0.1"}, {"incrbyfloat", "nf", "0.2"}, {"incrbyfloat", "nf", "1e20"}, {"incrbyfloat", "nf", "-1e20"},
		{"incrbyfloat", "nf", "x"}, {"incrbyfloat", "nf", "inf"}, {"incrbyfloat", "nf", "nan"}, {"incrbyfloat", "nf", " 1"},
		{"incrbyfloat", "nf", "1e400"}, {"incrbyfloat", "nf", "-1e400"}, {"incrbyfloat", "nf", "1e4933"}, {"incrbyfloat", "nf", "0x10"},
		{"incrbyfloat", "nf", "1e-400"}, {"set", "f", "abc"}, {"incrbyfloat", "f", "1"}, {"incrbyfloat", "h2", "1"},
		{"set", "f", "3"}, {"expire", "f", "100"}, {"incrbyfloat", "f", "1.5"}, {"ttl", "f"}, {"incr", "i2"}, {"set", "f", "-0"}, {"incrbyfloat", "f", "0"},
		{"incrbyfloat", "f2", "17179869184"}, {"incrbyfloat", "f2", "0.00001"}, {"incrbyfloat", "f3", "1.1e-17"},
		{"append", "s", "abc"}, {"append", "s", "def"}, {"get", "s"}, {"strlen", "s"}, {"strlen", "nope"}, {"strlen", "h2"}, {"append", "h2", "x"},
		{"expire", "s", "100"}, {"append", "s", "g"}, {"ttl", "s"},
		{"getrange", "s", "0", "-1"}, {"getrange", "s", "2", "4"}, {"getrange", "s", "-3", "-1"}, {"getrange", "s", "-1", "-3"},
		{"getrange", "s", "5", "2"}, {"getrange", "s", "100", "200"}, {"getrange", "s", "-100", "100"}, {"getrange", "nope", "0", "1"},
		{"getrange", "s", "x", "1"}, {"getrange", "h2", "0", "1"}, {"getrange", "s", "0", "-100"}, {"substr", "s", "1", "2"},
		{"getrange", "s", "-9223372036854775808", "9223372036854775807"},
		{"setrange", "s", "1", "XY"}, {"get", "s"}, {"setrange", "s", "10", "Z"}, {"get", "s"}, {"setrange", "s", "-1", "x"},
		{"setrange", "s", "0", ""}, {"setrange", "nope", "5", ""}, {"exists", "nope"}, {"setrange", "new", "3", "x"}, {"get", "new"},
		{"setrange", "h2", "0", "x"}, {"setrange", "s", "536870911", "xy"}, {"setrange", "s", "x", "y"}, {"setrange", "h2", "0", ""},
		{"ttl", "s"},
		{"time", "x"}, {"publish", "ch", "msg"}, {"spublish", "ch", "msg"},
	},
}

// FuzzStringMatch checks that matching never panics and that a pattern
// without special characters matches exactly itself.
func FuzzStringMatch(f *testing.F) {
	f.Add([]byte("h[a-c]llo*"), []byte("hbllo world"))
	f.Add([]byte("[^"), []byte("x"))
	f.Add([]byte("\\"), []byte("\\"))
	f.Fuzz(func(t *testing.T, pat, s []byte) {
		got := stringMatch(pat, s, false)
		stringMatch(pat, s, true)
		if !bytes.ContainsAny(pat, "*?[\\") && got != bytes.Equal(pat, s) && len(pat) > 0 {
			t.Errorf("stringMatch(%q, %q) = %v", pat, s, got)
		}
	})
}
