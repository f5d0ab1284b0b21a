package luaexec

import (
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// Scripts must not reach the host, load code from files or bytecode, or
// change anything that the next script would see.

func TestSandboxEscapes(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		script string
		want   string // substring of the reply
	}{
		{`return os.execute('id')`, "nonexistent global variable 'os'"},
		{`return io.open('/etc/passwd')`, "nonexistent global variable 'io'"},
		{`return require('os')`, "nonexistent global variable 'require'"},
		{`return package.loaded`, "nonexistent global variable 'package'"},
		{`return debug.getinfo(1)`, "nonexistent global variable 'debug'"},
		{`return dofile('/etc/passwd')`, "nonexistent global variable 'dofile'"},
		{`return loadfile('/etc/passwd')`, "nonexistent global variable 'loadfile'"},
		{`return setfenv(1, {})`, "nonexistent global variable 'setfenv'"},
		{`return getfenv(1)`, "nonexistent global variable 'getfenv'"},
		{`return newproxy(true)`, "nonexistent global variable 'newproxy'"},
		{`return print('x')`, "nonexistent global variable 'print'"},
		{`return module('x')`, "nonexistent global variable 'module'"},
		{`return {loadstring('\27Lua')}`, "*0\r\n"},
		{`return select(2, loadstring('\27LuaQ'))`, "bad binary format"},
		{`return {loadstring(string.dump(function() return 1 end))}`, "*0\r\n"},
		{`return loadstring('return os')()`, "nonexistent global variable 'os'"},
		{`return loadstring('x = 1')()`, "Attempt to modify a readonly table"},
		{`rawset(_G, 'x', 1)`, "Attempt to modify a readonly table"},
		{`rawset(string, 'x', 1)`, "Attempt to modify a readonly table"},
		{`setmetatable(_G, {})`, "Attempt to modify a readonly table"},
		{`setmetatable(string, {})`, "Attempt to modify a readonly table"},
		{`getmetatable('').__index = {}`, "Attempt to modify a readonly table"},
		{`getmetatable('').__index.upper = nil`, "Attempt to modify a readonly table"},
		{`getmetatable(_G).__index = nil`, "Attempt to modify a readonly table"},
		{`table.insert(redis, 1)`, "Attempt to modify a readonly table"},
		{`table.sort(cjson)`, "$-1\r\n"},
		{`local t = {} for i = 1, 3 do t[i] = 3 - i end table.sort(string)`, "$-1\r\n"},
		{`redis = nil`, "Attempt to modify a readonly table"},
		{`tostring = nil`, "Attempt to modify a readonly table"},
		{`redis.call = function() end`, "Attempt to modify a readonly table"},
		{`_G._G = nil`, "Attempt to modify a readonly table"},
		{`KEYS = {}`, "Attempt to modify a readonly table"},
		{`math.random = function() return 4 end`, "Attempt to modify a readonly table"},
		{`coroutine.create = nil`, "Attempt to modify a readonly table"},
		// hidden functions cannot be reached through _G
		{"for k in pairs(_G) do if k:find('\\0') then return k end end return 'none'", "$4\r\nnone\r\n"},
		{"return rawget(_G, '\\0budget')", "$-1\r\n"},
		{"return _G['\\0budget']", "nonexistent global variable"},
		{"return type(getmetatable(_G).__index)", "$8\r\nfunction\r\n"},
	} {
		got := run(t, e, tc.script)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s\n got %q\nwant it to contain %q", tc.script, got, tc.want)
		}
	}
}

