package luaexec

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Which libraries get a fresh state for every call: those whose calls
// could change what a later call sees, and no others (the others keep
// the closures of their load, the fast path).
func TestLibraryKeepsState(t *testing.T) {
	for _, c := range []struct {
		name, code string
		stateful   bool
	}{
		{"plain", `redis.register_function('f', function(keys, args) return redis.call('get', keys[1]) end)`, false},
		{"redisson", `
local function lock(KEYS, ARGV)
  if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
  end
  return redis.call('pttl', KEYS[1])
end
local function unlock(KEYS, ARGV)
  if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
  local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
  if counter > 0 then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 end
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
redis.register_function('lock', lock)
redis.register_function('unlock', unlock)`, false},
		{"constants and helpers", `
local PREFIX, TTL = 'lock:', 30000
local log = redis.log
local function key(k) return PREFIX .. k end
local function take(k, v) return redis.call('set', key(k), v, 'nx', 'px', TTL) end
redis.register_function{function_name='take', callback=function(keys, args) return take(keys[1], args[1]) end}
redis.register_function{function_name='two', callback=function(keys, args) take(keys[1], args[1]) return take(keys[2], args[1]) end}`, false},
		{"a call's own locals assigned by a closure of the call", `
redis.register_function('sum', function(keys, args)
  local total = 0
  local function add(v) total = total + tonumber(v) end
  for _, v in ipairs(args) do add(v) end
  local t = {} t[1] = total
  return t
end)`, false},
		{"a table of constants, its fields read", `
local C = {ttl = 30000, prefix = 'lock:', on = true}
redis.register_function('take', function(keys, args)
  if #C == 0 and C.on and C ~= nil then
    return redis.call('set', C.prefix .. keys[1], args[1], 'px', C.ttl)
  end
end)`, false},
		{"a table of constants holding a table (conservative)", `
local C = {ttl = 30000, names = {'a', 'b'}}
redis.register_function('f', function(keys) return C.ttl end)`, true},
		{"a module table of functions", `
local M = {}
function M.key(k) return 'lock:' .. k end
function M.take(keys, args) return redis.call('set', M.key(keys[1]), args[1]) end
redis.register_function('take', M.take)`, false},
		{"a kept table read by a closure made in the call", `
local C = {ttl = 30000}
redis.register_function('f', function(keys)
  local function get(k) return C[k] end
  return get('ttl')
end)`, false},
		{"a kept table written", `
local C = {n = 0}
redis.register_function('f', function() C.n = C.n + 1 return C.n end)`, true},
		{"a kept table written through a local", `
local C = {n = 0}
redis.register_function('f', function() local c = C c.n = 1 return 1 end)`, true},
		{"a kept table written by a closure made in the call", `
local C = {}
redis.register_function('f', function(keys)
  local function put() C[keys[1]] = true end
  put()
  return 1
end)`, true},
		{"a kept table captured from a register", `
local C = {}
redis.register_function('f', function(keys)
  local c = C
  local function put() c.x = 1 end
  put()
  return 1
end)`, true},
		{"a table inside a kept table written", `
local C = {sub = {}}
redis.register_function('f', function(keys) C.sub.x = keys[1] return 1 end)`, true},
		{"a kept table passed to a function", `
local C = {}
redis.register_function('f', function(keys) table.insert(C, keys[1]) return #C end)`, true},
		{"a kept table iterated (conservative)", `
local C = {'a', 'b'}
redis.register_function('f', function() local n = 0 for _, v in ipairs(C) do n = n + 1 end return n end)`, true},
		{"a kept table stored in a new one", `
local C = {}
redis.register_function('f', function() local t = {C} t[1].x = 1 return 1 end)`, true},
		{"a library local assigned by a helper only the load calls", `
local n = 0
local function init() n = 5 end
init()
redis.register_function('f', function() return n end)`, false},
		{"a library local assigned", `
local n = 0
redis.register_function('count', function() n = n + 1 return n end)`, true},
		{"a library local assigned by a closure made in the call", `
local n = 0
redis.register_function('count', function()
  local function bump() n = n + 1 end
  bump()
  return n
end)`, true},
		{"a table in a library local", `
local seen = {}
redis.register_function('seen', function(keys) seen[keys[1]] = true return 1 end)`, true},
		{"a table only read", `
local ok = {ok = 'fine'}
redis.register_function('f', function() return ok end)`, true},
		{"a closure made at load with a local of its own", `
local function counter() local c = 0 return function() c = c + 1 return c end end
local nextID = counter()
redis.register_function('id', function() return nextID() end)`, true},
		{"a function assigning a local of the chunk that no function reads", `
local last
local function set(v) last = v end
redis.register_function('f', function(keys) set(keys[1]) return 1 end)`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := New(Options{})
			defer e.Close()
			lib, r := e.LoadLibrary("lib", []byte("#!lua name=lib\n"+strings.TrimPrefix(c.code, "\n")))
			if r.IsError() {
				t.Fatalf("FUNCTION LOAD: %v", r)
			}
			if lib.stateful != c.stateful {
				t.Fatalf("stateful = %v, want %v", lib.stateful, c.stateful)
			}
		})
	}
}

