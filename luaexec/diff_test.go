package luaexec

import (
	"strconv"
	"strings"
	"testing"
)

// Differential tests: each script runs through EVAL on a real redis-server
// and through the Engine (whose commands go to the same server), and the
// replies must be byte for byte the same.

type diffCase struct {
	script string
	keys   []string
	args   []string
	setup  [][]string
}

// knownDiffs are scripts where the Engine knowingly answers differently.
var knownDiffs = map[string]string{
	// Lua 5.1 stops nested metamethod calls at 200 C levels ("C stack
	// overflow"); gopher-lua calls metamethods without counting them, so
	// the recursion ends at the ordinary call depth limit instead.
	`local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x`: "metamethod recursion depth",
	// The global table's history inside Redis (keys added and removed while
	// it initialises) is not fully known, so pairs(_G) differs in places.
	`local r = {} for k in pairs(_G) do r[#r+1] = tostring(k) end return r`: "order of pairs(_G)",
	// Redis allows 20000 nested Lua calls, deadbolt 2000 (callStackSize):
	// the count of levels reached differs, the error does not.
	`local n=0 local function f() n=n+1 return 1+f() end local ok, err = pcall(f) return {n, err}`: "call depth limit",
	`local n=0 local function f() n=n+1 return pcall(f) end f() return n`:                          "call depth limit",
}

func runDiff(t *testing.T, cases []diffCase) {
	t.Helper()
	rc := dialLiveRedis(t)
	e := New(Options{})
	defer e.Close()
	for i, c := range cases {
		name := strconv.Itoa(i) + ":" + c.script
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			if why, ok := knownDiffs[c.script]; ok {
				t.Skip("known difference: " + why)
			}
			prepare := func() {
				rc.doStr(t, "FLUSHALL")
				for _, s := range c.setup {
					rc.doStr(t, s...)
				}
			}
			prepare()
			args := []string{"EVAL", c.script, strconv.Itoa(len(c.keys))}
			args = append(args, c.keys...)
			args = append(args, c.args...)
			want := rc.doStr(t, args...)

			prepare()
			keys := make([][]byte, len(c.keys))
			for i, k := range c.keys {
				keys[i] = []byte(k)
			}
			argv := make([][]byte, len(c.args))
			for i, a := range c.args {
				argv[i] = []byte(a)
			}
			got := e.Run("", []byte(c.script), keys, argv, forwardCaller{t, rc})
			if !got.RESP2().Equal(want) {
				t.Errorf("script %q\n got: %q\nwant: %q", c.script, replyString(got), replyString(want))
			}
		})
	}
}

func scripts(ss ...string) []diffCase {
	out := make([]diffCase, len(ss))
	for i, s := range ss {
		out[i] = diffCase{script: s}
	}
	return out
}

func TestDiffConversions(t *testing.T) {
	runDiff(t, scripts(
		`return 1`,
		`return 3.99`,
		`return -3.99`,
		`return 0.5`,
		`return -0.5`,
		`return 1e20`,
		`return -1e20`,
		`return 2^63`,
		`return 1/0`,
		`return -1/0`,
		`return 'hello'`,
		`return ''`,
		`return true`,
		`return false`,
		`return nil`,
		`return`,
		`return {}`,
		`return {1,2,3}`,
		`return {1,2.5,"a",true,false,nil,3}`,
		`return {1,{2,{3,{4}}}}`,
		`return {ok='fine'}`,
		`return {ok='a\r\nb'}`,
		`return {err='bad'}`,
		`return {err='-bad thing'}`,
		`return {err='bad\r\nx'}`,
		`return {err=5}`,
		`return {ok=5}`,
		`return {err='x', ok='y'}`,
		`return {ok='y', 1, 2}`,
		`return {double=3.14}`,
		`return {double=10}`,
		`return {double=1/3}`,
		`return {double='x'}`,
		`return {big_number='123'}`,
		`return {verbatim_string={format='txt', string='hi'}}`,
		`return {map={a=1}}`,
		`return {set={a=true}}`,
		`return {a=1, b=2}`,
		`return {[1]='a', [3]='c'}`,
		`return {1, nil, 3}`,
		`return redis.status_reply('FINE')`,
		`return redis.status_reply(1)`,
		`return redis.status_reply()`,
		`return redis.error_reply('My Error')`,
		`return redis.error_reply('-My Error')`,
		`return redis.error_reply('MYERR')`,
		`return redis.error_reply('')`,
		`return redis.error_reply()`,
		`return redis.error_reply(1)`,
		`return cjson.null`,
		`return {cjson.null}`,
		`return print`,
		`return string`,
		`return _G`,
		`return KEYS`,
		`return coroutine.create(function() end)`,
	))
}

