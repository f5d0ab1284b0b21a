package luaexec

import "testing"

// Scripts in the style of the lock clients deadbolt serves (written for
// these tests after the behaviour CLIENTS.md describes), run against a real
// redis-server and through the Engine.

func TestDiffLockClients(t *testing.T) {
	lockKeys := []string{"{lock}"}
	owner := "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
	cases := []diffCase{
		{script: lockScript, keys: lockKeys, args: []string{"30000", owner}},
		{script: lockScript, keys: lockKeys, args: []string{"30000", owner}, setup: [][]string{{"hset", "{lock}", "other:1", "1"}}},
		{script: lockScript, keys: lockKeys, args: []string{"30000", owner}, setup: [][]string{{"hset", "{lock}", owner, "2"}}},
		{script: unlockScript,
			keys:  []string{"{lock}", "redisson_lock__channel:{lock}", "redisson_unlock_latch:{lock}:req1"},
			args:  []string{"0", "30000", owner, "PUBLISH", "13500"},
			setup: [][]string{{"hset", "{lock}", owner, "1"}}},
		{script: unlockScript,
			keys:  []string{"{lock}", "redisson_lock__channel:{lock}", "redisson_unlock_latch:{lock}:req1"},
			args:  []string{"0", "30000", owner, "PUBLISH", "13500"},
			setup: [][]string{{"hset", "{lock}", owner, "3"}}},
		{script: unlockScript,
			keys:  []string{"{lock}", "redisson_lock__channel:{lock}", "redisson_unlock_latch:{lock}:req1"},
			args:  []string{"0", "30000", owner, "PUBLISH", "13500"},
			setup: [][]string{{"set", "redisson_unlock_latch:{lock}:req1", "1"}}},
		// reentrant unlock with a string counter as for-loop start
		{script: `local counter = redis.call('hget', KEYS[1], ARGV[1])
local t = {}
for c = counter, 1, -1 do t[#t+1] = c end
return t`, keys: lockKeys, args: []string{owner}, setup: [][]string{{"hset", "{lock}", owner, "3"}}},
		// value + ARGV arithmetic written back
		{script: `local value = redis.call('get', KEYS[1])
redis.call('set', KEYS[1], value + ARGV[1])
return redis.call('get', KEYS[1])`, keys: []string{"sem"}, args: []string{"2"}, setup: [][]string{{"set", "sem", "3"}}},
		{script: `local value = redis.call('get', KEYS[1])
redis.call('set', KEYS[1], value + ARGV[1])
return redis.call('get', KEYS[1])`, keys: []string{"sem"}, args: []string{"0.5"}, setup: [][]string{{"set", "sem", "3"}}},
		// semaphore acquire
		{script: `local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    local val = redis.call('decrby', KEYS[1], ARGV[1]);
    return 1;
end;
return 0;`, keys: []string{"sem"}, args: []string{"2"}, setup: [][]string{{"set", "sem", "5"}}},
		// permit-expirable semaphore: zset scores compared as strings
		{script: `local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[4], 'limit', 0, ARGV[1]);
if #expiredIds > 0 then
    redis.call('zrem', KEYS[2], unpack(expiredIds));
    local value = redis.call('incrby', KEYS[1], #expiredIds);
end;
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    redis.call('decrby', KEYS[1], ARGV[1]);
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[3]);
    local ttl = redis.call('pttl', KEYS[1]);
    if ttl > 0 then redis.call('pexpire', KEYS[2], ttl); end;
    return nil;
end;
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if v[1] ~= nil and v[2] ~= ARGV[5] then
    return v[2];
end
return nil;`, keys: []string{"sem", "{sem}:timeout"}, args: []string{"1", "1795342092073", "id1", "1700000000000", "922337203685477"},
			setup: [][]string{{"set", "sem", "0"}, {"zadd", "{sem}:timeout", "1795342092073", "old"}}},
		// read-write lock
		{script: `local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
    redis.call('hset', KEYS[1], 'mode', 'read');
    redis.call('hset', KEYS[1], ARGV[2], 1);
    redis.call('set', KEYS[2] .. ':1', 1);
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1);
    local key = KEYS[2] .. ':' .. ind;
    redis.call('set', key, 1);
    redis.call('pexpire', key, ARGV[1]);
    local remainTime = redis.call('pttl', KEYS[1]);
    redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1]));
    return nil;
end;
return redis.call('pttl', KEYS[1]);`, keys: []string{"rw", "{rw}:" + owner + ":rwlock_timeout"}, args: []string{"30000", owner, owner + ":write"},
			setup: [][]string{{"hset", "rw", "mode", "read", "x:1", "1"}, {"pexpire", "rw", "10000"}}},
		// fenced lock
		{script: `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
    redis.call('incr', KEYS[2]);
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return {-1, redis.call('get', KEYS[2])};
end;
return {redis.call('pttl', KEYS[1]), -1};`, keys: []string{"{f}", "redisson_lock_token:{f}"}, args: []string{"30000", owner}},
		// count-down latch
		{script: `local v = redis.call('decr', KEYS[1]);
if v <= 0 then redis.call('del', KEYS[1]) end;
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;`, keys: []string{"latch", "redisson_countdownlatch__channel__{latch}"}, args: []string{"0", "publish"},
			setup: [][]string{{"set", "latch", "1"}}},
		// redsync / redislock compare-and-delete, compare-and-pexpire
		{script: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`,
			keys: []string{"mutex"}, args: []string{"tok"}, setup: [][]string{{"set", "mutex", "tok"}}},
		{script: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`,
			keys: []string{"mutex"}, args: []string{"tok", "5000"}, setup: [][]string{{"set", "mutex", "tok"}}},
		// redis-py Lock release / extend / reacquire
		{script: `local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1`, keys: []string{"pylock"}, args: []string{"t1"}, setup: [][]string{{"set", "pylock", "t2"}}},
		{script: `local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
local expiration = redis.call('pttl', KEYS[1])
if not expiration then
    expiration = 0
end
if expiration < 0 then
    return 0
end
local newttl = ARGV[2]
if ARGV[3] == "0" then
    newttl = ARGV[2] + expiration
end
redis.call('pexpire', KEYS[1], newttl)
return 1`, keys: []string{"pylock"}, args: []string{"t1", "1000", "0"}, setup: [][]string{{"set", "pylock", "t1", "px", "5000"}}},
		// non-reentrant lock refusing with error_reply
		{script: `if redis.call('exists', KEYS[1]) == 1 then
    return redis.error_reply('ERR lock is held by another owner')
end
redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
return nil`, keys: []string{"nr"}, args: []string{"o", "1000"}, setup: [][]string{{"set", "nr", "x"}}},
		// watchdog renewal of many locks in one call
		{script: `local result = {}
for i = 1, #KEYS do
    if redis.call('hexists', KEYS[i], ARGV[2]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        table.insert(result, 1)
    else
        table.insert(result, 0)
    end
end
return result`, keys: []string{"a", "b", "c"}, args: []string{"30000", owner},
			setup: [][]string{{"hset", "a", owner, "1"}, {"hset", "c", owner, "1"}}},
		// fair lock queue with string scores
		{script: `while true do
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0);
    if firstThreadId2 == false then break; end;
    local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));
    if timeout <= tonumber(ARGV[3]) then
        redis.call('zrem', KEYS[3], firstThreadId2);
        redis.call('lpop', KEYS[2]);
    else
        break;
    end;
end;
return {redis.call('llen', KEYS[2]), redis.call('zcard', KEYS[3])}`, keys: []string{"{fair}", "redisson_lock_queue:{fair}", "redisson_lock_timeout:{fair}"},
			args:  []string{"30000", owner, "1700000005000"},
			setup: [][]string{{"rpush", "redisson_lock_queue:{fair}", "w1", "w2", "w3"}, {"zadd", "redisson_lock_timeout:{fair}", "1700000001000", "w1", "1700000004000", "w2", "1700000009000", "w3"}}},
	}
	runDiff(t, cases)
}

