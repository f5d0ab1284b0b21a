package luaexec

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// The redis table: redis.call, redis.pcall and their helpers.

// CommandChecker may be implemented by a Caller to answer
// redis.acl_check_cmd: known reports whether the command exists, allowed
// whether the current user may run it with these arguments. Without it,
// every command is reported as allowed.
type CommandChecker interface {
	CheckCommand(args [][]byte) (known, allowed bool)
}

const (
	redisVersion    = "7.0.15"
	redisVersionNum = 0x07000f
)

func (sb *sandbox) openRedis(L *lua.LState) *lua.LTable {
	return sb.newLib(L, 0, append(sb.redisEntries(),
		fnEntry("breakpoint", redisBreakpoint),
		fnEntry("debug", redisDebug),
		fnEntry("replicate_commands", redisReplicateCommands),
	)...)
}

// redisEntries are the fields of redis that scripts and functions share,
// in the order Redis registers them.
func (sb *sandbox) redisEntries() []libEntry {
	e := sb.e
	out := []libEntry{fnEntry("call", e.redisCall), fnEntry("pcall", e.redisPcall)}
	out = append(out, sb.logEntries()...)
	return append(out,
		fnEntry("setresp", e.redisSetresp),
		fnEntry("sha1hex", e.redisSha1hex),
		fnEntry("error_reply", redisErrorReply),
		fnEntry("status_reply", redisStatusReply),
		fnEntry("set_repl", e.redisSetRepl),
		numEntry("REPL_NONE", 0),
		numEntry("REPL_AOF", 1),
		numEntry("REPL_SLAVE", 2),
		numEntry("REPL_REPLICA", 2),
		numEntry("REPL_ALL", 3),
		fnEntry("acl_check_cmd", e.redisACLCheckCmd),
	)
}

// logEntries are redis.log, its levels and the version: all that a
// function library's code has at load time besides register_function.
func (sb *sandbox) logEntries() []libEntry {
	return []libEntry{
		fnEntry("log", sb.e.redisLog),
		numEntry("LOG_DEBUG", 0),
		numEntry("LOG_VERBOSE", 1),
		numEntry("LOG_NOTICE", 2),
		numEntry("LOG_WARNING", 3),
		numEntry("REDIS_VERSION_NUM", redisVersionNum),
		valEntry("REDIS_VERSION", lua.LString(redisVersion)),
	}
}

func numEntry(name string, n int) libEntry { return valEntry(name, lua.LNumber(n)) }

// raiseTable raises Redis's error table for msg (luaPushError + luaError).
func raiseTable(L *lua.LState, msg string) {
	L.Error(errorTable(L, msg), 0)
}

// callArgs holds the command of the redis.call being made. A lock script
// makes a handful of calls per run, and each would otherwise allocate the
// argument slice and the bytes anew; Caller's contract (args are valid
// only during Call) lets one buffer serve every call. Buffers larger than
// the bounds below are used once and dropped, so that one script with a
// huge argument does not pin memory for the life of the engine.
type callArgs struct {
	args  [][]byte
	bytes []byte
}

const (
	maxKeptCallArgs  = 1024
	maxKeptCallBytes = 64 << 10
)

// scriptArgs converts the arguments of redis.call into a command; it
// returns nil when an argument is not a string or a number, and reports
// the error message. The command lives in ca until the next call.
func scriptArgs(L *lua.LState, ca *callArgs) ([][]byte, string) {
	argc := L.GetTop()
	if argc == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	buf, args := ca.bytes[:0], ca.args[:0]
	for j := 1; j <= argc; j++ {
		start := len(buf)
		switch v := L.Get(j).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = fmtArg(buf, float64(v))
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
		// When append moves buf, the arguments before keep pointing into
		// the old array, which nothing writes during this call.
		args = append(args, buf[start:len(buf):len(buf)])
	}
	if cap(buf) <= maxKeptCallBytes {
		ca.bytes = buf
	}
	if cap(args) <= maxKeptCallArgs {
		ca.args = args
	}
	return args, ""
}

func (e *Engine) redisCall(L *lua.LState) int  { return e.redisGenericCall(L, true) }
func (e *Engine) redisPcall(L *lua.LState) int { return e.redisGenericCall(L, false) }