func TestDiffCallArguments(t *testing.T) {
	var cases []diffCase
	for _, v := range []string{"1.5", "0.1", "1e20", "5", "-0", "1/0", "-1/0", "2^53", "2^63", "1e15",
		"123456789012345678", "3.0", `"10"+"5"`, "1e-5", "-2.5", "0.1+0.2", "100/3", "2^31", "-2^31", "1e16", "1e17"} {
		cases = append(cases, diffCase{script: "redis.call('set','k'," + v + ") return redis.call('get','k')"})
	}
	cases = append(cases,
		diffCase{script: `return redis.call('set','k',true)`},
		diffCase{script: `return redis.call('set','k',nil)`},
		diffCase{script: `return redis.call('set','k',{})`},
		diffCase{script: `return redis.call('set','k',cjson.null)`},
		diffCase{script: `return redis.call()`},
		diffCase{script: `return redis.pcall()`},
		diffCase{script: `return redis.call(1)`},
		diffCase{script: `local v = redis.call('get', KEYS[1]) return v + ARGV[1]`, keys: []string{"n"}, args: []string{"2"}, setup: [][]string{{"set", "n", "3"}}},
		diffCase{script: `local v = redis.call('get', KEYS[1]) redis.call('set', KEYS[1], v + ARGV[1]) return redis.call('get', KEYS[1])`, keys: []string{"n"}, args: []string{"2"}, setup: [][]string{{"set", "n", "3"}}},
		diffCase{script: `return redis.call('get', KEYS[1])`, keys: []string{"missing"}},
		diffCase{script: `return {redis.call('get', KEYS[1])}`, keys: []string{"missing"}},
		diffCase{script: `return type(redis.call('get', KEYS[1]))`, keys: []string{"missing"}},
		diffCase{script: `return redis.call('set', KEYS[1], 'v')`, keys: []string{"k"}},
		diffCase{script: `local r = redis.call('set', KEYS[1], 'v') return r.ok`, keys: []string{"k"}},
		diffCase{script: `return redis.call('incr', KEYS[1])`, keys: []string{"k"}},
		diffCase{script: `return type(redis.call('incr', KEYS[1]))`, keys: []string{"k"}},
		diffCase{script: `return redis.call('hgetall', KEYS[1])`, keys: []string{"h"}, setup: [][]string{{"hset", "h", "a", "1", "b", "2"}}},
		diffCase{script: `return redis.call('lrange', KEYS[1], 0, -1)`, keys: []string{"l"}, setup: [][]string{{"rpush", "l", "a", "b", "c"}}},
		diffCase{script: `return redis.call('zrange', KEYS[1], 0, -1, 'WITHSCORES')`, keys: []string{"z"}, setup: [][]string{{"zadd", "z", "922337203685477", "a", "1795342092073", "b", "1.5", "c"}}},
		diffCase{script: `return redis.call('zscore', KEYS[1], 'a')`, keys: []string{"z"}, setup: [][]string{{"zadd", "z", "922337203685477", "a"}}},
		diffCase{script: `return redis.call('exists', KEYS[1], KEYS[2])`, keys: []string{"a", "b"}, setup: [][]string{{"set", "a", "1"}}},
		diffCase{script: `return redis.call('nosuch')`},
		diffCase{script: `return redis.pcall('nosuch')`},
		diffCase{script: `return redis.call('get','a','b')`},
		diffCase{script: `return redis.pcall('get','a','b')`},
		diffCase{script: `redis.call('set','s','x') return redis.call('lpush','s','x')`},
		diffCase{script: `redis.call('set','s','x') return redis.pcall('lpush','s','x')`},
		diffCase{script: `redis.call('set','s','x') local t = redis.pcall('lpush','s','x') return t.err`},
		diffCase{script: `local t = redis.pcall('nosuch') local n = 0 for k,v in pairs(t) do n = n + 1 end return n`},
		diffCase{script: `return pcall(redis.call, 'nosuch')`},
		diffCase{script: `local ok, e = pcall(redis.call, 'nosuch') return e`},
		diffCase{script: `local ok, e = pcall(redis.call, 'nosuch') return type(e)`},
		diffCase{script: `redis.call('set','s','x') local ok, e = pcall(redis.call, 'incr', 's') return {tostring(ok), e}`},
		diffCase{script: `return redis.call('set', 'k', 'v', 'px', 100)`},
		diffCase{script: `return redis.call('SET', 'k', 'v')`},
		diffCase{script: `return redis.call('ping')`},
		diffCase{script: `return redis.call('echo', 'a\0b')`},
	)
	runDiff(t, cases)
}

