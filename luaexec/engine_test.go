package luaexec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// mapCaller is a tiny keyspace of strings for tests that do not need a
// real server.
type mapCaller map[string]string

func (m mapCaller) Call(args [][]byte) resp.Reply {
	cmd := strings.ToLower(string(args[0]))
	switch cmd {
	case "get":
		if len(args) != 2 {
			return resp.Err("ERR Wrong number of args calling Redis command from script")
		}
		if v, ok := m[string(args[1])]; ok {
			return resp.BulkString(v)
		}
		return resp.NilReply
	case "set":
		if len(args) < 3 {
			return resp.Err("ERR Wrong number of args calling Redis command from script")
		}
		m[string(args[1])] = string(args[2])
		return resp.OK
	case "incr":
		return resp.IntReply(1)
	case "lpush":
		return resp.Err("WRONGTYPE Operation against a key holding the wrong kind of value")
	case "lrange":
		return resp.ArrayReply(resp.BulkString("a"), resp.NilReply, resp.IntReply(3))
	case "noreply":
		return resp.Reply{Type: resp.NilArray}
	case "ping":
		return resp.StatusReply("PONG")
	}
	return resp.Err("ERR Unknown Redis command called from script")
}

func newEngine(tb testing.TB, opt Options) *Engine {
	tb.Helper()
	e := New(opt)
	tb.Cleanup(e.Close)
	return e
}

// run runs a script with KEYS and ARGV and returns the RESP2 text of its
// reply.
func run(tb testing.TB, e *Engine, script string, keysAndArgs ...string) string {
	tb.Helper()
	var keys, argv [][]byte
	target := &keys
	for _, s := range keysAndArgs {
		if s == "--" {
			target = &argv
			continue
		}
		*target = append(*target, []byte(s))
	}
	return replyString(e.Run("", []byte(script), keys, argv, mapCaller{}))
}

