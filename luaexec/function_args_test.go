package luaexec

import (
	"os"
	"strings"
	"testing"
)

// privateParams: which functions are proven not to keep the tables they
// are given, and which are not. A "true" that should be "false" would let
// a library see one call's table refilled by the next (the routes in
// testdata/transcripts/functions.txt show that against redis-server).
func TestPrivateParams(t *testing.T) {
	for _, c := range []struct {
		fn   string
		want [2]bool
	}{
		{`function(keys, args) return 1 end`, [2]bool{true, true}},
		{`function() return 1 end`, [2]bool{true, true}},
		{`function(keys) return 1 end`, [2]bool{true, true}},
		{`function(keys, args) return redis.call('hincrby', keys[1], args[2], 1) end`, [2]bool{true, true}},
		{`function(keys, args) if redis.call('exists', keys[1]) == 0 then return nil end return redis.call('pttl', keys[1]) end`, [2]bool{true, true}},
		{`function(keys, args) keys[1] = args[1] args.x = 1 return keys.y end`, [2]bool{true, true}},
		{`function(keys, args) local r = {keys[1], args[1]} return r end`, [2]bool{true, true}},
		{`function(keys, args) for i = 1, 3 do local k = keys[i] end return 0 end`, [2]bool{true, true}},
		{`function(keys, args) keys = {} keys[1] = 1 return 1 end`, [2]bool{true, true}},
		// every way out
		{`function(keys, args) return keys end`, [2]bool{false, true}},
		{`function(keys, args) return 1, args end`, [2]bool{true, false}},
		{`function(keys, args) saved = keys end`, [2]bool{false, true}},
		{`function(keys, args) local t = keys return t[1] end`, [2]bool{false, true}},
		{`function(keys, args) return function() return args end end`, [2]bool{true, false}},
		{`function(keys, args) return type(keys) end`, [2]bool{false, true}},
		{`function(keys, args) return #keys end`, [2]bool{true, true}}, // \0len(keys, desc): keeps nothing
		{`function(keys, args) local n = #keys + #args return n, keys[n] end`, [2]bool{true, true}},
		{`function(keys, args) for i = 1, #keys do redis.call('get', keys[i]) end end`, [2]bool{true, true}},
		{`function(keys, args) return #keys, type(keys) end`, [2]bool{false, true}},
		// functions.txt's n_len
		{`function(keys, args) local r = {#keys, #args, keys[#keys] or 'none', args[#args] or 'none'} keys[#keys + 1] = 'grown' args[#args] = nil return r end`, [2]bool{true, true}},
		{`function(keys, args) return rawlen and 1 or #(keys) end`, [2]bool{true, true}},
		{`function(keys, args) local t = {} t[1] = args return 1 end`, [2]bool{true, false}},
		{`function(keys, args) local t = {} t[keys] = 1 return 1 end`, [2]bool{false, true}},
		{`function(keys, args) local t = {} return t[args] end`, [2]bool{true, false}},
		{`function(keys, args) return {keys} end`, [2]bool{false, true}},
		{`function(keys, args) return keys == args end`, [2]bool{false, false}},
		{`function(keys, args) return keys .. 'x' end`, [2]bool{false, true}},
		{`function(keys, args) if keys then return 1 end end`, [2]bool{false, true}},
		{`function(keys, args) return keys and 1 end`, [2]bool{false, true}},
		{`function(keys, args) return not args end`, [2]bool{true, false}},
		{`function(keys, args) return keys:x() end`, [2]bool{false, true}},
		{`function(keys, args) for k, v in pairs(args) do end end`, [2]bool{true, false}},
		{`function(...) return 1 end`, [2]bool{false, false}},
		{`function(keys, ...) return 1 end`, [2]bool{true, false}},
	} {
		e := newEngine(t, Options{})
		code := "#!lua name=l\nlocal saved\nredis.register_function('f', " + c.fn + ")"
		lib, r := e.LoadLibrary("l", []byte(code))
		if r.IsError() {
			t.Fatalf("%s: %v", c.fn, r)
		}
		if got := lib.fns["f"].private; got != c.want {
			t.Errorf("%s: private %v, want %v", c.fn, got, c.want)
		}
	}
	e := newEngine(t, Options{})
	lib, r := e.LoadLibrary("g", []byte("#!lua name=g\nredis.register_function('f', redis.log)"))
	if r.IsError() {
		t.Fatal(r)
	}
	if got := lib.fns["f"].private; got != [2]bool{} {
		t.Errorf("a Go function: private %v", got)
	}
}