// The main chunk reads KEYS, ARGV, redis.call and redis.pcall through
// hidden locals (hoistedName): errors must still name them as Lua 5.1 does.
func TestDiffHoistedGlobals(t *testing.T) {
	var cases []diffCase
	for _, s := range []string{
		`return KEYS()`,
		`return ARGV(1)`,
		`return ARGV .. 'x'`,
		`return KEYS + 1`,
		`return #KEYS + #ARGV`,
		`return redis.call.x`,
		`return redis.pcall.x.y`,
		`return redis.call()`,
		`return ARGV.x.y`,
		`redis.call = 1`,
		`redis.pcall, KEYS = 1, 2`,
		`KEYS = 1`,
		`function redis.call() end`,
		`function ARGV() end`,
		`ARGV[1], ARGV[2] = ARGV[2], ARGV[1] return ARGV`,
		`for i = 1, #KEYS do redis.call('set', KEYS[i], ARGV[i]) end return redis.call('mget', unpack(KEYS))`,
		`local ok, err = pcall(function() return KEYS() end) return err`,
		`local KEYS = {'shadow'} return {KEYS[1], ARGV[1]}`,
		`for i = 1, 3 do if i == 3 then return KEYS[i]() end end`,
		`return redis.pcall('nosuch', KEYS[1])`,
	} {
		cases = append(cases, diffCase{script: s, keys: []string{"k1", "k2"}, args: []string{"a1", "a2"}})
	}
	runDiff(t, cases)
}

func TestDiffErrors(t *testing.T) {
	runDiff(t, scripts(
		`return foo`,
		`foo = 1`,
		`local x = foo`,
		"local a = 1\nlocal b = 2\nreturn c",
		`error('x')`,
		`error('x', 0)`,
		`error('x', 2)`,
		`error(1)`,
		`error(1.5)`,
		`error(nil)`,
		`error(true)`,
		`error({err='X y'})`,
		`error({err='Xy'})`,
		`error({err=5})`,
		`error({err='a'}, 2)`,
		"local function f()\n  error('deep')\nend\nf()",
		"local function f()\n  error('deep', 2)\nend\nf()",
		"local function f()\n  local x = nil\n  return x.y\nend\nreturn f()",
		"\n\nerror('line3')",
		`rawset(_G,'x',1)`,
		`string.x = 1`,
		`string.rep = nil`,
		`setmetatable(_G, nil)`,
		`getmetatable('').__index = {}`,
		`getmetatable('').x = 1`,
		`_G.x = 1`,
		`redis.call = nil`,
		`table.insert(string, 1)`,
		`cjson.encode = nil`,
		`math.random = nil`,
		`local x = _G; x.y = 1`,
		`local function f() return 1 + f() end return f()`,
		`local n=0 local function f() n=n+1 return 1+f() end local ok, err = pcall(f) return {n, err}`,
		`local n=0 local function f() n=n+1 return pcall(f) end f() return n`,
		`return redis.sha1hex()`,
		`return redis.sha1hex(nil)`,
		`return redis.sha1hex(12)`,
		`return redis.sha1hex('')`,
		`return redis.setresp(4)`,
		`return redis.setresp(2)`,
		`return redis.set_repl(8)`,
		`return redis.set_repl()`,
		`return redis.set_repl(redis.REPL_ALL)`,
		`return redis.log()`,
		`return redis.log('x', 'y')`,
		`return redis.log(7, 'y')`,
		`return redis.log('2', 'y')`,
		`return redis.log(redis.LOG_WARNING, 'hello', 1, {}, 'x')`,
		`return redis.replicate_commands()`,
		`return redis.breakpoint()`,
		`return redis.debug('x')`,
		`return {redis.REDIS_VERSION_NUM, redis.REDIS_VERSION, redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}`,
		`return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}`,
		`return assert(false)`,
		`return assert(nil, 'my message')`,
		`return assert(1, 2)`,
		`return assert()`,
		`error(string)`,
		`local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x`,
	))
}

