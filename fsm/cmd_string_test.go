package fsm

import (
	"strings"
	"testing"
)

func TestStringCommands(t *testing.T) {
	kvRun(t, []kvCase{
		{name: "get set", steps: []kvStep{
			{cmd: []string{"get", "k"}, want: "nil"},
			{cmd: []string{"set", "k", "v"}, want: "+OK"},
			{cmd: []string{"get", "k"}, want: `"v"`},
			{cmd: []string{"set", "k", ""}, want: "+OK"},
			{cmd: []string{"get", "k"}, want: `""`},
			{cmd: []string{"hset", "h", "f", "v"}, want: ":1"},
			{cmd: []string{"get", "h"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"set", "h", "now a string"}, want: "+OK"},
			{cmd: []string{"get", "h"}, want: `"now a string"`},
			{cmd: []string{"set", "k"}, want: "-ERR wrong number of arguments for 'set' command"},
		}},
		{name: "set nx xx", steps: []kvStep{
			{cmd: []string{"set", "k", "v", "xx"}, want: "nil"},
			{cmd: []string{"set", "k", "v1", "NX"}, want: "+OK"},
			{cmd: []string{"set", "k", "v2", "nx"}, want: "nil"},
			{cmd: []string{"set", "k", "v3", "xx"}, want: "+OK"},
			{cmd: []string{"get", "k"}, want: `"v3"`},
			{cmd: []string{"set", "k", "v", "nx", "xx"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "xx", "nx"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "nx", "nx"}, want: "nil"},
		}},
		{name: "set expiry options", steps: []kvStep{
			{cmd: []string{"set", "k", "v", "ex", "10"}, want: "+OK"},
			{cmd: []string{"pttl", "k"}, want: ":10000"},
			{cmd: []string{"set", "k", "v", "px", "1500"}, want: "+OK"},
			{cmd: []string{"pttl", "k"}, want: ":1500"},
			{cmd: []string{"set", "k", "v", "exat", "1700000100"}, want: "+OK"},
			{cmd: []string{"ttl", "k"}, want: ":100"},
			{cmd: []string{"set", "k", "v", "pxat", "1700000000250"}, want: "+OK"},
			{cmd: []string{"pttl", "k"}, want: ":250"},
			{cmd: []string{"set", "k", "v2", "keepttl"}, want: "+OK"},
			{cmd: []string{"pttl", "k"}, want: ":250"},
			{cmd: []string{"set", "k", "v3"}, want: "+OK"},
			{cmd: []string{"pttl", "k"}, want: ":-1"},
			{cmd: []string{"set", "k", "v", "ex", "10", "ex", "20"}, want: "+OK"}, // Redis lets it through
			{cmd: []string{"ttl", "k"}, want: ":20"},
			{cmd: []string{"set", "k", "v", "pxat", "1"}, want: "+OK"}, // already past
			{cmd: []string{"get", "k"}, want: "nil"},
			{cmd: []string{"set", "k", "v", "px", "100"}, want: "+OK"},
			{now: kvT0 + 100, cmd: []string{"get", "k"}, want: "nil"},
		}},
		{name: "set option errors", steps: []kvStep{
			{cmd: []string{"set", "k", "v", "ex"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "ex", "10", "px", "10"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "keepttl", "ex", "10"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "ex", "10", "keepttl"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "persist"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "foo"}, want: "-ERR syntax error"},
			{cmd: []string{"set", "k", "v", "ex", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"set", "k", "v", "ex", "0"}, want: "-ERR invalid expire time in 'set' command"},
			{cmd: []string{"set", "k", "v", "px", "-1"}, want: "-ERR invalid expire time in 'set' command"},
			{cmd: []string{"SET", "k", "v", "px", "9223372036854775807"}, want: "-ERR invalid expire time in 'set' command"},
			{cmd: []string{"set", "k", "v", "ex", "9223372036854776"}, want: "-ERR invalid expire time in 'set' command"},
			{cmd: []string{"set", "k", "v", "exat", "9223372036854775"}, want: "+OK"},
			{cmd: []string{"set", "k", "v", "exat", "9223372036854776"}, want: "-ERR invalid expire time in 'set' command"},
			{cmd: []string{"exists", "k"}, want: ":1"},
		}},
		{name: "set get", setup: [][]string{{"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"set", "k", "v1", "get"}, want: "nil"},
			{cmd: []string{"set", "k", "v2", "GET"}, want: `"v1"`},
			{cmd: []string{"set", "k", "v3", "get", "nx"}, want: `"v2"`},
			{cmd: []string{"get", "k"}, want: `"v2"`},
			{cmd: []string{"set", "x", "v", "get", "xx"}, want: "nil"},
			{cmd: []string{"exists", "x"}, want: ":0"},
			{cmd: []string{"set", "h", "v", "get"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"set", "h", "v", "get", "ex", "0"}, want: "-ERR invalid expire time in 'set' command"},
			{cmd: []string{"type", "h"}, want: "+hash"},
		}},
		{name: "setnx setex psetex", steps: []kvStep{
			{cmd: []string{"setnx", "k", "v"}, want: ":1"},
			{cmd: []string{"setnx", "k", "w"}, want: ":0"},
			{cmd: []string{"setex", "k", "10", "v"}, want: "+OK"},
			{cmd: []string{"ttl", "k"}, want: ":10"},
			{cmd: []string{"psetex", "k", "1500", "v"}, want: "+OK"},
			{cmd: []string{"pttl", "k"}, want: ":1500"},
			{cmd: []string{"setex", "k", "0", "v"}, want: "-ERR invalid expire time in 'setex' command"},
			{cmd: []string{"psetex", "k", "-5", "v"}, want: "-ERR invalid expire time in 'psetex' command"},
			{cmd: []string{"setex", "k", "x", "v"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"setnx", "k"}, want: "-ERR wrong number of arguments for 'setnx' command"},
		}},
		{name: "getset getdel", setup: [][]string{{"set", "k", "v", "ex", "10"}, {"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"getset", "k", "w"}, want: `"v"`},
			{cmd: []string{"ttl", "k"}, want: ":-1"},
			{cmd: []string{"getset", "n", "w"}, want: "nil"},
			{cmd: []string{"getset", "h", "w"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"getdel", "k"}, want: `"w"`},
			{cmd: []string{"getdel", "k"}, want: "nil"},
			{cmd: []string{"getdel", "h"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		}},
		{name: "getex", setup: [][]string{{"set", "k", "v"}, {"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"getex", "k"}, want: `"v"`},
			{cmd: []string{"getex", "k", "ex", "100"}, want: `"v"`},
			{cmd: []string{"ttl", "k"}, want: ":100"},
			{cmd: []string{"getex", "k", "px", "500"}, want: `"v"`},
			{cmd: []string{"pttl", "k"}, want: ":500"},
			{cmd: []string{"getex", "k", "exat", "1700000200"}, want: `"v"`},
			{cmd: []string{"ttl", "k"}, want: ":200"},
			{cmd: []string{"getex", "k", "pxat", "1700000000300"}, want: `"v"`},
			{cmd: []string{"pttl", "k"}, want: ":300"},
			{cmd: []string{"getex", "k", "persist"}, want: `"v"`},
			{cmd: []string{"ttl", "k"}, want: ":-1"},
			{cmd: []string{"getex", "k", "ex", "1", "persist"}, want: "-ERR syntax error"},
			{cmd: []string{"getex", "k", "persist", "px", "1"}, want: "-ERR syntax error"},
			{cmd: []string{"getex", "k", "keepttl"}, want: "-ERR syntax error"},
			{cmd: []string{"getex", "k", "nx"}, want: "-ERR syntax error"},
			{cmd: []string{"getex", "k", "ex"}, want: "-ERR syntax error"},
			{cmd: []string{"getex", "k", "ex", "0"}, want: "-ERR invalid expire time in 'getex' command"},
			{cmd: []string{"getex", "k", "ex", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"getex", "nope", "ex", "0"}, want: "nil"},
			{cmd: []string{"getex", "h", "ex", "0"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"getex", "k", "exat", "1700000000"}, want: `"v"`}, // at now: deleted
			{cmd: []string{"exists", "k"}, want: ":0"},
		}},
		{name: "mget mset msetnx", setup: [][]string{{"hset", "h", "f", "v"}, {"set", "t", "v", "ex", "10"}}, steps: []kvStep{
			{cmd: []string{"mset", "a", "1", "b", "2", "t", "3"}, want: "+OK"},
			{cmd: []string{"ttl", "t"}, want: ":-1"},
			{cmd: []string{"mget", "a", "b", "c", "h"}, want: `["1" "2" nil nil]`},
			{cmd: []string{"mset", "a", "1", "b"}, want: "-ERR wrong number of arguments for 'mset' command"},
			{cmd: []string{"msetnx", "a", "9", "z", "9"}, want: ":0"},
			{cmd: []string{"mget", "a", "z"}, want: `["1" nil]`},
			{cmd: []string{"msetnx", "y", "1", "z", "2"}, want: ":1"},
			{cmd: []string{"msetnx", "q"}, want: "-ERR wrong number of arguments for 'msetnx' command"},
			{cmd: []string{"msetnx", "q", "1", "r"}, want: "-ERR wrong number of arguments for 'msetnx' command"},
			{cmd: []string{"mset", "dup", "1", "dup", "2"}, want: "+OK"},
			{cmd: []string{"get", "dup"}, want: `"2"`},
		}},
		{name: "incr decr", setup: [][]string{{"set", "i", "10", "ex", "100"}, {"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"incr", "i"}, want: ":11"},
			{cmd: []string{"ttl", "i"}, want: ":100"}, // keeps the expiry
			{cmd: []string{"decr", "i"}, want: ":10"},
			{cmd: []string{"incrby", "i", "-20"}, want: ":-10"},
			{cmd: []string{"decrby", "i", "5"}, want: ":-15"},
			{cmd: []string{"get", "i"}, want: `"-15"`},
			{cmd: []string{"incr", "n"}, want: ":1"},
			{cmd: []string{"decr", "m"}, want: ":-1"},
			{cmd: []string{"incrby", "i", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"incrby", "i", "+1"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"incrby", "i", "01"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"decrby", "i", "-9223372036854775808"}, want: "-ERR decrement would overflow"},
			{cmd: []string{"incr", "h"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"set", "i", "9223372036854775807"}, want: "+OK"},
			{cmd: []string{"incr", "i"}, want: "-ERR increment or decrement would overflow"},
			{cmd: []string{"incrby", "i", "-9223372036854775807"}, want: ":0"},
			{cmd: []string{"set", "i", "-9223372036854775808"}, want: "+OK"},
			{cmd: []string{"decr", "i"}, want: "-ERR increment or decrement would overflow"},
			{cmd: []string{"set", "i", " 1"}, want: "+OK"},
			{cmd: []string{"incr", "i"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"set", "i", "1.0"}, want: "+OK"},
			{cmd: []string{"incr", "i"}, want: "-ERR value is not an integer or out of range"},
		}},
		{name: "incrbyfloat", setup: [][]string{{"set", "f", "10.50", "ex", "100"}, {"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"incrbyfloat", "f", "0.1"}, want: `"10.6"`},
			{cmd: []string{"ttl", "f"}, want: ":100"},
			{cmd: []string{"incrbyfloat", "f", "-5"}, want: `"5.6"`},
			{cmd: []string{"incrbyfloat", "f", "5.0e3"}, want: `"5005.60000000000000009"`},
			{cmd: []string{"incrbyfloat", "g", "0.1"}, want: `"0.1"`},
			{cmd: []string{"incrbyfloat", "g", "0.2"}, want: `"0.3"`},
			{cmd: []string{"incrbyfloat", "g", "1e20"}, want: `"100000000000000000000"`},
			{cmd: []string{"incrbyfloat", "z", "0x10"}, want: `"16"`},
			{cmd: []string{"incrbyfloat", "z", "1.1e-17"}, want: `"16.00000000000000001"`},
			{cmd: []string{"incrbyfloat", "t", "1e-20"}, want: `"0"`},
			{cmd: []string{"incrbyfloat", "u", "17179869184"}, want: `"17179869184"`},
			{cmd: []string{"incrbyfloat", "u", "0.00001"}, want: `"17179869184.00001000054180622"`},
			{cmd: []string{"incrbyfloat", "g", "x"}, want: "-ERR value is not a valid float"},
			{cmd: []string{"incrbyfloat", "g", " 1"}, want: "-ERR value is not a valid float"},
			{cmd: []string{"incrbyfloat", "g", "nan"}, want: "-ERR value is not a valid float"},
			{cmd: []string{"incrbyfloat", "g", "inf"}, want: "-ERR increment would produce NaN or Infinity"},
			{cmd: []string{"incrbyfloat", "g", "1e4933"}, want: "-ERR value is not a valid float"},
			{cmd: []string{"incrbyfloat", "h", "1"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"set", "s", "abc"}, want: "+OK"},
			{cmd: []string{"incrbyfloat", "s", "1"}, want: "-ERR value is not a valid float"},
			{cmd: []string{"set", "big", "1e4932"}, want: "+OK"},
			{cmd: []string{"incrbyfloat", "big", "1e4932"}, want: "-ERR increment would produce NaN or Infinity"},
			{cmd: []string{"set", "m", "-0"}, want: "+OK"},
			{cmd: []string{"incrbyfloat", "m", "0"}, want: `"0"`},
		}},
		{name: "append strlen", setup: [][]string{{"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"append", "s", "abc"}, want: ":3"},
			{cmd: []string{"expire", "s", "100"}, want: ":1"},
			{cmd: []string{"append", "s", "def"}, want: ":6"},
			{cmd: []string{"ttl", "s"}, want: ":100"},
			{cmd: []string{"get", "s"}, want: `"abcdef"`},
			{cmd: []string{"strlen", "s"}, want: ":6"},
			{cmd: []string{"strlen", "nope"}, want: ":0"},
			{cmd: []string{"strlen", "h"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"append", "h", "x"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"append", "e", ""}, want: ":0"},
			{cmd: []string{"exists", "e"}, want: ":1"},
		}},
		{name: "getrange", setup: [][]string{{"set", "s", "abcdefg"}, {"hset", "h", "f", "v"}, {"set", "empty", ""}}, steps: []kvStep{
			{cmd: []string{"getrange", "s", "0", "-1"}, want: `"abcdefg"`},
			{cmd: []string{"getrange", "s", "2", "4"}, want: `"cde"`},
			{cmd: []string{"getrange", "s", "-3", "-1"}, want: `"efg"`},
			{cmd: []string{"getrange", "s", "-1", "-3"}, want: `""`},
			{cmd: []string{"getrange", "s", "5", "2"}, want: `""`},
			{cmd: []string{"getrange", "s", "100", "200"}, want: `""`},
			{cmd: []string{"getrange", "s", "-100", "100"}, want: `"abcdefg"`},
			{cmd: []string{"getrange", "s", "0", "-100"}, want: `"a"`},
			{cmd: []string{"getrange", "s", "-9223372036854775808", "9223372036854775807"}, want: `"abcdefg"`},
			{cmd: []string{"getrange", "empty", "0", "-1"}, want: `""`},
			{cmd: []string{"getrange", "nope", "0", "1"}, want: `""`},
			{cmd: []string{"getrange", "s", "x", "1"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"getrange", "nope", "0", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"getrange", "h", "0", "1"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"substr", "s", "1", "2"}, want: `"bc"`},
		}},
		{name: "setrange", setup: [][]string{{"set", "s", "abcdefg", "ex", "100"}, {"hset", "h", "f", "v"}}, steps: []kvStep{
			{cmd: []string{"setrange", "s", "1", "XY"}, want: ":7"},
			{cmd: []string{"get", "s"}, want: `"aXYdefg"`},
			{cmd: []string{"ttl", "s"}, want: ":100"},
			{cmd: []string{"setrange", "s", "9", "Z"}, want: ":10"},
			{cmd: []string{"get", "s"}, want: `"aXYdefg\x00\x00Z"`},
			{cmd: []string{"setrange", "s", "0", ""}, want: ":10"},
			{cmd: []string{"setrange", "new", "2", "x"}, want: ":3"},
			{cmd: []string{"get", "new"}, want: `"\x00\x00x"`},
			{cmd: []string{"setrange", "none", "5", ""}, want: ":0"},
			{cmd: []string{"exists", "none"}, want: ":0"},
			{cmd: []string{"setrange", "s", "-1", "x"}, want: "-ERR offset is out of range"},
			{cmd: []string{"setrange", "s", "x", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"setrange", "s", "536870911", "xy"}, want: "-ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
			{cmd: []string{"setrange", "h", "0", "x"}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{cmd: []string{"setrange", "h", "0", ""}, want: "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		}},
	})
}

func TestServerCommands(t *testing.T) {
	kvRun(t, []kvCase{
		{name: "ping echo time", steps: []kvStep{
			{cmd: []string{"ping"}, want: "+PONG"},
			{cmd: []string{"PING", "hi"}, want: `"hi"`},
			{cmd: []string{"ping", "a", "b"}, want: "-ERR wrong number of arguments for 'ping' command"},
			{cmd: []string{"echo", "x"}, want: `"x"`},
			{cmd: []string{"echo"}, want: "-ERR wrong number of arguments for 'echo' command"},
			{now: 1_700_000_000_123, cmd: []string{"time"}, want: `["1700000000" "123000"]`},
			{cmd: []string{"time", "x"}, want: "-ERR wrong number of arguments for 'time' command"},
		}},
		{name: "select", setup: [][]string{{"set", "k", "db0"}}, steps: []kvStep{
			{cmd: []string{"select", "5"}, want: "+OK"},
			{cmd: []string{"get", "k"}, want: "nil"},
			{cmd: []string{"set", "k", "db5"}, want: "+OK"},
			{cmd: []string{"select", "16"}, want: "-ERR DB index is out of range"},
			{cmd: []string{"select", "-1"}, want: "-ERR DB index is out of range"},
			{cmd: []string{"select", "x"}, want: "-ERR value is not an integer or out of range"},
			{cmd: []string{"select", "4294967296"}, want: "-ERR value is out of range, value must between -2147483648 and 2147483647"},
			{cmd: []string{"get", "k"}, want: `"db5"`},
			{cmd: []string{"select", "0"}, want: "+OK"},
			{cmd: []string{"get", "k"}, want: `"db0"`},
		}},
		{name: "publish", steps: []kvStep{
			{cmd: []string{"publish", "ch", "msg"}, want: ":0"},
			{cmd: []string{"spublish", "ch", "msg"}, want: ":0"},
			{cmd: []string{"publish", "ch"}, want: "-ERR wrong number of arguments for 'publish' command"},
		}},
	})

	f := New(Options{})
	defer f.Close()
	r := f.Apply(kvT0, Command{Tx: [][][]byte{
		kvArgs("publish", "a", "1"), kvArgs("select", "3"), kvArgs("set", "k", "v"), kvArgs("spublish", "b", "2"),
	}})
	if got := kvRender(r.Reply); got != `[:0 +OK +OK :0]` {
		t.Errorf("tx reply %s", got)
	}
	if r.DB != 3 {
		t.Errorf("tx left db %d, want 3", r.DB)
	}
	if len(r.Effects) != 2 || string(r.Effects[0].Channel) != "a" || string(r.Effects[0].Message) != "1" || r.Effects[0].Shard ||
		string(r.Effects[1].Channel) != "b" || !r.Effects[1].Shard {
		t.Errorf("effects %+v", r.Effects)
	}
	if got := kvRender(f.Apply(kvT0, Command{DB: 3, Args: kvArgs("get", "k")}).Reply); got != `"v"` {
		t.Errorf("key set after SELECT in tx: %s", got)
	}
	for _, name := range []string{"publish", "spublish"} {
		if s, _ := Lookup([]byte(name)); s.Flags&(Write|PubSub) != Write|PubSub {
			t.Errorf("%s flags %b", name, s.Flags)
		}
	}
}

// TestStringRepliesAreStable checks that a reply handed out earlier in a
// transaction is not changed by a later command changing the value.
func TestStringRepliesAreStable(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	f.Apply(kvT0, Command{Args: kvArgs("set", "k", "abc")})
	r := f.Apply(kvT0, Command{Tx: [][][]byte{
		kvArgs("get", "k"), kvArgs("append", "k", "def"), kvArgs("get", "k"),
		kvArgs("setrange", "k", "0", "XYZ"), kvArgs("getrange", "k", "0", "1"), kvArgs("append", "k", "!"),
		kvArgs("mget", "k"), kvArgs("incrbyfloat", "n", "1.5"), kvArgs("append", "n", "0"),
	}})
	want := `["abc" :6 "abcdef" :6 "XY" :7 ["XYZdef!"] "1.5" :4]`
	if got := kvRender(r.Reply); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A consumer appending to a reply must not reach the stored bytes.
	g := f.Apply(kvT0, Command{Args: kvArgs("get", "k")}).Reply
	_ = append(g.Str, "junk"...)
	f.Apply(kvT0, Command{Args: kvArgs("append", "k", "?")})
	if got := kvDo(t, f, kvT0, "get", "k"); got != `"XYZdef!?"` {
		t.Errorf("after append: %s", got)
	}
	// Arguments are copied, not kept.
	args := kvArgs("set", "a", "value")
	f.Apply(kvT0, Command{Args: args})
	copy(args[2], "XXXXX")
	if got := kvDo(t, f, kvT0, "get", "a"); got != `"value"` {
		t.Errorf("SET kept its argument: %s", got)
	}
}

func TestStringCommandsBumpVersions(t *testing.T) {
	writes := []struct {
		setup [][]string
		cmd   []string
	}{
		{nil, []string{"set", "k", "v"}},
		{[][]string{{"set", "k", "v"}}, []string{"set", "k", "v"}},
		{[][]string{{"set", "k", "v"}}, []string{"set", "k", "w", "xx", "get"}},
		{nil, []string{"setnx", "k", "v"}},
		{nil, []string{"setex", "k", "10", "v"}},
		{nil, []string{"psetex", "k", "10", "v"}},
		{[][]string{{"set", "k", "v"}}, []string{"getset", "k", "w"}},
		{[][]string{{"set", "k", "v"}}, []string{"getdel", "k"}},
		{[][]string{{"set", "k", "v"}}, []string{"getex", "k", "ex", "10"}},
		{[][]string{{"set", "k", "v"}}, []string{"getex", "k", "exat", "1"}},
		{[][]string{{"set", "k", "v", "ex", "10"}}, []string{"getex", "k", "persist"}},
		{nil, []string{"mset", "a", "1", "k", "2"}},
		{nil, []string{"msetnx", "a", "1", "k", "2"}},
		{nil, []string{"incr", "k"}},
		{[][]string{{"set", "k", "1"}}, []string{"incr", "k"}},
		{[][]string{{"set", "k", "1"}}, []string{"decr", "k"}},
		{[][]string{{"set", "k", "1"}}, []string{"incrby", "k", "5"}},
		{[][]string{{"set", "k", "1"}}, []string{"decrby", "k", "5"}},
		{[][]string{{"set", "k", "1"}}, []string{"incrbyfloat", "k", "0.5"}},
		{nil, []string{"incrbyfloat", "k", "0.5"}},
		{[][]string{{"set", "k", "1"}}, []string{"append", "k", "x"}},
		{nil, []string{"append", "k", "x"}},
		{[][]string{{"set", "k", "abc"}}, []string{"setrange", "k", "1", "x"}},
		{nil, []string{"setrange", "k", "1", "x"}},
	}
	for _, w := range writes {
		f := New(Options{})
		for _, s := range w.setup {
			f.Apply(kvT0, Command{Args: kvArgs(s...)})
		}
		before := kvVersion(f, "k")
		if r := f.Apply(kvT0, Command{Args: kvArgs(w.cmd...)}); r.Reply.IsError() {
			t.Errorf("%q: %s", w.cmd, r.Reply.Str)
		}
		if kvVersion(f, "k") == before {
			t.Errorf("%q did not change the version of k", w.cmd)
		}
		f.Close()
	}

	noops := [][]string{
		{"get", "k"}, {"mget", "k", "x"}, {"strlen", "k"}, {"getrange", "k", "0", "-1"}, {"substr", "k", "0", "1"},
		{"getex", "k"}, {"getex", "k", "persist"}, {"set", "k", "w", "nx"}, {"set", "x", "w", "xx"}, {"setnx", "k", "w"},
		{"msetnx", "k", "1", "x", "2"}, {"setrange", "k", "0", ""}, {"incr", "k"}, {"incrbyfloat", "k", "1"},
		{"set", "k", "v", "ex", "0"}, {"getdel", "x"}, {"time"}, {"ping"}, {"echo", "k"}, {"publish", "k", "v"},
	}
	for _, cmd := range noops {
		f := New(Options{})
		f.Apply(kvT0, Command{Args: kvArgs("set", "k", "v")})
		vk, vx := kvVersion(f, "k"), kvVersion(f, "x")
		if spec, _ := Lookup([]byte(cmd[0])); spec.Flags&Read != 0 {
			f.Read(kvT0, Command{Args: kvArgs(cmd...)})
		}
		f.Apply(kvT0, Command{Args: kvArgs(cmd...)})
		if kvVersion(f, "k") != vk || kvVersion(f, "x") != vx {
			t.Errorf("%q changed a version", cmd)
		}
		f.Close()
	}
}

// TestCommandTable checks the registered shapes against Redis 7.0's
// COMMAND INFO (arity, first key, last key, step).
func TestCommandTable(t *testing.T) {
	want := map[string][4]int{
		"del": {-2, 1, -1, 1}, "unlink": {-2, 1, -1, 1}, "exists": {-2, 1, -1, 1}, "touch": {-2, 1, -1, 1},
		"type": {2, 1, 1, 1}, "expire": {-3, 1, 1, 1}, "pexpire": {-3, 1, 1, 1}, "expireat": {-3, 1, 1, 1},
		"pexpireat": {-3, 1, 1, 1}, "expiretime": {2, 1, 1, 1}, "pexpiretime": {2, 1, 1, 1}, "ttl": {2, 1, 1, 1},
		"pttl": {2, 1, 1, 1}, "persist": {2, 1, 1, 1}, "keys": {2, 0, 0, 0}, "scan": {-2, 0, 0, 0},
		"rename": {3, 1, 2, 1}, "renamenx": {3, 1, 2, 1}, "dbsize": {1, 0, 0, 0}, "flushdb": {-1, 0, 0, 0},
		"flushall": {-1, 0, 0, 0}, "randomkey": {1, 0, 0, 0}, "copy": {-3, 1, 2, 1}, "move": {3, 1, 1, 1},
		"object": {-2, 0, 0, 0},
		"get":    {2, 1, 1, 1}, "set": {-3, 1, 1, 1}, "setnx": {3, 1, 1, 1}, "setex": {4, 1, 1, 1}, "psetex": {4, 1, 1, 1},
		"getset": {3, 1, 1, 1}, "getdel": {2, 1, 1, 1}, "getex": {-2, 1, 1, 1}, "mget": {-2, 1, -1, 1},
		"mset": {-3, 1, -1, 2}, "msetnx": {-3, 1, -1, 2}, "incr": {2, 1, 1, 1}, "incrby": {3, 1, 1, 1},
		"decr": {2, 1, 1, 1}, "decrby": {3, 1, 1, 1}, "incrbyfloat": {3, 1, 1, 1}, "append": {3, 1, 1, 1},
		"strlen": {2, 1, 1, 1}, "getrange": {4, 1, 1, 1}, "substr": {4, 1, 1, 1}, "setrange": {4, 1, 1, 1},
		"publish": {3, 0, 0, 0}, "spublish": {3, 1, 1, 1}, "time": {1, 0, 0, 0}, "select": {2, 0, 0, 0},
		"echo": {2, 0, 0, 0}, "ping": {-1, 0, 0, 0},
	}
	for name, w := range want {
		s, ok := Lookup([]byte(strings.ToUpper(name)))
		if !ok {
			t.Errorf("%s not registered", name)
			continue
		}
		if got := [4]int{s.Arity, s.FirstKey, s.LastKey, s.Step}; got != w {
			t.Errorf("%s: %v, want %v", name, got, w)
		}
		if (s.Flags&Read != 0) == (s.Flags&Write != 0) {
			t.Errorf("%s: flags %b: want exactly one of Read and Write", name, s.Flags)
		}
	}
}
