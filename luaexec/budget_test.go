package luaexec

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// The work budget stops runaway scripts deterministically: the same error,
// after the same amount of work, on every run and every machine.

func TestBudgetStopsRunawayScripts(t *testing.T) {
	const budget = 2_000_000
	e := newEngine(t, Options{Budget: budget, MaxStringBytes: 1 << 20})
	budgetErr := "ERR script exceeded the deterministic work budget (2000000 units)"
	sizeErr := "ERR script exceeded the maximum string size (1048576 bytes)"
	for _, tc := range []struct{ name, script, want string }{
		{"while", `while true do end`, budgetErr},
		{"repeat", `repeat until false`, budgetErr},
		{"numeric for", `for i = 1, math.huge do end`, budgetErr},
		{"generic for", `local function it() return 1 end for x in it do end`, budgetErr},
		{"tail recursion", `local function f() return f() end return f()`, budgetErr},
		{"mutual recursion", `local g local function f() return g() end g = function() return f() end return f()`, budgetErr},
		{"loop in pcall", `pcall(function() while true do end end)`, budgetErr},
		{"table growth", `local t = {} while true do t[#t+1] = {} end`, budgetErr},
		{"string table", `local t = {} while true do t[#t+1] = string.rep('x', 1000) end`, budgetErr},
		{"doubling", `local s = 'x' while true do s = s .. s end`, sizeErr},
		{"rep bomb", `return string.rep('x', 1e9)`, sizeErr},
		{"rep of long string", `return string.rep(string.rep('x', 1000), 1e6)`, sizeErr},
		{"concat bomb", `local t = {} for i = 1, 1e6 do t[i] = 'xxxxxxxxxx' end return table.concat(t)`, budgetErr},
		{"format bomb", `local s = string.rep('x', 90) while true do s = string.format('%s%s', s, s) end`, sizeErr},
		{"gsub bomb", `local s = string.rep('x', 1000) while true do s = s:gsub('x', 'xx') end`, budgetErr},
		{"pattern backtracking", `return string.rep('a', 5000):find('.-.-.-.-.-b')`, budgetErr},
		{"coroutines", `local t = {} while true do t[#t+1] = coroutine.create(function() end) end`, budgetErr},
		{"loadstring", `while true do loadstring('return 1') end`, budgetErr},
		{"sort", `local t = {} for i = 1, 1e5 do t[i] = -i end table.sort(t, function(a, b) return a < b end)`, budgetErr},
		{"unpack", `local t = {} for i = 1, 7000 do t[i] = i end while true do local a = {unpack(t)} end`, budgetErr},
		{"cjson", `local t = {} for i = 1, 1e6 do t[i] = i end return cjson.encode(t)`, budgetErr},
		{"gmatch", `local s = string.rep('a', 1e5) for i = 1, 1e9 do for w in s:gmatch('a') do end end`, budgetErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Run("", []byte(tc.script), nil, nil, mapCaller{})
			if r.Type != resp.Error || r.String() != tc.want {
				t.Errorf("got %q want %q", replyString(r), tc.want)
			}
		})
	}
}

func TestBudgetIsDeterministic(t *testing.T) {
	scripts := []string{
		`local n = 0 while true do n = n + 1 if n % 7 == 0 then n = n + 2 end end`,
		`local t = {} for i = 1, 1e9 do t[#t+1] = tostring(i) .. 'x' end`,
		`local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end while true do f(100) end`,
	}
	for _, s := range scripts {
		var used []int64
		for i := 0; i < 3; i++ {
			e := New(Options{Budget: 1_000_000})
			r := e.Run("", []byte(s), nil, nil, mapCaller{})
			if !strings.Contains(r.String(), "work budget") {
				t.Fatalf("%s: %q", s, replyString(r))
			}
			used = append(used, e.run.used)
			e.Close()
		}
		if used[0] != used[1] || used[1] != used[2] {
			t.Errorf("%s: work differs between runs: %v", s, used)
		}
	}
}

func TestBudgetAllowsOrdinaryScripts(t *testing.T) {
	e := newEngine(t, Options{})
	for _, s := range []string{
		lockScript,
		unlockScript,
		`local t = {} for i = 1, 100000 do t[#t+1] = tostring(i) end return #table.concat(t, ',')`,
		`local s = '' for i = 1, 5000 do s = s .. 'x' end return #s`,
		`local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end return fib(20)`,
		`local n = 0 for i = 1, 1000000 do n = n + i end return n`,
	} {
		r := e.Run("", []byte(s), [][]byte{[]byte("k"), []byte("c"), []byte("l")},
			[][]byte{[]byte("1"), []byte("2"), []byte("3"), []byte("publish"), []byte("5")}, trivialCaller{})
		if r.Type == resp.Error {
			t.Errorf("%.40s...: %q", s, r.String())
		}
	}
}