func TestDiffRuntimeErrors(t *testing.T) {
	runDiff(t, scripts(
		`local x; return x.y`,
		`local x; return x + 1`,
		`local x; return 1 + x`,
		`local t={} return t.a.b`,
		`local x; x()`,
		`return 1 < nil`,
		`return {} < {}`,
		`return 'a' < 1`,
		`local x; return 'a'..x`,
		`local x; return x..'a'`,
		`return 'a'..{}`,
		`local t = {} return t.x .. 'a'`,
		`return ('a')+1`,
		`return 'a' + 1`,
		`return '10' + '5'`,
		`return '0x10' + 0`,
		`return '010' + 0`,
		`return ' 5 ' * 2`,
		`local t = {} t.f()`,
		`return #nil`,
		`local x; return #x`,
		`return -{}`,
		`local s = 'x'; return -s`,
		`return -'2'`,
		`local t = {} return t.a.b.c`,
		`redis.cal('get', 'x')`,
		`local a = {} a.b.c = 1`,
		`return nil .. nil`,
		`return 1 .. 2`,
		`local a, b = 'x', nil return a .. b .. 'y'`,
		`return math.floor('a')`,
		`return math.floor('2.5')`,
		`return string.rep()`,
		`return string.rep('x')`,
		`return ('x'):rep('a')`,
		`return ('x'):rep()`,
		`return string.rep('x', -1)`,
		`return tonumber()`,
		`return string.sub()`,
		`return table.concat({1,{}})`,
		`return table.concat({1,2,3}, ', ')`,
		`return table.insert({}, 1, 2, 3)`,
		`return #{unpack({}, 1, 7997)}`,
		`return #{unpack({}, 1, 7998)}`,
		`return select('#', string.byte(string.rep('x', 7997), 1, -1))`,
		`return #{string.byte(string.rep('x', 8000), 1, -1)}`,
		`return select(0)`,
		`return select(-1, 'a', 'b')`,
		`return select(2, 'a', 'b', 'c')`,
		`return select('#', 'a', nil, 'c')`,
		`local t = setmetatable({}, {__add = function(a, b) return 42 end}) return t + 1`,
		`local t = setmetatable({}, {__concat = function(a, b) return 'cat' end}) return t .. 'x'`,
		`local t = setmetatable({}, {__unm = function(a) return 7 end}) return -t`,
		`local t = setmetatable({}, {__len = function(a) return 7 end}) return #t`,
		`local t = setmetatable({}, {__call = function(self, a) return a end}) return t(5)`,
		`local t = setmetatable({}, {__index = function(t, k) return k .. '!' end}) return t.foo`,
		`local t = setmetatable({}, {__tostring = function() return 'T' end}) return tostring(t)`,
		`local t = setmetatable({}, {__lt = function() return true end}) return t < t`,
		`return getmetatable(setmetatable({}, {__metatable = 'locked'}))`,
		`local t = setmetatable({}, {__metatable = 'locked'}) setmetatable(t, {})`,
		`return setmetatable({}, 1)`,
		`return getmetatable('').__index == string`,
		`return getmetatable(_G) == nil`,
		`return type(getmetatable(_G).__index)`,
	))
}