func (e *Engine) redisGenericCall(L *lua.LState, raise bool) int {
	if !e.run.active || e.run.caller == nil {
		raiseTable(L, "redis.call/pcall can only be called inside a script invocation")
	}
	args, msg := scriptArgs(L, &e.callArgs)
	if args == nil {
		t := errorTable(L, msg)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	n := 0
	for _, a := range args {
		n += len(a)
	}
	e.charge(L, costRedisCall+int64(n/bytesPerUnit))
	r := e.run.caller.Call(args)
	v, size := e.replyToLua(L, r)
	e.charge(L, int64(size/bytesPerUnit))
	if raise && r.Type == resp.Error {
		L.Error(v, 0)
	}
	L.Push(v)
	return 1
}

func (e *Engine) redisSha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseTable(L, "wrong number of arguments")
	}
	var s string
	switch v := L.Get(1).(type) {
	case lua.LString:
		s = string(v)
	case lua.LNumber:
		s = fmtNumber(float64(v))
	}
	e.charge(L, int64(len(s)/bytesPerUnit))
	sum := sha1.Sum([]byte(s))
	L.Push(lua.LString(hex.EncodeToString(sum[:])))
	return 1
}

func redisErrorReply(L *lua.LState) int {
	s, ok := L.Get(-1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	msg := cstr(string(s))
	if len(msg) == 0 || msg[0] != '-' {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg))
	return 1
}

func redisStatusReply(L *lua.LState) int {
	s, ok := L.Get(-1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

func (e *Engine) redisLog(L *lua.LState) int {
	argc := L.GetTop()
	if argc < 2 {
		raiseTable(L, "redis.log() requires two arguments or more.")
	}
	f, ok := toNumber(L.Get(1))
	if !ok {
		raiseTable(L, "First argument must be a number (log level).")
	}
	level := toCInt(f)
	if level < 0 || level > 3 {
		raiseTable(L, "Invalid debug level.")
	}
	if e.opt.Logger == nil || e.loading != nil && e.loading.again {
		return 0 // a library's chunk run again for a call logged at its load
	}
	var b []byte
	for j := 2; j <= argc; j++ {
		var s string
		switch v := L.Get(j).(type) {
		case lua.LString:
			s = string(v)
		case lua.LNumber:
			s = fmtNumber(float64(v))
		default:
			continue
		}
		if j != 2 {
			b = append(b, ' ')
		}
		b = append(b, s...)
	}
	e.charge(L, int64(len(b)/bytesPerUnit))
	e.opt.Logger(LogLevel(level), string(b))
	return 0
}

func (e *Engine) redisSetresp(L *lua.LState) int {
	if !e.run.active {
		raiseTable(L, "redis.setresp can only be called inside a script invocation")
	}
	if L.GetTop() != 1 {
		raiseTable(L, "redis.setresp() requires one argument.")
	}
	f, _ := toNumber(L.Get(1))
	switch v := toCInt(f); v {
	case 2, 3:
		e.run.resp = int(v)
		return 0
	}
	raiseTable(L, "RESP version must be 2 or 3.")
	return 0
}

func (e *Engine) redisSetRepl(L *lua.LState) int {
	if !e.run.active {
		raiseTable(L, "redis.set_repl can only be called inside a script invocation")
	}
	if L.GetTop() != 1 {
		raiseTable(L, "redis.set_repl() requires two arguments.")
	}
	f, _ := toNumber(L.Get(-1))
	if toCInt(f)&^3 != 0 {
		raiseTable(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

func redisReplicateCommands(L *lua.LState) int {
	L.Push(lua.LTrue)
	return 1
}

func redisBreakpoint(L *lua.LState) int {
	L.Push(lua.LFalse)
	return 1
}

func redisDebug(L *lua.LState) int { return 0 }

func (e *Engine) redisACLCheckCmd(L *lua.LState) int {
	if !e.run.active {
		raiseTable(L, "redis.acl_check_cmd can only be called inside a script invocation")
	}
	args, msg := scriptArgs(L, &e.callArgs)
	if args == nil {
		raiseTable(L, msg)
	}
	allowed := true
	if cc, ok := e.run.caller.(CommandChecker); ok {
		known, ok := cc.CheckCommand(args)
		if !known {
			raiseTable(L, "Invalid command passed to redis.acl_check_cmd()")
		}
		allowed = ok
	}
	L.Push(lua.LBool(allowed))
	return 1
}