func TestDiffErrorLines(t *testing.T) {
	runDiff(t, scripts(
		"local a = 1\nlocal b = nil\nreturn a +\n  b",
		"local s = 'x' ..\n  nil",
		"local t = {}\nreturn t\n.x\n.y",
		"local function f()\n  return redis.call('nosuch')\nend\nreturn f()",
		"local function f()\n  return redis.call('nosuch')\nend\nlocal r = f()\nreturn r",
		"local ok, e = pcall(function()\n  error('inner')\nend)\nerror(e)",
		"local ok, e = pcall(function()\n  error({err='tbl'})\nend)\nerror(e)",
		"local ok, e = pcall(function()\n  local x = nil\n  return x.f\nend)\nreturn e",
		"local ok, e = xpcall(function()\n  local x = nil\n  return x.f\nend, function(m) return 'handled: ' .. m end)\nreturn e",
		"local ok, e = xpcall(function() error({code=1}) end, function(m) return type(m) end)\nreturn e",
		"return xpcall(function() return 1, 2 end, print)",
		"local t = {}\nt[nil] = 1",
		"local t = {}\nt[0/0] = 1",
		"string.rep('x', -1):byte(1)",
		"return ('x'):rep(2):upper():lower():len()",
		"local t = {a={b={c=1}}} return t.a.b.c",
		"local t = {a={}} return t.a.b.c",
		"local up = nil\nlocal function f() return up.x end\nreturn f()",
		"local up = nil\nlocal function f() return up() end\nreturn f()",
		"local t = {}\nreturn t:nomethod()",
		"local t = {}\nreturn t['key with space']()",
		"local t = {}\nlocal k = 'dyn'\nreturn t[k]()",
		"return ({})[1]()",
		"return (nil)()",
		"local a, b = 1\nreturn b.c",
		"for i, v in ipairs(nil) do end",
		"for k, v in pairs(nil) do end",
		"for k, v in 5 do end",
		"local f = 5 f()",
		"return #5",
		"return -{} ",
		"return {} .. 'x'",
		"return 1 < 'x'",
		"return {} <= {}",
		"return nil > 1",
		"return math.floor()",
		"return string.format('%d', {})",
		"return tostring()",
		"return type()",
		"return setmetatable()",
		"return getmetatable()",
		"return rawget()",
		"return rawget({})",
		"return rawequal(1)",
		"return next()",
		"return ipairs()",
		"return pairs()",
		"return unpack()",
		"return select()",
		"return error()",
		"return pcall()",
		"return xpcall(print)",
		"return loadstring()",
		"return load()",
		"return load(5)",
		"return string.byte()",
		"return string.char('x')",
		"return string.find()",
		"return string.gmatch()",
		"return string.gsub('x')",
		"return string.gsub('x', 'x')",
		"return table.concat()",
		"return table.concat({}, {})",
		"return table.insert()",
		"return table.insert({})",
		"return table.remove()",
		"return table.sort({3,2,1}, 5)",
		"return table.getn()",
		"return math.max('x')",
		"return math.random('x')",
		"return math.ldexp(1)",
		"return coroutine.create(5)",
		"return coroutine.resume(5)",
		"return coroutine.status()",
		"return coroutine.wrap(print)",
		"return bit.band('x')",
		"return struct.pack()",
		"return struct.unpack('b')",
		"return cjson.encode({}, 1)",
		"return cmsgpack.unpack()",
		"return redis.sha1hex({})",
		"return redis.status_reply({})",
		"return redis.acl_check_cmd()",
		"return redis.acl_check_cmd('nosuchcmd')",
		"return redis.acl_check_cmd('get', 'k')",
		"return redis.setresp()",
	))
}