func TestDiffLua(t *testing.T) {
	runDiff(t, scripts(
		`local c = '3'; local t = {} for i = c, 1, -1 do t[#t+1] = i end return t`,
		`local t = {} for i = '1', '3' do t[#t+1] = i end return t`,
		`for i = 'a', 2 do end`,
		`for i = 1, 'b' do end`,
		`for i = 1, 2, {} do end`,
		`for i = 1, 2, 0.5 do end return 1`,
		`local t = {} for i = 1, 3 do t[#t+1] = i * 2 end return t`,
		`local t = {} for i = 10, 1, -3 do t[#t+1] = i end return t`,
		`local s = 0 for i = 1, 100 do s = s + i end return s`,
		`local t = {} for k, v in ipairs({'a','b','c'}) do t[#t+1] = k .. v end return t`,
		`local n = 0 while n < 10 do n = n + 1 end return n`,
		`local n = 0 repeat n = n + 1 until n >= 5 return n`,
		`local n = 0 repeat local m = n n = n + 1 until m >= 3 return n`,
		`local t = {} for i = 1, 10 do if i % 2 == 0 then t[#t+1] = i end end return t`,
		`local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end return fib(20)`,
		`local function f(...) return select('#', ...) end return f(1, nil, 3)`,
		`local function f(...) return arg.n end return f(1, 2)`,
		`local function f(...) local t = {...} return #t end return f(1, 2, 3)`,
		`return select('#', ...)`,
		`local a = ... return a`,
		`return arg`,
		`local f = function() return f end return f()`,
		`local function f() return f end return type(f())`,
		`local a, b, c = (function() return 1, 2, 3 end)() return {a, b, c}`,
		`local a, b = ((function() return 1, 2 end)()) return {a, b}`,
		`return {(function() return 1, 2, 3 end)()}`,
		`return {(function() return 1, 2, 3 end)(), 4}`,
		`local t = {} t[1], t[2] = 1, 2 return t`,
		`local a, b = 1, 2 a, b = b, a return {a, b}`,
		`local goto = 5 return goto`,
		`local t = {} t.goto = 1 return t.goto`,
		`return tostring(1e15)`,
		`return tostring(1e14)`,
		`return tostring(123456789012345)`,
		`return tostring(0.1)`,
		`return tostring(1/3)`,
		`return tostring(-0)`,
		`return tostring(1/0)`,
		`return tostring(-1/0)`,
		`return tostring(2^63)`,
		`return tostring(2^53 + 1)`,
		`return 1 .. ''`,
		`return 1.5 .. ''`,
		`return 1e100 .. ''`,
		`return tostring(nil)`,
		`return tostring(true)`,
		`return tostring(12):len()`,
		`return tonumber('0x1F')`,
		`return tonumber('  10  ')`,
		`return tonumber('10', 2)`,
		`return tonumber('ff', 16)`,
		`return tonumber('zz', 36)`,
		`return tonumber('8', 8)`,
		`return tonumber('1e2')`,
		`return tonumber('1e')`,
		`return tonumber('')`,
		`return tonumber('abc')`,
		`return tonumber('5', 1)`,
		`return tonumber('5', 37)`,
		`return tonumber(nil)`,
		`return tonumber({})`,
		`return tonumber('inf') == math.huge`,
		`return tonumber('nan') ~= tonumber('nan')`,
		`return tonumber('1.5e3')`,
		`return tonumber('.5')`,
		`return tonumber('5.')`,
		`return tonumber('0x')`,
		`return tonumber('1 2')`,
		`return type(tonumber)`,
		`return _VERSION`,
		`return type(loadstring)`,
		`return type(load)`,
		`return loadstring('return 1+1')()`,
		`return loadstring('return ...')(4, 5)`,
		`local f, e = loadstring('return (') return e`,
		`local f, e = loadstring('x = ', 'chunk') return e`,
		`local f, e = loadstring('x = ', '=chunk') return e`,
		`local f, e = loadstring('x = ', '@chunk') return e`,
		`return {loadstring(string.dump(function() return 1 end))}`,
		`local f = loadstring('error("in chunk")') f()`,
		`local f = loadstring('local x; return x.y') return f()`,
		`local i = 0 local f = load(function() i = i + 1 if i == 1 then return 'return 7' end end) return f()`,
		`return type(setfenv)`,
		`return type(getfenv)`,
		`return type(print)`,
		`return type(require)`,
		`return type(module)`,
		`return type(dofile)`,
		`return type(loadfile)`,
		`return type(newproxy)`,
		`return type(os)`,
		`return type(io)`,
		`return type(debug)`,
		`return type(package)`,
		`return type(coroutine)`,
		`return type(gcinfo)`,
		`return type(collectgarbage)`,
		`return collectgarbage('count') >= 0`,
		`return collectgarbage('bogus')`,
		`return type(string.dump)`,
		`return type(string.gfind)`,
		`return type(table.getn)`,
		`return type(math.mod)`,
		`return table.getn({1,2,3})`,
		`return table.setn({}, 1)`,
		`return table.maxn({1, 2, [10] = 3})`,
		`local t = {3,1,2} table.sort(t) return t`,
		`local t = {3,1,2} table.sort(t, function(a, b) return a > b end) return t`,
		`local t = {'b','a','c'} table.sort(t) return t`,
		`local t = {3,'a',2} table.sort(t) return t`,
		`local t = {{1},{2}} table.sort(t) return t`,
		`local t = {5,3,8,1,9,2,7,4,6,10,15,12,11,14,13} table.sort(t) return t`,
		`local t = {} for i = 1, 50 do t[i] = {i % 5, i} end table.sort(t, function(a, b) return a[1] < b[1] end) local r = {} for i, v in ipairs(t) do r[i] = v[2] end return r`,
		`local t = {1,2,3,4,5,6,7,8,9,10} table.sort(t, function(a, b) return true end) return t`,
		`local t = {1,2,3} table.insert(t, 4) table.insert(t, 1, 0) return t`,
		`local t = {1,2,3} return {table.remove(t), table.remove(t, 1), t[1], #t}`,
		`local t = {} return table.remove(t)`,
		`local n = 0 table.foreach({a=1}, function(k, v) n = n + v end) return n`,
		`local n = 0 table.foreachi({5,6}, function(i, v) n = n + v end) return n`,
		`return unpack({1,2,3})`,
		`return {unpack({1,2,3}, 2)}`,
		`return {unpack({1,2,3}, 2, 5)}`,
		`return {next({})}`,
		`local t = {} t[3] = 'c' t[2] = 'b' t[1] = 'a' return #t`,
		`local t = {} for i = 10, 1, -1 do t[i] = i end return #t`,
		`local t = {1,2,3} t[2] = nil return #t`,
		`local t = {1,2} t[4] = 4 return #t`,
		`return rawequal('a', 'a')`,
		`return rawget({a=1}, 'a')`,
		`return rawget(_G, 'redis') ~= nil`,
		`return rawget(_G, 'nope')`,
		`local t = rawset({}, 'a', 1) return t.a`,
		`return rawset({}, nil, 1)`,
		`return #string`,
		`local n=0 for k,v in pairs(string) do n=n+1 end return n`,
		`local n=0 for k,v in pairs(_G) do n=n+1 end return n`,
		`local n=0 for k,v in pairs(redis) do n=n+1 end return n`,
		`KEYS[1] = 'x' return KEYS[1]`,
		`return #KEYS + #ARGV`,
		`return math.huge`,
		`return tostring(math.huge)`,
		`return tostring(math.pi)`,
		`return math.max(1, '5', 3)`,
		`return math.min(4, 2.5)`,
		`return math.max()`,
		`return math.floor(3.7)`,
		`return math.ceil(3.2)`,
		`return tostring(math.sqrt(2))`,
		`return tostring(math.fmod(7, 3))`,
		`return tostring(math.fmod(-7, 3))`,
		`return {math.modf(3.7)}`,
		`return tostring(select(2, math.modf(3.75)))`,
		`return {math.frexp(8)}`,
		`return math.ldexp(1, 10)`,
		`return tostring(math.abs(-2.5))`,
		`return tostring(math.exp(1))`,
		`return tostring(math.log(10))`,
		`return tostring(math.log10(1000))`,
		`return tostring(math.sin(1))`,
		`return tostring(math.cos(1))`,
		`return tostring(math.tan(1))`,
		`return tostring(math.atan2(1, 2))`,
		`return tostring(math.pow(2, 10))`,
		`return tostring(2^0.5)`,
		`return tostring(10 % 3)`,
		`return tostring(-10 % 3)`,
		`return tostring(10 % -3)`,
		`return tostring(5.5 % 2)`,
		`return tostring(1 % 0)`,
		`return tostring(math.deg(math.pi))`,
		`return tostring(math.rad(180))`,
		`return tostring(math.cosh(1))`,
		`return tostring(7 / 2)`,
		`return 7 / 2`,
		`return tostring(0/0) == tostring(0/0)`,
	))
}