// Each function is judged alone: in a library with a counter, the
// functions that cannot change it keep the closures of the load (and see
// the counter as the load left it, since the counting function's calls
// run in fresh copies).
func TestLibraryKeepsStatePerFunction(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	code := `#!lua name=lib
local n = 0
local function count() n = n + 1 return n end
redis.register_function('count', count)
redis.register_function('twice', function() count() return count() end)
redis.register_function('peek', function() return n end)
redis.register_function('get', function(keys) return redis.call('get', keys[1]) end)
`
	lib, r := e.LoadLibrary("lib", []byte(code))
	if r.IsError() {
		t.Fatal(r)
	}
	want := map[string]bool{"count": true, "twice": true, "peek": false, "get": false}
	for name, fresh := range want {
		if lib.fns[name].fresh != fresh {
			t.Errorf("%s: fresh = %v, want %v", name, lib.fns[name].fresh, fresh)
		}
	}
	if !lib.stateful {
		t.Error("the library is not stateful")
	}
	e.Keep(lib)
	for i := 0; i < 3; i++ {
		for _, c := range []struct {
			fn   string
			want int64
		}{{"count", 1}, {"twice", 2}, {"peek", 0}} {
			if r := e.CallFunction("lib", c.fn, nil, nil, nopCaller{}); r.Int != c.want || r.IsError() {
				t.Fatalf("call %d of %s: %q, want %d", i, c.fn, r.Append(nil), c.want)
			}
		}
	}
}

// A stateful library's every call starts from the state its load left,
// as on a node that has just loaded it: the same replies call after call.
// The routes library keeps a function's tables in each way
// testdata/transcripts/functions.txt has (where Redis's second call finds
// the first call's keys): here every call answers as the first.
func TestStatefulLibraryCalls(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	routes := `#!lua name=routes
local last, store, getter, alias = {}, {}, nil, nil
local function was(n, t) local p = last[n] last[n] = t return p and p[1] or 'none' end
redis.register_function('r_pass', function(keys, args) return was(1, keys) end)
redis.register_function('r_argv', function(keys, args) return was(2, args) end)
redis.register_function('r_upval', function(keys, args) local p = alias and alias[1] or 'none' alias = keys return p end)
redis.register_function('r_closure', function(keys, args) local p = getter and getter() or 'none' getter = function() return keys[1] end return p end)
redis.register_function('r_value', function(keys, args) local p = store.v and store.v[1] or 'none' store.v = keys return p end)
redis.register_function('r_key', function(keys, args) local p = next(store, nil) while p ~= nil and type(p) ~= 'table' do p = next(store, p) end local r = p and p[1] or 'none' if p then store[p] = nil end store[keys] = true return r end)
redis.register_function('r_vararg', function(...) local keys = ... return was(3, keys) end)
redis.register_function('r_local', function(keys, args) local t = keys return was(4, t) end)
redis.register_function('r_return', function(keys, args) return was(5, (function(t) return t end)(args)) end)
redis.register_function('r_tail', function(keys, args) local w = was return w(6, keys) end)
redis.register_function('r_list', function(keys, args) local l = {keys} return was(7, l[1]) end)
`
	lib, r := e.LoadLibrary("routes", []byte(routes))
	if r.IsError() {
		t.Fatal(r)
	}
	if !lib.stateful {
		t.Fatal("routes is not stateful")
	}
	e.Keep(lib)
	for _, f := range lib.Functions {
		for _, k := range []string{"a", "b", "c"} {
			arg := [][]byte{[]byte(k)}
			if r := e.CallFunction("routes", f.Name, arg, arg, nopCaller{}); r.String() != "none" {
				t.Fatalf("FCALL %s with %s: %q, want none", f.Name, k, r.Append(nil))
			}
		}
	}
}