func TestNothingLeaksBetweenRuns(t *testing.T) {
	e := newEngine(t, Options{})
	// Attempts to leave state behind (all fail or are local to the run).
	for _, s := range []string{
		`x = 1`,
		`_G.y = 2`,
		`string.evil = 1`,
		`getmetatable('').__index = {upper = function() return 'pwned' end}`,
		`local mt = getmetatable('') mt.__add = function() return 1 end`,
		`KEYS.z = 3`,
		`local t = setmetatable({}, {}) getmetatable(t).__index = _G`,
		`collectgarbage('setpause', 1)`,
		`coroutine.wrap(function() coroutine.yield(1) end)()`,
		`local f = loadstring('return 1') f()`,
		`redis = nil`,
		`tostring = nil`,
		`KEYS = {}`,
	} {
		e.Run("", []byte(s), nil, nil, mapCaller{})
	}
	for _, tc := range []struct{ script, want string }{
		{`return rawget(_G, 'x')`, "$-1\r\n"},
		{`return rawget(_G, 'y')`, "$-1\r\n"},
		{`return string.evil`, "$-1\r\n"},
		{`return ('a'):upper()`, "$1\r\nA\r\n"},
		{`return KEYS.z`, "$-1\r\n"},
		{`return type(redis.call)`, "$8\r\nfunction\r\n"},
		{`return tostring(1)`, "$1\r\n1\r\n"},
		{`return collectgarbage('setpause', 200)`, ":200\r\n"}, // Redis: 1, set by the run above
	} {
		if got := run(t, e, tc.script); got != tc.want {
			t.Errorf("%s: got %q want %q", tc.script, got, tc.want)
		}
	}
}

func TestProxiesAreTransparentForReading(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct{ script, want string }{
		{`return #string > 0 or #string == 0`, ":1\r\n"},
		{`local n = 0 for k, v in pairs(math) do n = n + 1 end return n`, ":31\r\n"},
		{`local n = 0 for k, v in pairs(redis) do n = n + 1 end return n`, ":23\r\n"},
		{`return rawget(string, 'rep') == string.rep`, ":1\r\n"},
		{`return next(bit) ~= nil`, ":1\r\n"},
		{`return getmetatable('').__index == string`, ":1\r\n"},
		{`return _G == _G._G`, ":1\r\n"},
		{`return _G.string == string`, ":1\r\n"},
		{`return ('%d'):format(5)`, "$1\r\n5\r\n"},
		{`return string.gsub('ab', '%w', string) == 'ab'`, ":1\r\n"},
	} {
		if got := run(t, e, tc.script); got != tc.want {
			t.Errorf("%s: got %q want %q", tc.script, got, tc.want)
		}
	}
}

func TestPcallCannotCatchFatalErrors(t *testing.T) {
	e := newEngine(t, Options{Budget: 100000, MaxStringBytes: 1 << 20})
	for _, s := range []string{
		`pcall(function() while true do end end) return 'escaped'`,
		`xpcall(function() while true do end end, function() return 'handled' end) return 'escaped'`,
		`local co = coroutine.create(function() while true do end end) coroutine.resume(co) return 'escaped'`,
		`coroutine.wrap(function() pcall(function() while true do end end) end)() return 'escaped'`,
		`pcall(string.rep, 'x', 1e7) return 'escaped'`,
		`local ok = pcall(function() local s = 'x' while true do s = s .. s end end) return 'escaped'`,
		`for i = 1, 1e9 do pcall(error, 'x') end return 'escaped'`,
	} {
		r := e.Run("", []byte(s), nil, nil, mapCaller{})
		if r.Type != resp.Error || !strings.Contains(r.String(), "exceeded") {
			t.Errorf("%s: got %q", s, replyString(r))
		}
	}
}

func TestCoroutines(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct{ script, want string }{
		{`local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
		  local _, x = coroutine.resume(co, 1)
		  local _, y = coroutine.resume(co, 10)
		  return {x, y, coroutine.status(co)}`, "*3\r\n:2\r\n:20\r\n$4\r\ndead\r\n"},
		{`local f = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
		  return {f(), f(), f()}`, "*3\r\n:1\r\n:2\r\n:3\r\n"},
		{`local co = coroutine.create(function() error('boom') end)
		  return {coroutine.resume(co)}`, "*2\r\n$-1\r\n$19\r\nuser_script:1: boom\r\n"},
		{`local co = coroutine.create(function() error('boom') end)
		  local ok, e = coroutine.resume(co) return e`, "$19\r\nuser_script:1: boom\r\n"},
		{`local co = coroutine.create(function() end) coroutine.resume(co)
		  return select(2, coroutine.resume(co))`, "$28\r\ncannot resume dead coroutine\r\n"},
		{`return coroutine.running()`, "$-1\r\n"},
	} {
		if got := run(t, e, tc.script); got != tc.want {
			t.Errorf("%s: got %q want %q", tc.script, got, tc.want)
		}
	}
}