func TestDiffStrings(t *testing.T) {
	runDiff(t, scripts(
		`return string.len('abc')`,
		`return ('abc'):len()`,
		`return #'abc'`,
		`return string.sub('hello', 2, 4)`,
		`return string.sub('hello', -3)`,
		`return string.sub('hello', 0)`,
		`return string.sub('hello', 10)`,
		`return string.sub('hello', 2, -2)`,
		`return string.upper('abc')`,
		`return string.lower('ABC')`,
		`return string.reverse('abc')`,
		`return string.rep('ab', 3)`,
		`return string.rep('ab', 0)`,
		`return {string.byte('ABC', 1, 3)}`,
		`return string.byte('A')`,
		`return {string.byte('ABC', -1)}`,
		`return string.char(72, 105)`,
		`return string.char(256)`,
		`return string.char()`,
		`return {string.find('hello world', 'wor')}`,
		`return {string.find('hello world', 'o', 6)}`,
		`return {string.find('hello', 'l+')}`,
		`return {string.find('hello', '(l)(l)')}`,
		`return {string.find('hello', 'x')}`,
		`return {string.find('a.b', '.', 1, true)}`,
		`return {string.find('abc', '')}`,
		`return {string.find('abc', '', 10)}`,
		`return string.match('key:123', '(%a+):(%d+)')`,
		`return {string.match('key:123', '(%a+):(%d+)')}`,
		`return string.match('hello', '()ll()')`,
		`return {string.match('  trim  ', '^%s*(.-)%s*$')}`,
		`return string.match('[test]', '%[(.*)%]')`,
		`return string.match('f(a(b)c)', '%b()')`,
		`return string.match('THE (quick) fox', '%f[%a]%a+')`,
		`return string.match('abc', '[%a')`,
		`return string.match('abc', '%')`,
		`return string.match('abc', '(%a')`,
		`return string.match('abc', '%a)')`,
		`return string.match('abc', '%1')`,
		`return string.match('aa', '(a)%1')`,
		`return string.match('abc', '%b')`,
		`return string.match('abc', '%f')`,
		`return string.match('hello', '.-l')`,
		`return string.match('hello', '.*l')`,
		`return string.match('x = 10', '(%w+)%s*=%s*(%w+)')`,
		`return string.match('2024-01-15', '(%d+)-(%d+)-(%d+)')`,
		`return string.match('a\0b', 'a%zb')`,
		`return string.match('abc', '^b')`,
		`return string.match('abc', 'c$')`,
		`return string.match('a$c', 'a$c')`,
		`return string.match('abc', '[^a]+')`,
		`return string.match('a-b', '[a-]+')`,
		`return string.match('a]b', '[]a]+')`,
		`return string.match('UPPER lower', '%u+')`,
		`return string.match('x1y2', '%D+')`,
		`return string.match('@#!', '%p+')`,
		`return string.match('tab\there', '%c')`,
		`return string.match('abc', 'b', -1)`,
		`return string.gsub('hello world', 'o', '0')`,
		`return {string.gsub('hello world', 'o', '0')}`,
		`return {string.gsub('hello world', 'o', '0', 1)}`,
		`return {string.gsub('hello', '', '-')}`,
		`return {string.gsub('abc', '%w', '%0%0')}`,
		`return {string.gsub('abc', '(%w)', '[%1]')}`,
		`return {string.gsub('abc', '%w', '%%')}`,
		`return {string.gsub('abc', '%w', '%2')}`,
		`return {string.gsub('abc', 'b', '%')}`,
		`return {string.gsub('hello world', '%w+', function(w) return w:upper() end)}`,
		`return {string.gsub('hello world', '%w+', {hello='HI'})}`,
		`return {string.gsub('hello', 'l', false)}`,
		`return {string.gsub('hello', 'l', 5)}`,
		`return {string.gsub('hello', 'l', function() return {} end)}`,
		`return {string.gsub('abc', '^a', 'X')}`,
		`return {string.gsub('a,b,,c', ',', ';')}`,
		`local t = {} for w in string.gmatch('one two three', '%a+') do t[#t+1] = w end return t`,
		`local t = {} for k, v in string.gmatch('a=1, b=2', '(%w+)=(%w+)') do t[#t+1] = k .. v end return t`,
		`local t = {} for w in string.gmatch('abc', '') do t[#t+1] = 'x' end return #t`,
		`local t = {} for w in string.gfind('a b', '%a') do t[#t+1] = w end return t`,
		`return string.format('%d', 3.7)`,
		`return string.format('%d', -3.7)`,
		`return string.format('%5d|%-5d|%05d', 42, 42, 42)`,
		`return string.format('%+d % d', 5, 5)`,
		`return string.format('%x %X %o', 255, 255, 8)`,
		`return string.format('%#x %#o %#X', 255, 8, 0)`,
		`return string.format('%.3d', 7)`,
		`return string.format('%.0d', 0)`,
		`return string.format('%s', 'hi')`,
		`return string.format('%10s|%-10s|', 'hi', 'hi')`,
		`return string.format('%.2s', 'hello')`,
		`return string.format('%s', 1.5)`,
		`return string.format('%s', 10)`,
		`return string.format('%s %s', 1, 2)`,
		`return string.format('%s', {})`,
		`return string.format('%s', nil)`,
		`return string.format('%5.1f', 3.14159)`,
		`return string.format('%.3f', 2/3)`,
		`return string.format('%f', 1e20)`,
		`return string.format('%e', 12345.678)`,
		`return string.format('%E', 0.000123)`,
		`return string.format('%g', 100000)`,
		`return string.format('%g', 1000000)`,
		`return string.format('%g', 0.0001)`,
		`return string.format('%g', 0.00001)`,
		`return string.format('%.3g', 1234.5)`,
		`return string.format('%#g', 1)`,
		`return string.format('%#.3g', 1)`,
		`return string.format('%g', 1/0)`,
		`return string.format('%f', -1/0)`,
		`return string.format('%5.1f', 0/0)`,
		`return string.format('%c%c%c', 76, 117, 97)`,
		`return string.format('%c', 0)`,
		`return string.format('%5c|', 65)`,
		`return string.format('%q', 'he said "hi"\n\0end')`,
		`return string.format('%q', 1/3)`,
		`return string.format('%%')`,
		`return string.format('%')`,
		`return string.format('%d')`,
		`return string.format('%d', 'x')`,
		`return string.format('%d', '10')`,
		`return string.format('%y', 1)`,
		`return string.format('%123d', 1)`,
		`return string.format('%-+ #0d', 1)`,
		`return string.format('%-+ #00d', 1)`,
		`return string.format('%05s', 'ab')`,
		`return string.format('%s', string.rep('x', 150))`,
		`return string.format('%.5s', string.rep('x', 150))`,
		`return string.format('%i', 42)`,
		`return string.format('%u', -1)`,
		`return string.format('%x', -1)`,
		`return string.format('%d', 2^63)`,
		`return string.format('%d', 1e100)`,
		`return string.format('%.14g', 0.1)`,
		`return string.format('%5.2s|', 'abc')`,
		`return string.format('%-5c|', 65)`,
		`return string.format('%x', 3.7)`,
		`return ('%d items'):format(3)`,
		`return string.format('[%10.3f]', -3.14159)`,
		`return string.format('%+.2e', 12345)`,
		`return string.format('%#.0f', 3)`,
		`return string.format('%#.0e', 3)`,
		`return string.format('%G', 1e-10)`,
		`return string.format('% 5d', 42)`,
		`return string.format('%+05d', 42)`,
		`return string.format('%-05d|', 42)`,
		`return string.format('%08.3f', -3.14159)`,
		`return string.format('%.0f', 0.5)`,
		`return string.format('%.0f', 1.5)`,
		`return string.format('%.0f', 2.5)`,
		`return string.format('%.20f', 0.1)`,
		`return string.format('%.99f', 1)`,
		`return 'abc' < 'abd'`,
		`return 'a\0b' < 'a\0c'`,
		`return 'Z' < 'a'`,
		`return 'a' .. 'b' .. 'c' .. 1 .. 2`,
		`return string.format('%s', true)`,
		`return tostring('x'):upper()`,
		`return ('x'):bad()`,
		`return string.dump(print)`,
		`return string.dump()`,
		`return ("x"):rep(3, 4)`,
		`local s = "a" for i = 1, 10 do s = s .. s end return #s`,
	))
}