// The same with a library that logs at its load: its chunk's redis.log
// runs once, not again for every call.
func TestStatefulLibraryFreshEachCall(t *testing.T) {
	var logged []string
	e := New(Options{Logger: func(_ LogLevel, msg string) { logged = append(logged, msg) }})
	defer e.Close()
	code := "#!lua name=lib\nlocal n = 0\nlocal seen = {}\n" +
		"redis.log(redis.LOG_WARNING, 'loaded')\n" +
		"redis.register_function('count', function() n = n + 1 return n end)\n" +
		"redis.register_function('seen', function(keys) local was = seen[keys[1]] and 1 or 0 seen[keys[1]] = true return was end)\n"
	lib, r := e.LoadLibrary("lib", []byte(code))
	if r.IsError() {
		t.Fatal(r)
	}
	e.Keep(lib)
	for i := 0; i < 3; i++ {
		if r := e.CallFunction("lib", "count", nil, nil, nopCaller{}); r.Int != 1 {
			t.Fatalf("call %d of count: %q", i, r.Append(nil))
		}
		if r := e.CallFunction("lib", "seen", [][]byte{[]byte("k")}, nil, nopCaller{}); r.Int != 0 || r.IsError() {
			t.Fatalf("call %d of seen: %q", i, r.Append(nil))
		}
	}
	if got := e.Run("", []byte("return 1"), nil, nil, nopCaller{}); got.Int != 1 {
		t.Fatalf("EVAL after: %v", got)
	}
	if len(logged) != 1 {
		t.Fatalf("the chunk's redis.log ran %d times (once at the load, and not again for a call): %q", len(logged), logged)
	}
}

// A stateful library's chunk runs again for each call under a budget of
// its own, as at its load: the call's budget is the function's alone, and
// a library whose load used most of the budget still runs its functions.
func TestStatefulLibraryBudget(t *testing.T) {
	e := New(Options{Budget: 150_000}) // the load uses 120,108 units, a call 80,022
	defer e.Close()
	code := "#!lua name=lib\nlocal n = 0\nfor i = 1, 20000 do n = n + 1 end\n" +
		"redis.register_function('f', function() n = n + 1 for i = 1, 20000 do end return n end)\n"
	lib, r := e.LoadLibrary("lib", []byte(code))
	if r.IsError() {
		t.Fatal(r)
	}
	e.Keep(lib)
	for i := 0; i < 2; i++ {
		if r := e.CallFunction("lib", "f", nil, nil, nopCaller{}); r.Int != 20001 {
			t.Fatalf("call %d: %q", i, r.Append(nil))
		}
	}
}

// The property the fresh copies exist for: a library kept since its load
// answers every call as a library loaded again just before the call (a
// node restarted from a snapshot) does. Any library, any function: a
// function judged unable to change state that could would answer
// otherwise on the second engine.
func FuzzLibraryStateSameAfterReload(f *testing.F) {
	for _, s := range []string{
		"local n = 0\nredis.register_function('f', function() n = n + 1 return n end)",
		"local C = {n = 0}\nredis.register_function('f', function(k) C.n = C.n + 1 return C.n end)",
		"local C = {ttl = 1}\nredis.register_function('f', function(k) local function g() return C.ttl end return g() end)",
		"local C = {}\nredis.register_function('f', function(k) local c = C local function put() c.x = (c.x or 0) + 1 end put() return c.x end)",
		"local M = {}\nfunction M.g(k) return k end\nfunction M.f(k, a) return M.g(k[1]) end\nredis.register_function('f', M.f)",
		"local C = {s = {}}\nredis.register_function('f', function(k) local s = C.s s[#s+1] = k[1] return #s end)",
		"local function mk() local c = 0 return function() c = c + 1 return c end end\nlocal g = mk()\nredis.register_function('f', function() return g() end)",
		"local t = {}\nredis.register_function('f', function(k) local r = rawget(t, 'x') rawset(t, 'x', 1) return r end)",
		"local t = {1}\nredis.register_function('f', function(k) return #t + (t[1] == 1 and 1 or 0) end)",
		"local it = ('1 2 3 4 5 6'):gmatch('%d')\nredis.register_function('f', function() return it() end)",
		"local T = {it = ('abcdef'):gmatch('.')}\nredis.register_function('f', function() return T.it() end)",
	} {
		f.Add("#!lua name=lib\n" + s)
	}
	a, b := New(Options{Budget: 100_000}), New(Options{Budget: 100_000})
	defer a.Close()
	defer b.Close()
	f.Fuzz(func(t *testing.T, code string) {
		name, msg := ParseLibraryMeta([]byte(code))
		if msg != "" {
			return
		}
		lib, r := a.LoadLibrary(name, []byte(code))
		if r.IsError() {
			return
		}
		a.Keep(lib)
		defer a.Drop(name)
		defer b.Drop(name)
		keys, args := [][]byte{[]byte("k")}, [][]byte{[]byte("v")}
		for i := 0; i < 3; i++ {
			for _, fn := range lib.Functions {
				lb, r := b.LoadLibrary(name, []byte(code))
				if r.IsError() {
					t.Fatalf("the library loads on one engine and not on the other: %q", r.Append(nil))
				}
				b.Keep(lb)
				ra := a.CallFunction(name, fn.Name, keys, args, nopCaller{})
				rb := b.CallFunction(name, fn.Name, keys, args, nopCaller{})
				if ga, gb := ra.Append(nil), rb.Append(nil); string(ga) != string(gb) {
					t.Fatalf("call %d of %s: %q after the load, %q just after a reload (stateful: %v)", i, fn.Name, ga, gb, lib.fns[fn.Name].fresh)
				}
			}
		}
	})
}