// A function that cannot keep its tables gets the same two tables, refilled,
// on every call, and each call still sees exactly its own keys and args;
// one that can gets new ones.
func TestFunctionTablesReused(t *testing.T) {
	e := newEngine(t, Options{})
	code := "#!lua name=l\n" +
		"redis.register_function('p', function(keys, args) return {keys[1], keys[2], keys[3], args[1], args[2], args[3]} end)\n" +
		"redis.register_function('k', function(keys, args) return {keys, args} end)\n"
	lib, r := e.LoadLibrary("l", []byte(code))
	if r.IsError() {
		t.Fatal(r)
	}
	e.Keep(lib)
	call := func(name string, keys, args []string) string {
		var k, a [][]byte
		for _, s := range keys {
			k = append(k, []byte(s))
		}
		for _, s := range args {
			a = append(a, []byte(s))
		}
		return replyString(e.CallFunction("l", name, k, a, nopCaller{}))
	}
	p, k := lib.fns["p"], lib.fns["k"]
	if p.private != [2]bool{true, true} || k.private != [2]bool{false, false} {
		t.Fatalf("private: p %v, k %v", p.private, k.private)
	}
	// (the reply is the array up to its first nil)
	for i, c := range []struct {
		keys, args []string
		want       string
	}{
		{[]string{"a", "b"}, []string{"x"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"a", "b"}, []string{"x"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"a", "c"}, []string{"x", "y"}, "*2\r\n$1\r\na\r\n$1\r\nc\r\n"},
		{[]string{"a"}, []string{"x", "y", "z"}, "*1\r\n$1\r\na\r\n"},
		{nil, []string{"w"}, "*0\r\n"},
		{[]string{"a", "b", "c"}, []string{"q", "r", "s"}, "*6\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nq\r\n$1\r\nr\r\n$1\r\ns\r\n"},
	} {
		before := [2]any{p.args[0].t, p.args[1].t}
		same := [2]bool{len(c.keys) == len(p.args[0].vals), len(c.args) == len(p.args[1].vals)}
		if got := call("p", c.keys, c.args); got != c.want {
			t.Errorf("call %d %v %v: %q, want %q", i, c.keys, c.args, got, c.want)
		}
		for j := range same {
			// a table is refilled when it is as long as it was
			if i > 0 && same[j] != (before[j] == any(p.args[j].t)) {
				t.Errorf("call %d: table %d as long as before: %v, reused: %v", i, j, same[j], !same[j])
			}
		}
	}
	call("k", []string{"a"}, []string{"x"})
	before := [2]any{k.args[0].t, k.args[1].t}
	call("k", []string{"a"}, []string{"x"})
	if before[0] == any(k.args[0].t) || before[1] == any(k.args[1].t) {
		t.Error("k, which returns its tables, got the same tables twice")
	}
}

// Reading redis.call and redis.pcall through the library's hidden locals
// (libraryHoisted) changes neither what a function does, nor its errors,
// nor what it costs, whether it runs once the library is loaded or while
// it loads.
func TestLibraryHoistingChangesNothing(t *testing.T) {
	lock, err := os.ReadFile("../compat/testdata/lock.lua")
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := os.ReadFile("../compat/testdata/unlock.lua")
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		lockScript,
		unlockScript,
		string(lock),
		string(unlock),
		`return redis.call('get', KEYS[1])`,
		`return redis.pcall('nosuch')`,
		`return redis.call('nosuch')`,
		`return redis.call()`,
		`return redis.call.x`,
		`return redis.pcall.x.y`,
		`return redis.call:x()`,
		`return tostring(redis.call == redis.pcall)`,
		`local ok, e = pcall(redis.call, 'nosuch') return e`,
		`redis.call = 1`,
		`function redis.pcall() end`,
		`local redis = {call = function() return 'mine' end} return redis.call()`,
		`local function inner() return redis.pcall('get', KEYS[1]) end return inner()`,
		`return (function() return function() return redis.call('get', ARGV[1]) end end)()()`,
		`while true do redis.call('get', KEYS[1]) end`,
		`return redis.call(error('first'))`,
		`local a = redis.call('get', KEYS[1]) return (a or ARGV.z).x`,
		`local a = redis.pcall('get', KEYS[1]) a = nil return (a or redis.call).x.y`,
		`local a = redis.pcall('get', KEYS[1]) return (a and redis.call).x.y`,
		`local a = redis.pcall('get', KEYS[1]) return (redis.call or a).x.y`,
		`local a = redis.pcall('get', KEYS[1]) return (redis.call and a).x.y`,
		`local a = nil return ((a or redis.call) or a).x.y`,
		`return (KEYS[5] or redis.pcall).x`,
	}
	type outcome struct {
		load, call string
		used       int64
	}
	for _, body := range bodies {
		for _, atLoad := range []bool{false, true} {
			code := "#!lua name=l\nlocal function f(KEYS, ARGV)\n" + body + "\nend\nredis.register_function('f', f)\n"
			if atLoad {
				code += "f({'k1'}, {'a1'})\n"
			}
			var got [2]outcome
			for i, slow := range []bool{false, true} {
				e := New(Options{Budget: 200_000})
				e.slowLibs = slow
				lib, r := e.LoadLibrary("l", []byte(code))
				got[i].load = replyString(r)
				if lib != nil {
					e.Keep(lib)
					got[i].call = replyString(e.CallFunction("l", "f", [][]byte{[]byte("k1"), []byte("k2")},
						[][]byte{[]byte("a1"), []byte("a2"), []byte("a3"), []byte("publish"), []byte("5")}, lockCaller{mapCaller{"a1": "x"}}))
				}
				got[i].used = e.run.used
				e.Close()
			}
			if got[0] != got[1] {
				t.Errorf("%s (at load: %v):\n hoisted   %+v\n otherwise %+v", body, atLoad, got[0], got[1])
			}
		}
	}
}

// HasLibrary: the same code, at the address it last matched or another,
// is the library; other code of the same length is not.
func TestHasLibrary(t *testing.T) {
	e := newEngine(t, Options{})
	code := "#!lua name=l\nredis.register_function('f', function() return 1 end)"
	lib, r := e.LoadLibrary("l", []byte(code))
	if r.IsError() {
		t.Fatal(r)
	}
	e.Keep(lib)
	kept := []byte(code)
	other := []byte(strings.Replace(code, "1", "2", 1))
	for i, c := range []struct {
		code []byte
		want bool
	}{
		{kept, true}, {kept, true}, {[]byte(code), true}, {other, false}, {kept, true},
		{[]byte(code + " "), false}, {nil, false},
	} {
		if got := e.HasLibrary("l", c.code); got != c.want {
			t.Errorf("%d: %v, want %v", i, got, c.want)
		}
	}
	if e.HasLibrary("m", kept) {
		t.Error("another name")
	}
	e.newState()
	if e.HasLibrary("l", kept) {
		t.Error("a new Lua state still has the library")
	}
}