func TestDiffSyntax(t *testing.T) {
	rc := dialLiveRedis(t)
	e := New(Options{})
	defer e.Close()
	for _, src := range []string{
		"return (", "x = = 2", `return "abc`, "local goto = 1 return goto", "return 1 +", "if x then",
		"for i=1 do end", "for a b in c do end", "function f( 1 ) end", "local function end",
		"x", "x.y", "f() = 1", "return ...", "function f() return ... end", "break", "return 3..2",
		"return 1e", "return 0x", "return [==[ abc ]=]", "--[[ unfinished", "return [[ a [[ b ]] ]]",
		`return "\300"`, "return 'a\\\nb'", "return 'a\nb'", "return 1 @ 2", "local t = {1 2}", "return #", "x = 1 y = 2 return ~x",
		"return a.b:c", "f\n(g)()", "return\n1", "return 1 return 2", "do return 1 end return 2",
		"local a <const> = 1", "::lbl::", "goto lbl", "return function(a, ...) return ... end",
		"return function(..., a) end", "a, b.c, d[1] = 1, 2, 3", "a, f() = 1, 2",
		"return {[1]=2, x=3, 4; 5,}", "return not", "local 1 = 2", "while true do end end",
		`return "\x41"`, "return 0x1p4", "return .5", "return 5.", "return 1..2", "return a..b..c",
		"if x then\nelse\nelse end", "while x do\n\n", "function f()\n\nreturn 1", "repeat\nx = 1\n",
		"for i = 1, 2 do\n", "do\n", "local t = {\n1,\n2\n", "f(\n1,\n2\n", "return (1\n+ 2",
		"x = 'a' .. \n", "local x = 1\n\n\nlocal y = ", "return 'abc\\q'", "return '\\", "return \"a\\",
		"return [=[\nx]=]", "return [[\nx]]", "return [=", "return 1 2", "return a b", "local function f() break end",
		"for i = 1, 2 do local function f() break end end", "return function() return ... end",
		"local a, b, c = 1", "return a.b.c.d.e", "return a[b][c]", "return a:b():c()", "return {a = 1, ['b'] = 2, c}",
		"return #a.b", "return - - 1", "return not not true", "return 2^3^2", "return -2^2", "return 1 .. 2 .. 3",
		"return a and b or c", "return 1 < 2 == true", "local x <close> = 1", "x = function() end end",
		"return 'a' 'b'", "f 'a' 'b'", "f {1} {2}", "return f{1}", "a.b:c 'x'", "return nil .. 'x'",
		"\x00", "return '\x00'", "return 1\x01", "return 1 --[==[ comment ]==] + 1", "return 1 -- comment",
		"#!lua\nreturn 1", "#!lua", "#!python\nreturn 1", "#!lua flags=foo\nreturn 1", "#!lua x=1\nreturn 1",
		"#!lua flags=\nreturn 2", "#!lua \"flags=no-writes,allow-oom\"\nreturn 3", "#!lua flags=no-writes,,allow-oom\nreturn 3",
		"#!lua \"unterminated\nreturn 3", "#!\nreturn 3", "#!lua\n(", "return 0x1G", "return 1e+", "return 08",
		"return 3.14.15", "return 1ee1", "return 0xe+1", "local x = 1e309 return x", "return 'é'", "return é",
		"return $", "return `x`", "return ?", "return \\", "return a ~ b", "return a != b", "return a ~= b",
		strings.Repeat("(", 250) + "1" + strings.Repeat(")", 250),
		"return " + strings.Repeat("(", 197) + "1" + strings.Repeat(")", 197),
		"return " + strings.Repeat("(", 198) + "1" + strings.Repeat(")", 198),
		"return " + strings.Repeat("(", 199) + "1" + strings.Repeat(")", 199),
		"return " + strings.Repeat("{", 197) + strings.Repeat("}", 197),
		"return " + strings.Repeat("{", 198) + strings.Repeat("}", 198),
		strings.Repeat("do ", 197) + strings.Repeat("end ", 197),
		strings.Repeat("do ", 198) + strings.Repeat("end ", 198),
		strings.Repeat("do ", 199) + strings.Repeat("end ", 199),
		"local " + numberedNames("a", 199) + " = 1",
		"local " + numberedNames("a", 200) + " = 1",
		"local " + numberedNames("a", 201) + " = 1",
		"local function f() local " + numberedNames("a", 201) + " end",
		numberedLocals(61) + " return function() return " + numberedNames("v", 61) + " end",
		numberedLocals(60) + " return function() return " + numberedNames("v", 60) + " end",
		numberedNames("a", 200) + " = 1",
		"return " + strings.Repeat("1 + ", 300) + "1",
		"return " + strings.Repeat("'a' .. ", 300) + "'a'",
		"return " + strings.Repeat("-", 300) + "1",
	} {
		want := rc.doStr(t, "SCRIPT", "LOAD", src)
		got := e.Compile("", []byte(src))
		if got.Type == 0 { // compiled: Redis replies with the sha
			got = bulkString(SHA1Hex([]byte(src)))
		}
		if !got.RESP2().Equal(want) {
			t.Errorf("script %q\n got: %q\nwant: %q", src, replyString(got), replyString(want))
		}
	}
}

func numberedNames(prefix string, n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = prefix + strconv.Itoa(i)
	}
	return strings.Join(names, ", ")
}

func numberedLocals(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("local v" + strconv.Itoa(i) + " = " + strconv.Itoa(i) + " ")
	}
	return b.String()
}