// A library made to be slow to check (many functions reaching one big
// helper) costs its load a bounded amount of checking: the functions
// registered once checkSteps is spent are stateful (safe, only slower),
// the same ones on every engine.
func TestLibraryStateCheckBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("#!lua name=big\nlocal function helper(k)\n")
	for i := 0; i < 2000; i++ {
		b.WriteString("  k = k .. 'a'\n")
	}
	b.WriteString("  return k\nend\n")
	const fns = 1500
	for i := 0; i < fns; i++ {
		b.WriteString("redis.register_function('f" + strconv.Itoa(i) + "', function(keys) return helper(keys[1]) end)\n")
	}
	var marks [2][]bool
	for j := range marks {
		e := New(Options{Budget: 1 << 40})
		lib, r := e.LoadLibrary("big", []byte(b.String()))
		if r.IsError() {
			t.Fatal(r)
		}
		for _, f := range lib.Functions {
			marks[j] = append(marks[j], lib.fns[f.Name].fresh)
		}
		e.Close()
	}
	if marks[0][0] || !marks[0][fns-1] {
		t.Fatalf("first function stateful: %v, last: %v; want false, true", marks[0][0], marks[0][fns-1])
	}
	if fmt.Sprint(marks[0]) != fmt.Sprint(marks[1]) {
		t.Fatal("two engines marked different functions")
	}
}

// A call apart (CallFunctionApart: a no-writes function run outside the
// log on one node, while writes are refused) runs in a fresh copy of the
// library even for a function the check let keep its closures, so that a
// way to change them the check missed (as the gmatch iterator once was)
// still changes nothing a later call sees. The check's mistake is made
// here by hand (fresh cleared on a function that keeps a counter): a
// stand-in for a hole not known yet.
func TestCallFunctionApartLeavesKeptClosures(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	code := "#!lua name=lib\nlocal n = 0\nlocal seen = {}\n" +
		"redis.register_function('count', function() n = n + 1 return n end)\n" +
		"redis.register_function('seen', function(keys) local was = seen[keys[1]] and 1 or 0 seen[keys[1]] = true return was end)\n"
	lib, r := e.LoadLibrary("lib", []byte(code))
	if r.IsError() {
		t.Fatal(r)
	}
	e.Keep(lib)
	for _, name := range []string{"count", "seen"} {
		if !lib.fns[name].fresh {
			t.Fatalf("%s: the check let it keep its closures", name)
		}
		lib.fns[name].fresh = false // the check's mistake
	}
	k := [][]byte{[]byte("k")}
	for i := 0; i < 3; i++ {
		if r := e.CallFunctionApart("lib", "count", nil, nil, nopCaller{}); r.Int != 1 || r.IsError() {
			t.Fatalf("apart call %d of count: %q", i, r.Append(nil))
		}
		if r := e.CallFunctionApart("lib", "seen", k, nil, nopCaller{}); r.Int != 0 || r.IsError() {
			t.Fatalf("apart call %d of seen: %q", i, r.Append(nil))
		}
	}
	// The kept closures are as the load left them: the next logged call
	// (CallFunction, which uses them now) answers as after a load.
	if r := e.CallFunction("lib", "count", nil, nil, nopCaller{}); r.Int != 1 {
		t.Fatalf("count after the apart calls: %q, want :1 (as after a load)", r.Append(nil))
	}
	if r := e.CallFunction("lib", "seen", k, nil, nopCaller{}); r.Int != 0 {
		t.Fatalf("seen after the apart calls: %q, want :0 (as after a load)", r.Append(nil))
	}
	if r := e.CallFunctionApart("lib", "nope", nil, nil, nopCaller{}); r.String() != "ERR Function not found" {
		t.Fatalf("unknown function apart: %q", r.Append(nil))
	}
}
