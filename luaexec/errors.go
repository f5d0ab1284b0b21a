package luaexec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// Errors as Lua 5.1 and Redis report them.

// typeName is Lua's name for a value's type.
func typeName(v lua.LValue) string {
	switch v.Type() {
	case lua.LTNil:
		return "nil"
	case lua.LTBool:
		return "boolean"
	case lua.LTNumber:
		return "number"
	case lua.LTString:
		return "string"
	case lua.LTTable:
		return "table"
	case lua.LTFunction:
		return "function"
	case lua.LTThread:
		return "thread"
	}
	return "userdata"
}

// argTypeName is luaL_typename for argument n ("no value" when absent).
func argTypeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return typeName(L.Get(n))
}

// where is luaL_where: the position of the function at the given level
// ("user_script:3: "), or "" when it is not a Lua function.
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
		return ""
	}
	if dbg.What == "G" || dbg.CurrentLine <= 0 {
		return ""
	}
	return dbg.Source + ":" + strconv.Itoa(dbg.CurrentLine) + ": "
}

// runError raises msg with the position of the calling Lua function
// (luaL_error, and luaG_runerror for the hidden functions that stand in for
// VM instructions).
func runError(L *lua.LState, msg string) {
	L.Error(lua.LString(where(L, 1)+msg), 0)
}

// rawError raises msg as is (lua_error from a C function).
func rawError(L *lua.LState, msg string) {
	L.Error(lua.LString(msg), 0)
}

// argError is luaL_argerror.
func argError(L *lua.LState, n int, extra string) {
	name, method := callSiteName(L)
	if method {
		n--
		if n == 0 {
			runError(L, fmt.Sprintf("calling '%s' on bad self (%s)", name, extra))
		}
	}
	runError(L, fmt.Sprintf("bad argument #%d to '%s' (%s)", n, name, extra))
}

// typeError is luaL_typerror.
func typeError(L *lua.LState, n int, expected string) {
	argError(L, n, fmt.Sprintf("%s expected, got %s", expected, argTypeName(L, n)))
}

func checkAny(L *lua.LState, n int) lua.LValue {
	if n > L.GetTop() {
		argError(L, n, "value expected")
	}
	return L.Get(n)
}

// checkString is luaL_checklstring: strings and numbers.
func checkString(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return fmtNumber(float64(v))
	}
	typeError(L, n, "string")
	return ""
}

func optString(L *lua.LState, n int, def string) string {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkString(L, n)
}

// checkNumber is luaL_checknumber: numbers and numeric strings.
func checkNumber(L *lua.LState, n int) float64 {
	v := L.Get(n)
	if f, ok := toNumber(v); ok {
		return f
	}
	typeError(L, n, "number")
	return 0
}

// checkInt is luaL_checkint: (int)luaL_checkinteger, a conversion to the
// 64-bit lua_Integer and then to int, so 2^32+3 is 3 and 2^31 is -2^31
// (not toCInt's direct 32-bit conversion, lua_number2int).
func checkInt(L *lua.LState, n int) int {
	return int(int32(toCLong(checkNumber(L, n))))
}

func optInt(L *lua.LState, n int, def int) int {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInt(L, n)
}

func checkTable(L *lua.LState, n int) *lua.LTable {
	if t, ok := L.Get(n).(*lua.LTable); ok {
		return t
	}
	typeError(L, n, "table")
	return nil
}

// --- script errors -------------------------------------------------------------