func TestRecursionLimit(t *testing.T) {
	e := newEngine(t, Options{})
	// Redis allows about 20000 nested calls; deadbolt stops at 2000 (see
	// callStackSize).
	if got := run(t, e, `local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(1900)`); got != ":1900\r\n" {
		t.Errorf("deep recursion: %q", got)
	}
	got := run(t, e, `local n = 0 local function f() n = n + 1 return 1 + f() end local ok, e = pcall(f) return {n, e}`)
	if got != "*2\r\n:1997\r\n$29\r\nuser_script:1: stack overflow\r\n" {
		t.Errorf("overflow: %q", got)
	}
	// a script cannot make the engine unwind deep stacks over and over
	got = run(t, e, `local function f() return 1 + f() end for i = 1, 100 do pcall(f) end return 'done'`)
	if !strings.Contains(got, "work budget") {
		t.Errorf("repeated overflow: %q", got)
	}
}

func TestEnginesAreIndependent(t *testing.T) {
	var wg sync.WaitGroup
	results := make([]string, 4)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e := New(Options{})
			defer e.Close()
			var out []string
			for j := 0; j < 50; j++ {
				r := e.Run("", []byte(`return {tostring(math.random()), cjson.encode({1, 'a'}), tostring({})}`), nil, nil, mapCaller{})
				out = append(out, replyString(r))
			}
			results[i] = strings.Join(out, "|")
		}(i)
	}
	wg.Wait()
	for i := 1; i < len(results); i++ {
		if results[i] != results[0] {
			t.Fatalf("engine %d computed something else", i)
		}
	}
}

// Reading KEYS, ARGV, redis.call and redis.pcall through hidden locals
// (hoistedName) changes neither what a script does nor what it costs.
func TestHoistingChangesNothing(t *testing.T) {
	lock, err := os.ReadFile("../compat/testdata/lock.lua")
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := os.ReadFile("../compat/testdata/unlock.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		lockScript,
		unlockScript,
		string(lock),
		string(unlock),
		`for i = 1, #KEYS do redis.call('set', KEYS[i], ARGV[i]) end return {#KEYS, redis.call('get', KEYS[2])}`,
		`local function f() return KEYS[1] end return {f(), ARGV[1], redis.pcall('get', KEYS[1])}`,
		`while true do redis.call('get', KEYS[1]) end`,
		`local n = 0 while true do n = n + #ARGV + #redis.pcall('ping').ok end`,
		`return KEYS()`,
		`return ARGV .. 'x'`,
		`return KEYS + 1`,
		`return -ARGV`,
		`return redis.call.x`,
		`return redis.pcall.x.y`,
		`return ARGV.x.y`,
		`redis.call = 1`,
		`redis.pcall, KEYS = 1, 2`,
		`KEYS = 1`,
		`ARGV[1], ARGV[2] = ARGV[2], ARGV[1] return ARGV`,
		`function redis.pcall() end`,
		`function KEYS.f() return 1 end return KEYS.f()`,
		`function ARGV() end`,
		`local KEYS = {'shadow'} return {KEYS[1], ARGV[1]}`,
		`local redis = {call = function() return 'mine' end} return redis.call()`,
		`return redis.pcall('nosuch')`,
		`return redis.call('nosuch')`,
		`local ok, err = pcall(function() return KEYS() end) return err`,
		`for k, v in pairs(KEYS) do ARGV[k] = v end return ARGV`,
		`return loadstring('return KEYS[1] .. redis.call("get", ARGV[1])')()`,
	} {
		keys := [][]byte{[]byte("k1"), []byte("k2"), []byte("k3")}
		argv := [][]byte{[]byte("a1"), []byte("a2"), []byte("a3"), []byte("publish"), []byte("5")}
		var replies [2]string
		var used [2]int64
		var globals [2]int
		for i, hoist := range []bool{true, false} {
			e := New(Options{Budget: 200_000})
			p, msg := parseChunk(s, "user_script")
			if msg != "" {
				t.Fatalf("%s: %s", s, msg)
			}
			stmts, cost := instrument(p, false, hoist)
			proto, err := lua.Compile(stmts, "user_script")
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			sha := SHA1Hex([]byte(s))
			e.scripts[sha] = &script{proto: proto, cost: cost}
			for _, code := range proto.Code {
				if opCode(code) == lua.OP_GETGLOBAL {
					globals[i]++
				}
			}
			replies[i] = replyString(e.Run(sha, nil, keys, argv, lockCaller{mapCaller{"a1": "x"}}))
			used[i] = e.run.used
			e.Close()
		}
		if replies[0] != replies[1] || used[0] != used[1] {
			t.Errorf("%s:\n hoisted   %q, %d units\n otherwise %q, %d units", s, replies[0], used[0], replies[1], used[1])
		}
		if s == string(lock) && globals[0] >= globals[1] {
			t.Errorf("lock.lua: %d global reads hoisted, %d otherwise", globals[0], globals[1])
		}
	}
}

// lockCaller is a mapCaller that answers the commands of the lock scripts
// as trivialCaller does.
type lockCaller struct{ m mapCaller }

func (c lockCaller) Call(args [][]byte) resp.Reply {
	switch strings.ToLower(string(args[0])) {
	case "exists", "hexists", "hincrby", "hset", "pexpire", "pttl", "del", "publish":
		return trivialCaller{}.Call(args)
	}
	return c.m.Call(args)
}