// These expectations were checked against redis-server 7.0.15 (the
// differential tests in diff_test.go recheck them when it is installed).
func TestConversions(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct{ script, want string }{
		{`return 1`, ":1\r\n"},
		{`return 3.99`, ":3\r\n"},
		{`return -3.99`, ":-3\r\n"},
		{`return 'x'`, "$1\r\nx\r\n"},
		{`return true`, ":1\r\n"},
		{`return false`, "$-1\r\n"},
		{`return nil`, "$-1\r\n"},
		{`return {1,2.5,"a",true,false,nil,3}`, "*5\r\n:1\r\n:2\r\n$1\r\na\r\n:1\r\n$-1\r\n"},
		{`return {ok='fine'}`, "+fine\r\n"},
		{`return {ok='a\r\nb'}`, "+a  b\r\n"},
		{`return {err='bad'}`, "-bad\r\n"},
		{`return {err='bad\r\nx'}`, "-bad  x\r\n"},
		{`return {err=5}`, "*0\r\n"},
		{`return {double=3.14}`, "$18\r\n3.1400000000000001\r\n"},
		{`return {map={a=1}}`, "*2\r\n$1\r\na\r\n:1\r\n"},
		{`return redis.status_reply('FINE')`, "+FINE\r\n"},
		{`return redis.error_reply('My Error')`, "-My Error\r\n"},
		{`return redis.error_reply('MYERR')`, "-ERR MYERR\r\n"},
		{`return redis.error_reply(1)`, "-ERR wrong number or type of arguments\r\n"},
		{`return redis.call('get', 'missing')`, "$-1\r\n"},
		{`return type(redis.call('get', 'missing'))`, "$7\r\nboolean\r\n"},
		{`return redis.call('lrange', 'l', 0, -1)`, "*3\r\n$1\r\na\r\n$-1\r\n:3\r\n"},
		{`return {redis.call('noreply')}`, "*1\r\n$-1\r\n"},
		{`return redis.call('ping')`, "+PONG\r\n"},
		{`return redis.call('ping').ok`, "$4\r\nPONG\r\n"},
		{`return redis.pcall('lpush', 'k', 'v')`, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{`return redis.pcall('lpush', 'k', 'v').err`, "$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{`redis.call('set', 'n', 5) return redis.call('get', 'n')`, "$1\r\n5\r\n"},
		{`redis.call('set', 'n', 1.5) return redis.call('get', 'n')`, "$3\r\n1.5\r\n"},
		{`redis.call('set', 'n', 0.1) return redis.call('get', 'n')`, "$19\r\n0.10000000000000001\r\n"},
		{`redis.call('set', 'n', 1e20) return redis.call('get', 'n')`, "$5\r\n1e+20\r\n"},
		{`redis.call('set', 'n', '3' + '2') return redis.call('get', 'n')`, "$1\r\n5\r\n"},
		{`return tostring(1e15)`, "$5\r\n1e+15\r\n"},
		{`return tostring(0.1)`, "$3\r\n0.1\r\n"},
		{`return 'a' .. 1.5 .. 2`, "$5\r\na1.52\r\n"},
		{`local c = '3'; local t = {} for i = c, 1, -1 do t[#t+1] = i end return t`, "*3\r\n:3\r\n:2\r\n:1\r\n"},
		{`return math.max(1, '5', 3)`, ":5\r\n"},
		{`local a, b = 1, 2 a, b = b, a return {a, b}`, "*2\r\n:2\r\n:1\r\n"},
		{`return #KEYS + #ARGV`, ":0\r\n"},
	} {
		if got := run(t, e, tc.script); got != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
}

func TestKeysAndArgv(t *testing.T) {
	e := newEngine(t, Options{})
	got := run(t, e, `return {KEYS[1], KEYS[2], ARGV[1], #KEYS, #ARGV}`, "k1", "k2", "--", "a\x00b")
	want := "*5\r\n$2\r\nk1\r\n$2\r\nk2\r\n$3\r\na\x00b\r\n:2\r\n:1\r\n"
	if got != want {
		t.Errorf("got %q want %q", got, want)
	}
	// KEYS is writable during a run, and fresh in the next one.
	if got := run(t, e, `KEYS[1] = 'x' KEYS.extra = 1 return KEYS[1]`, "k"); got != "$1\r\nx\r\n" {
		t.Errorf("got %q", got)
	}
	if got := run(t, e, `return {KEYS[1], KEYS.extra}`, "k"); got != "*1\r\n$1\r\nk\r\n" {
		t.Errorf("KEYS leaked between runs: %q", got)
	}
}

// A script's KEYS and ARGV tables and strings are reused from one run to
// the next (argTable): each run must still see exactly its own arguments,
// and whatever a run did to the tables must not show in the next.
func TestArgTablesReused(t *testing.T) {
	e := newEngine(t, Options{})
	const script = `return {#KEYS, #ARGV, table.concat(KEYS, '|'), table.concat(ARGV, '|')}`
	for _, args := range [][]string{
		{"k1", "k2", "--", "a", "b"},
		{"k1", "k2", "--", "a", "c"},
		{"k1", "--", "a"},
		{"k1", "k3", "--", "a", "b", "c"},
		{"", "--", ""},
		{"--"},
		{"k1", "k2", "--", "a", "b"},
		{"k2", "k1", "--", "b", "a"},
		{"k1", "--", "a", "b", "c"},
		{"k1", "--", "a"},
		{"k1", "--", "a", "b", "z"},
		{"k1", "--", "a", "y", "z"},
		{"k1", "--", "a", "y", "z"},
	} {
		fresh := newEngine(t, Options{})
		if got, want := run(t, e, script, args...), run(t, fresh, script, args...); got != want {
			t.Errorf("%q: got %q, a fresh engine %q", args, got, want)
		}
	}

	// Many clients, more strings than argCache has slots, some repeated,
	// some longer than it keeps.
	const join = `return table.concat(KEYS, '|') .. '/' .. table.concat(ARGV, '|')`
	for i := 0; i < 5000; i++ {
		c := strconv.Itoa(i % 1500)
		long := strings.Repeat(c, 200/len(c))
		args := []string{"lock:" + c, "chan:" + c, "--", "owner:" + strconv.Itoa(i%7), "30000", long}
		body := fmt.Sprintf("lock:%s|chan:%s/owner:%d|30000|%s", c, c, i%7, long)
		want := fmt.Sprintf("$%d\r\n%s\r\n", len(body), body)
		if got := run(t, e, join, args...); got != want {
			t.Fatalf("run %d: got %q want %q", i, got, want)
		}
	}

	const dirty = `local mode = ARGV[1]
if mode == 'set' then KEYS[1] = 'x' end
if mode == 'hash' then
  for i = 36, 1, -1 do KEYS['f' .. i] = i end
  for i = 1, 36 do KEYS['f' .. i] = nil end
end
if mode == 'int' then KEYS[500] = 1 KEYS[500] = nil end
if mode == 'meta' then setmetatable(KEYS, {__index = function() return 'm' end}) end
if mode == 'unmeta' then setmetatable(KEYS, {}) setmetatable(KEYS, nil) end
if mode == 'grow' then table.insert(KEYS, 'y') end
if mode == 'shrink' then table.remove(KEYS) end
if mode == 'hole' then KEYS[#KEYS + 1] = 'z' KEYS[#KEYS] = nil end
if mode == 'error' then KEYS.x = 1 error('stop') end
if mode ~= 'probe' then return 0 end
for i = 1, 36 do KEYS['f' .. i] = i end
KEYS[4] = 4
local order = {}
for k, v in pairs(KEYS) do order[#order + 1] = tostring(k) .. '=' .. tostring(v) end
return {tostring(getmetatable(KEYS)), KEYS.zz or 'nil', #KEYS, table.concat(order, ' ')}`
	for _, mode := range []string{"none", "set", "hash", "int", "meta", "unmeta", "grow", "shrink", "hole", "error"} {
		e := newEngine(t, Options{})
		run(t, e, dirty, "k1", "k2", "--", mode)
		got := run(t, e, dirty, "k1", "k2", "--", "probe")
		want := run(t, newEngine(t, Options{}), dirty, "k1", "k2", "--", "probe")
		if got != want {
			t.Errorf("after %s: got %q, a fresh engine %q", mode, got, want)
		}
	}
}

func TestErrorTexts(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct{ script, want string }{
		{`return foo`, "ERR user_script:1: Script attempted to access nonexistent global variable 'foo' script: 47e30a5d10d5694f99208f9adc4fe3bf2450edbd, on @user_script:1."},
		{`foo=1`, "ERR user_script:1: Attempt to modify a readonly table script: 5bddd8336e5f711bfa499383fc73c17560c6250b, on @user_script:1."},
		{`return redis.call()`, "ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1."},
		{`return redis.call("get", {})`, "ERR Lua redis lib command arguments must be strings or integers script: 7a5fe891c214c0fa43feaefd41f433083050825e, on @user_script:1."},
		{`error('x')`, "ERR user_script:1: x script: 9851144f39f03a0d597a980c5aa79c80cb696891, on @user_script:1."},
		{`error({err='X y'})`, "X y script: 4fba4bac04df521d52f90e9091a962514f12c323, on @user_script:1."},
		{`error('x', 2)`, "ERR x script: 2e5d804c0fa1174cf2f07dbb4e82f61ffed8759e, on @user_script:1."},
		{`error(nil)`, "ERR nil script: c402aa49952c86c38f35fb311d54977d08f3bf01, on @user_script:1."},
		{"\nlocal function f()\n  error('deep')\nend\nf()", "ERR user_script:3: deep script: 80e4eca8e62af5e62dcc316585b9f92b6c446697, on @user_script:3."},
		{`return redis.call('nosuch')`, "ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1."},
		{`return redis.pcall('nosuch')`, "ERR Unknown Redis command called from script"},
		{`return redis.call('get','a','b')`, "ERR Wrong number of args calling Redis command from script script: aa27915209d20b65685c6c9e00817c26a6178f92, on @user_script:1."},
		{`rawset(_G,'x',1)`, "ERR Attempt to modify a readonly table script: 90860ee597073785c7a12c667667abc4495e2c78, on @user_script:1."},
		{`string.x = 1`, "ERR user_script:1: Attempt to modify a readonly table script: c3eb0a2a15b3d4790b323c4104029c1ae425a769, on @user_script:1."},
		{`local function f() return 1 + f() end return f()`, "ERR user_script:1: stack overflow script: 2c347ae0c7feaa40c62d8208d59e954ee9ff79ff, on @user_script:1."},
		{`local x; return x.y`, "ERR user_script:1: attempt to index local 'x' (a nil value) script: 3ccf6b40b23b16076c92d22a43bc458f73ca2453, on @user_script:1."},
		{`redis.cal('get', 'x')`, "ERR user_script:1: attempt to call field 'cal' (a nil value) script: dddeba99c29679fedb77db7304512208b404159c, on @user_script:1."},
		{`return ('x'):rep('a')`, "ERR user_script:1: bad argument #1 to 'rep' (number expected, got string) script: edeaa7930cb0cd73247e412b70e0bd9bcfed6e70, on @user_script:1."},
		{`return redis.sha1hex()`, "ERR wrong number of arguments script: 3c7ce947ae74a835cc575b6ee87fb27503cb7ba4, on @user_script:1."},
		{`return redis.log(7, 'y')`, "ERR Invalid debug level. script: 3e9160a24fc84d14380c224eedf6d851686822a3, on @user_script:1."},
		{`return 'a' + 1`, ""},
		{`return table.concat({1,{}})`, "ERR user_script:1: invalid value (table) at index 2 in table for 'concat' script: c576b905aacf94473a5de32aaafdaaa8ba439152, on @user_script:1."},
		{`return #{unpack({}, 1, 7998)}`, "ERR user_script:1: too many results to unpack script: 5cba909eb1e4bc6d5a769fd34a8b4fff978b4b04, on @user_script:1."},
	} {
		r := e.Run("", []byte(tc.script), nil, nil, mapCaller{})
		if r.Type != resp.Error {
			t.Errorf("%s: not an error: %q", tc.script, replyString(r))
			continue
		}
		if tc.want != "" && r.String() != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.script, r.String(), tc.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct{ script, want string }{
		{"return (", "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"},
		{"x = = 2", "ERR Error compiling script (new function): user_script:1: unexpected symbol near '='"},
		{`return "abc`, "ERR Error compiling script (new function): user_script:1: unfinished string near '<eof>'"},
		{"if x then", "ERR Error compiling script (new function): user_script:1: 'end' expected near '<eof>'"},
		{"function f()\n\nreturn 1", "ERR Error compiling script (new function): user_script:3: 'end' expected (to close 'function' at line 1) near '<eof>'"},
		{"x", "ERR Error compiling script (new function): user_script:1: '=' expected near '<eof>'"},
		{"break", "ERR Error compiling script (new function): user_script:1: no loop to break near '<eof>'"},
		{"return 3..2", "ERR Error compiling script (new function): user_script:1: malformed number near '3..2'"},
		{"goto lbl", "ERR Error compiling script (new function): user_script:1: '=' expected near 'lbl'"},
		{"#!python\nreturn 1", "ERR Unexpected engine in script shebang: #!python"},
	} {
		if r := e.Compile("", []byte(tc.script)); r.String() != tc.want || r.Type != resp.Error {
			t.Errorf("%q\n got %q\nwant %q", tc.script, r.String(), tc.want)
		}
	}
	if r := e.Compile("", []byte("local goto = 1 return goto")); r.Type != resp.Nil {
		t.Errorf("goto as a name: %q", replyString(r))
	}
}

func TestScriptCache(t *testing.T) {
	e := newEngine(t, Options{})
	body := []byte("return ARGV[1]")
	sha := SHA1Hex(body)
	if sha != "3f5b5b4b6e0b2a4d8e6e5e8a4f1e0b8d2c6a6b6b" && len(sha) != 40 {
		t.Fatalf("sha %q", sha)
	}
	if r := e.Run(sha, nil, nil, nil, mapCaller{}); r.String() != "NOSCRIPT No matching script. Please use EVAL." {
		t.Errorf("got %q", replyString(r))
	}
	if r := e.Compile(sha, body); r.Type != resp.Nil {
		t.Fatalf("compile: %q", replyString(r))
	}
	if !e.Has(sha) {
		t.Fatal("not cached")
	}
	if r := e.Run(sha, nil, nil, [][]byte{[]byte("v")}, mapCaller{}); replyString(r) != "$1\r\nv\r\n" {
		t.Errorf("got %q", replyString(r))
	}
	e.Forget()
	if e.Has(sha) {
		t.Fatal("still cached after Forget")
	}
	// EVAL compiles and caches
	if r := e.Run("", body, nil, [][]byte{[]byte("w")}, mapCaller{}); replyString(r) != "$1\r\nw\r\n" {
		t.Errorf("got %q", replyString(r))
	}
	if !e.Has(sha) {
		t.Fatal("EVAL did not cache")
	}
}

func TestShebang(t *testing.T) {
	for _, tc := range []struct {
		body  string
		flags ScriptFlags
		err   string
	}{
		{"return 1", FlagEvalCompat, ""},
		{"#!lua\nreturn 1", 0, ""},
		{"#!lua flags=no-writes,allow-oom\nreturn 1", FlagNoWrites | FlagAllowOOM, ""},
		{"#!lua flags=allow-stale,no-cluster,allow-cross-slot-keys\nreturn 1", FlagAllowStale | FlagNoCluster | FlagAllowCrossSlot, ""},
		{"#!lua", 0, "ERR Invalid script shebang"},
		{"#!lua flags=foo\n", 0, "ERR Unexpected flag in script shebang: foo"},
		{"#!lua x=1\n", 0, "ERR Unknown lua shebang option: x=1"},
		{"#!lua \"open\n", 0, "ERR Invalid engine in script shebang"},
	} {
		flags, _, err := ParseShebang([]byte(tc.body))
		if flags != tc.flags || err != tc.err {
			t.Errorf("%q: got %v %q, want %v %q", tc.body, flags, err, tc.flags, tc.err)
		}
	}
	e := newEngine(t, Options{})
	body := []byte("#!lua flags=no-writes\nreturn foo")
	r := e.Run("", body, nil, nil, mapCaller{})
	// line numbers count the shebang line
	if !strings.Contains(r.String(), "user_script:2:") {
		t.Errorf("got %q", r.String())
	}
	if f, ok := e.Flags(SHA1Hex(body)); !ok || f != FlagNoWrites {
		t.Errorf("flags %v %v", f, ok)
	}
}

func TestMathRandom(t *testing.T) {
	// Redis 7.0 starts from the classic drand48 state and never reseeds
	// between scripts: these are the first values of a fresh redis-server.
	e := newEngine(t, Options{})
	if got := run(t, e, `return tostring(math.random())`); got != "$16\r\n0.39646477363839\r\n" {
		t.Errorf("first random: %q", got)
	}
	if got := run(t, e, `return tostring(math.random())`); got != "$16\r\n0.84048536971234\r\n" {
		t.Errorf("second random: %q", got)
	}
	if got := run(t, e, `math.randomseed(7) return tostring(math.random())`); got != "$16\r\n0.26644419658298\r\n" {
		t.Errorf("after seed: %q", got)
	}
	if got := run(t, e, `return tostring(math.random())`); got != "$16\r\n0.68203523041775\r\n" {
		t.Errorf("next script: %q", got)
	}

	// State carries the generator; another engine restored from it draws
	// the same numbers.
	st := e.State()
	e2 := newEngine(t, Options{})
	if err := e2.SetState(st); err != nil {
		t.Fatal(err)
	}
	a := run(t, e, `return {math.random(100), math.random(5, 10), tostring(math.random())}`)
	b := run(t, e2, `return {math.random(100), math.random(5, 10), tostring(math.random())}`)
	if a != b {
		t.Errorf("restored engine differs: %q vs %q", a, b)
	}
	if err := e2.SetState([]byte{9, 9}); err != ErrBadState {
		t.Errorf("bad state accepted: %v", err)
	}
}

func TestCjsonSettingsPersist(t *testing.T) {
	e := newEngine(t, Options{})
	run(t, e, `cjson.encode_number_precision(3)`)
	if got := run(t, e, `return cjson.encode(1/3)`); got != "$5\r\n0.333\r\n" {
		t.Errorf("got %q", got)
	}
	e2 := newEngine(t, Options{})
	if err := e2.SetState(e.State()); err != nil {
		t.Fatal(err)
	}
	if got := run(t, e2, `return cjson.encode(1/3)`); got != "$5\r\n0.333\r\n" {
		t.Errorf("restored: %q", got)
	}
	e.Forget() // SCRIPT FLUSH resets the Lua environment
	if got := run(t, e, `return cjson.encode(1/3)`); got != "$16\r\n0.33333333333333\r\n" {
		t.Errorf("after Forget: %q", got)
	}
}

func TestLogger(t *testing.T) {
	var got []string
	e := newEngine(t, Options{Logger: func(l LogLevel, msg string) {
		got = append(got, string(rune('0'+l))+":"+msg)
	}})
	run(t, e, `redis.log(redis.LOG_WARNING, 'hello', 1.5, {}, 'x') redis.log(redis.LOG_DEBUG, 'dbg')`)
	want := []string{"3:hello 1.5 x", "0:dbg"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q want %q", got, want)
	}
}

type panicCaller struct{}

func (panicCaller) Call(args [][]byte) resp.Reply { panic("boom") }

func TestCallerPanicIsContained(t *testing.T) {
	e := newEngine(t, Options{})
	r := e.Run("", []byte(`return redis.call('get', 'x')`), nil, nil, panicCaller{})
	if r.Type != resp.Error || !strings.Contains(r.String(), "boom") {
		t.Errorf("got %q", replyString(r))
	}
	// the engine still works
	if got := run(t, e, `return 1 + 1`); got != ":2\r\n" {
		t.Errorf("after panic: %q", got)
	}
}

func TestDeterministicTostring(t *testing.T) {
	e := newEngine(t, Options{})
	s := `local t, f = {}, function() end return {tostring(t), tostring(f), tostring(t), tostring(tostring)}`
	a := run(t, e, s)
	b := run(t, newEngine(t, Options{}), s)
	if a != b {
		t.Errorf("differs between engines: %q vs %q", a, b)
	}
	if !strings.Contains(a, "table: 0x") || !strings.Contains(a, "function: 0x") {
		t.Errorf("got %q", a)
	}
}

func TestNumberFormats(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		g14  string
		arg  string
		want bool
	}{
		{1e15, "1e+15", "1000000000000000", true},
		{0.1, "0.1", "0.10000000000000001", true},
		{math.Copysign(0, -1), "-0", "-0", true},
		{123456789012345678, "1.2345678901235e+17", "1.2345678901234568e+17", true},
		{1e-5, "1e-05", "1.0000000000000001e-05", true},
		{100, "100", "100", true},
	} {
		if g := fmtNumber(tc.f); g != tc.g14 {
			t.Errorf("fmtNumber(%v) = %q want %q", tc.f, g, tc.g14)
		}
		if a := string(fmtArg(nil, tc.f)); a != tc.arg {
			t.Errorf("fmtArg(%v) = %q want %q", tc.f, a, tc.arg)
		}
	}
	for _, tc := range []struct {
		s  string
		v  float64
		ok bool
	}{
		{"10", 10, true}, {" 10 ", 10, true}, {"0x1F", 31, true}, {"1e2", 100, true}, {"010", 10, true},
		{"1e", 0, false}, {"", 0, false}, {"abc", 0, false}, {"0x", 0, false}, {"5.", 5, true}, {".5", 0.5, true},
		{"1_000", 0, false}, {"0b1", 0, false}, {"10\x00xyz", 10, true}, {"-7", -7, true}, {"+7", 7, true},
	} {
		v, ok := str2d(tc.s)
		if ok != tc.ok || (ok && v != tc.v) {
			t.Errorf("str2d(%q) = %v %v want %v %v", tc.s, v, ok, tc.v, tc.ok)
		}
	}
}