// errHandler stands in for Redis's __redis__err__handler: it turns the
// error into a table {err=..., source=..., line=...} naming the Lua function
// where the error happened (or its caller, when that was a Go function).
func (sb *sandbox) errHandlerFn(L *lua.LState) int {
	errv := L.Get(1)
	if errv == sb.fatalValue {
		L.Push(errv)
		return 1
	}
	source, line, ok := sb.e.errorPosition(L, 1)
	tbl, isTable := errv.(*lua.LTable)
	if isTable && sb.isProtected(tbl) {
		// Redis's handler fails on a read-only table and handles its own
		// error instead.
		t := L.NewTable()
		t.RawSetString("err", lua.LString("ERR err_handler_def:10: Attempt to modify a readonly table"))
		t.RawSetString("source", lua.LString("@err_handler_def"))
		t.RawSetString("line", lua.LNumber(10))
		L.Push(t)
		return 1
	}
	if !isTable {
		if s, ok := errv.(lua.LString); ok {
			errv = lua.LString(translateVMError(L, 1, string(s)))
		}
		tbl = L.NewTable()
		tbl.RawSetString("err", lua.LString("ERR "+sb.e.tostring(L, errv)))
	}
	if ok {
		tbl.RawSetString("source", lua.LString(source))
		tbl.RawSetString("line", lua.LNumber(line))
	}
	L.Push(tbl)
	return 1
}

// errorPosition finds where an error happened, seen from an error handler
// running at level 0: the function at the given level, or its caller when
// that is a Go function. It returns the raw source name and current line.
func (e *Engine) errorPosition(L *lua.LState, level int) (string, int, bool) {
	dbg, ok := L.GetStack(level)
	if !ok {
		return "", 0, false
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
		return "", 0, false
	}
	if dbg.What == "G" {
		dbg, ok = L.GetStack(level + 1)
		if !ok {
			return "", 0, false
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			return "", 0, false
		}
		if dbg.What == "G" {
			return "=[C]", -1, true
		}
	}
	return e.rawSource(dbg.Source), dbg.CurrentLine, true
}

// rawSource maps a chunk's display name back to the name Lua keeps.
func (e *Engine) rawSource(display string) string {
	if display == "user_script" || display == "user_function" {
		return "@" + display
	}
	if s, ok := e.run.sources[display]; ok {
		return s
	}
	return display
}

// errorReply turns the error a script raised into the reply of EVAL.
func (e *Engine) errorReply(sha string, err error) resp.Reply {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return resp.Err(sanitizeError("ERR Error running script " + sha + ", " + err.Error()))
	}
	obj := ae.Object
	if s, ok := obj.(lua.LString); ok {
		// The handler did not run (stack overflow): rebuild what it says.
		msg := "ERR " + string(s)
		if line, ok := leadingLine(string(s)); ok {
			msg += fmt.Sprintf(" script: %s, on @user_script:%d.", sha, line)
		}
		return resp.Err(sanitizeError(msg))
	}
	t, ok := obj.(*lua.LTable)
	if !ok {
		return resp.Err(sanitizeError(fmt.Sprintf("ERR Error running script %s, %.100s", sha, e.tostring(e.L, obj))))
	}
	msg, ok := luaToStringStrict(t.RawGetString("err"))
	if !ok {
		// Redis 7.0 crashes here (error({})); say something useful instead.
		msg = "ERR unknown error"
	}
	source, sok := luaToStringStrict(t.RawGetString("source"))
	line, lok := luaToStringStrict(t.RawGetString("line"))
	if sok && lok {
		msg += " script: " + sha + ", on " + source + ":" + line + "."
	}
	return resp.Err(sanitizeError(msg))
}

// luaToStringStrict is lua_isstring + lua_tostring: strings and numbers.
func luaToStringStrict(v lua.LValue) (string, bool) {
	switch x := v.(type) {
	case lua.LString:
		return cstr(string(x)), true
	case lua.LNumber:
		return fmtNumber(float64(x)), true
	}
	return "", false
}

// leadingLine extracts N from a message that starts "user_script:N: ".
func leadingLine(msg string) (int, bool) {
	const p = "user_script:"
	if !strings.HasPrefix(msg, p) {
		return 0, false
	}
	rest := msg[len(p):]
	i := strings.IndexByte(rest, ':')
	if i <= 0 {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil {
		return 0, false
	}
	return n, true
}

// sanitizeError does what Redis does to error texts: no leading '-' is
// kept from the format, and CR/LF become spaces.
func sanitizeError(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}