func TestDiffSemantics(t *testing.T) {
	runDiff(t, scripts(
		`return {2^3^2, -2^2, 1 .. 2 .. 3, tostring(not nil == true), tostring(1 < 2 == true), 7 % 3 * 2, 2 + 3 * 4 ^ 2 / 8}`,
		`local o = {n = 5} function o:get(a) return self.n + a end return o:get(2)`,
		`local o = {} function o.f(a, b) return a .. b end return o.f('x', 'y')`,
		`local a = {b = {}} function a.b.c() return 'deep' end return a.b.c()`,
		`local function f(...) local function g() return arg end return select('#', ...), type(arg) end return {f(1, 2)}`,
		`local fs = {} for i = 1, 3 do fs[i] = function() return i end end return {fs[1](), fs[2](), fs[3]()}`,
		`local fs = {} local i = 1 while i <= 3 do local j = i fs[i] = function() return j end i = i + 1 end return {fs[1](), fs[3]()}`,
		`local function counter() local n = 0 return function() n = n + 1 return n end end local c = counter() c() c() return c()`,
		`local t = {f = function(...) return ... end} return {t.f(1, 2, 3)}`,
		`local t = {} t.x, t.y = (function() return 1, 2 end)() return {t.x, t.y}`,
		`local a, b, c = 1 return {a, b == nil, c == nil}`,
		`local x = 1 do local x = 2 end return x`,
		`local s = [==[
line1
]] still ]=] inside]==] return s`,
		`return "tab\tnew\nquote\"back\\nul\0end"`,
		`return '\65\066\0671'`,
		`return #"\z"`,
		`return 0x10 + 0XfF + 1e2 + .5 + 3.`,
		`return 1e308 * 10 == math.huge`,
		`return -(-2^63) == 2^63`,
		`return 10 / 4`,
		`return 9007199254740993`,
		`return tostring(9007199254740993)`,
		`return 3 == 3.0`,
		`return "10" == 10`,
		`return 1 and 2 or 3`,
		`return nil and 1 or false`,
		`return false or nil`,
		`local t = {} t[1.0] = 'a' return t[1]`,
		`local t = {[1]='a', [1.5]='b'} return {t[1], t[1.5]}`,
		`local t = setmetatable({}, {__index = function(t, k) return k * 2 end}) return t[21]`,
		`local t = setmetatable({}, {__newindex = function(t, k, v) rawset(t, k, v * 2) end}) t.x = 5 return t.x`,
		`local mt = {__eq = function() return true end} local a, b = setmetatable({}, mt), setmetatable({}, mt) return a == b`,
		`local mt = {__le = function() return false end} local a, b = setmetatable({}, mt), setmetatable({}, mt) return a <= b`,
		`local t = setmetatable({}, {__mod = function() return 'm' end, __pow = function() return 'p' end}) return {t % 1, t ^ 2}`,
		`local t = setmetatable({}, {__div = function(a, b) return 'd' end}) return 1 / t`,
		`return select(-2, 'a', 'b', 'c')`,
		`return {select(2, 'a', 'b', 'c')}`,
		`local function v(...) return ... end return {v()}`,
		`local function v(...) return (...) end return {v(1, 2)}`,
		`return {(...)}`,
		`goto = 1`,
		`local t = {} for i = 1, 3 do t[#t + 1] = i end t[#t] = nil return #t`,
		`local t = {n = 0} for i = 1, 5 do t.n = t.n + i end return t.n`,
		`local s = 0 for i = 10, 1, -2.5 do s = s + i end return s`,
		`local s = 0 for i = 1, 0 do s = s + 1 end return s`,
		`local n = 0 for i = 1, 3 do for j = 1, 3 do if j == 2 then break end n = n + 1 end end return n`,
		`local i = 1 repeat i = i * 2 until i > 100 return i`,
		`return string.format('%s %d %s', 'a', 1, 'b'):upper()`,
		`local t = {'c', 'a', 'b'} table.sort(t) return table.concat(t)`,
		`return tostring(1e300 * 1e300)`,
		`return math.floor(-3.5)`,
		`return math.fmod(-7, 3)`,
		`return tostring(2^53 + 1)`,
		`return ('abc'):sub(2)`,
		`return (('a'):rep(3)):len()`,
	))
}
