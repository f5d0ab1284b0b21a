package luaexec

import (
	"strconv"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// Function libraries (FUNCTION LOAD, FCALL), as Redis 7.0 runs them.
//
// A library's code runs once when it is loaded, in an environment that
// holds nothing but redis, and a redis that holds nothing but
// register_function, log and its constants: reading anything else fails
// as a missing global, writing fails as a read-only table. The functions
// it registers are closures over that environment; once the load is over
// the environment reads from the globals scripts have (without KEYS and
// ARGV), and its redis is the one scripts have (without the debugger's
// functions). A function gets its keys and arguments as parameters.
//
// The engine keeps what a load made (the closures) by library name; the
// state machine keeps the code, and loads it again when the engine lost
// it (a new Lua state, a restored snapshot).

// FunctionInfo describes one registered function.
type FunctionInfo struct {
	Name        string
	Description string // "" when none was given
	HasDesc     bool
	Flags       []string // as given: no-writes, allow-oom, allow-stale, no-cluster, allow-cross-slot-keys
}

// Library is a loaded library: its metadata and its functions.
type Library struct {
	Name      string
	Functions []FunctionInfo // in registration order

	fns     map[string]*libFunction
	gen     int
	code    string // what was loaded: a library of that name and other code is another library
	matched *byte  // the code HasLibrary last found equal to code

	proto     *lua.FunctionProto // the compiled chunk
	cost      int64              // the work units its load starts with
	env, meta *lua.LTable        // the chunk's environment and its metatable
	stateful  bool               // one of its functions may change what a later call sees (function_state.go)
}

// functionFlags are the flags register_function accepts.
var functionFlags = map[string]bool{
	"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true,
}

// ParseLibraryMeta reads a library's first line, "#!<engine> name=<name>",
// and returns the library name or Redis's error for it.
func ParseLibraryMeta(code []byte) (name, errMsg string) {
	if len(code) < 2 || code[0] != '#' || code[1] != '!' {
		return "", "ERR Missing library metadata"
	}
	line := string(code[2:])
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	parts := strings.Split(line, " ")
	engine := parts[0]
	named := false
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		if v, ok := strings.CutPrefix(p, "name="); ok {
			if named {
				return "", "ERR Invalid metadata value, name argument was given multiple times"
			}
			name, named = v, true
			continue
		}
		return "", "ERR Invalid metadata value given: " + p
	}
	if !named {
		return "", "ERR Library name was not given"
	}
	if !strings.EqualFold(engine, "lua") {
		return "", "ERR Engine '" + engine + "' not found"
	}
	if !validFunctionName(name) {
		return "", msgBadLibraryName
	}
	return name, ""
}

const msgBadLibraryName = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

func validFunctionName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// loading is the library being loaded: what register_function adds to.
type loading struct {
	lib   *Library
	again bool // a fresh copy of a kept library, for one call: redis.log is quiet
}

// LoadLibrary runs a library's code (its metadata already checked by
// ParseLibraryMeta) and returns what it registered, or Redis's error
// reply. Nothing is kept: Keep keeps a library.
func (e *Engine) LoadLibrary(name string, code []byte) (*Library, resp.Reply) {
	if e.run.active {
		return nil, resp.Err("ERR This Redis command is not allowed from script")
	}
	src := []byte(string(code))
	for i := 0; i < len(src) && src[i] != '\n'; i++ {
		src[i] = ' ' // the metadata line stays a (blank) line 1
	}
	p, msg := parseChunk(string(src), chunkID("@user_function", 80))
	if msg != "" {
		return nil, resp.Err("ERR Error compiling function: " + msg)
	}
	stmts, cost := instrumentLibrary(p, !e.slowLibs)
	proto, err := lua.Compile(stmts, chunkID("@user_function", 60))
	if err != nil {
		// the hidden locals take registers: try again without them
		p, _ = parseChunk(string(src), chunkID("@user_function", 80))
		stmts, cost = instrumentLibrary(p, false)
		proto, err = lua.Compile(stmts, chunkID("@user_function", 60))
	}
	if err != nil {
		return nil, resp.Err("ERR Error compiling function: user_function:" + strconv.Itoa(compileErrLine(err)) + ": function or expression too complex")
	}
	proto.IsVarArg &^= lua.VarArgNeedsArg | lua.VarArgHasArg

	lib := &Library{Name: name, fns: map[string]*libFunction{}, gen: e.gen, code: string(code),
		proto: proto, cost: cost}
	lib.env, lib.meta = e.sb.libraryEnv(e.L)
	if r := e.runLibrary(lib, lib); r.IsError() {
		return nil, r
	}
	if len(lib.Functions) == 0 {
		return nil, resp.Err("ERR No functions registered")
	}
	e.sb.bindLibrary(e.L, lib)
	e.sb.markStateful(lib, proto)
	return lib, resp.NilReply
}

// runLibrary runs lib's chunk, registering its functions into into: lib
// itself at FUNCTION LOAD, a fresh copy for each call of a library that
// keeps state (function_state.go). The environment is lib's: it cannot be
// written, so one serves every run of the chunk.
func (e *Engine) runLibrary(lib, into *Library) resp.Reply {
	L := e.L
	sb := e.sb
	lib.meta.RawSetString("__index", sb.libraryLoadGlobals(L))
	fn := L.NewFunctionFromProto(lib.proto)
	fn.Env = lib.env
	e.loading = &loading{lib: into, again: into != lib}
	defer func() { e.loading = nil }()

	e.run.begin(e, lib.Name, nil, lib.cost)
	L.SetTop(0)
	L.Push(fn)
	callErr := L.PCall(0, 0, sb.errHandler)
	e.run.active = false
	e.run.end()
	lib.meta.RawSetString("__index", sb.functionGlobals(L))
	switch {
	case e.run.fatal != nil:
		L.SetTop(0)
		return resp.Err("ERR Error registering functions: ERR FUNCTION LOAD timeout")
	case callErr != nil:
		L.SetTop(0)
		if ae, ok := callErr.(*lua.ApiError); ok && ae.Type == lua.ApiErrorPanic {
			defer e.newState()
			return resp.Err("ERR internal error loading a library: " + ae.Object.String())
		}
		return resp.Err("ERR Error registering functions: " + e.loadErrorText(callErr))
	}
	return resp.NilReply
}

// loadErrorText is an error raised while a library loaded, as Redis puts
// it after "Error registering functions: " (without the script part).
func (e *Engine) loadErrorText(err error) string {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return "ERR " + err.Error()
	}
	if t, ok := ae.Object.(*lua.LTable); ok {
		if msg, ok := luaToStringStrict(t.RawGetString("err")); ok {
			return sanitizeError(msg)
		}
	}
	return sanitizeError("ERR " + e.tostring(e.L, ae.Object))
}

// Keep stores a loaded library's functions in the engine under its name,
// replacing any library of that name.
func (e *Engine) Keep(lib *Library) {
	if e.libs == nil {
		e.libs = map[string]*Library{}
	}
	e.libs[lib.Name] = lib
}

// Drop forgets a library (FUNCTION DELETE), or every library when name is
// "" (FUNCTION FLUSH).
func (e *Engine) Drop(name string) {
	if name == "" {
		e.libs = nil
		return
	}
	delete(e.libs, name)
}

// HasLibrary reports whether the engine holds the functions of the
// library of that name and code, for its current Lua state. FCALL asks it
// on every call: it remembers where the code it last found equal is, and
// does not compare again when asked with the same bytes at the same
// address, so a caller must not change bytes it passed here.
func (e *Engine) HasLibrary(name string, code []byte) bool {
	lib, ok := e.libs[name]
	if !ok || lib.gen != e.gen || len(lib.code) != len(code) {
		return false
	}
	if len(code) == 0 || lib.matched == &code[0] {
		return true
	}
	if lib.code != string(code) {
		return false
	}
	lib.matched = &code[0]
	return true
}

// CallFunction runs a function of a kept library with keys and args, as
// FCALL does; readOnly is FCALL_RO's or the function's no-writes (the
// caller refuses writes then).
func (e *Engine) CallFunction(libName, fname string, keys, args [][]byte, c Caller) (reply resp.Reply) {
	return e.callFunction(libName, fname, keys, args, c, false)
}

// CallFunctionApart runs a function as CallFunction does, but always in a
// fresh copy of its library (function_state.go), whatever markStateful
// decided: for a call made outside the log on one node (a no-writes
// function while writes are refused, fsm.ReadWritesRefused). The kept
// closures, and the tables they reach, are not even handed to the call,
// so it cannot change what a later call sees on this node, even if the
// check that lets a function keep its closures missed a way to change
// them. The copy is built as a load builds it, so the call answers as it
// would from the kept closures (which are as the load left them, the
// check says).
func (e *Engine) CallFunctionApart(libName, fname string, keys, args [][]byte, c Caller) (reply resp.Reply) {
	return e.callFunction(libName, fname, keys, args, c, true)
}

func (e *Engine) callFunction(libName, fname string, keys, args [][]byte, c Caller, apart bool) (reply resp.Reply) {
	if e.run.active {
		return resp.Err("ERR This Redis command is not allowed from script")
	}
	lib, ok := e.libs[libName]
	if !ok || lib.gen != e.gen {
		return resp.Err("ERR Function not found")
	}
	f := lib.fns[fname]
	if f == nil {
		return resp.Err("ERR Function not found")
	}
	defer func() {
		if r := recover(); r != nil {
			e.newState()
			reply = resp.Err("ERR internal error running a function")
		}
	}()
	if f.fresh || apart {
		var r resp.Reply
		if f, r = e.freshFunction(lib, fname); f == nil {
			return r
		}
	}
	L := e.L
	e.run.begin(e, fname, c, costFuncBase)
	defer e.run.end()
	L.SetTop(0)
	kt, at := f.tables(L, e.sb, keys, args)
	L.Push(f.fn)
	L.Push(kt)
	L.Push(at)
	return e.result(fname, L.PCall(2, 1, e.sb.errHandler))
}

// registerFunction is redis.register_function during a library's load.
func (e *Engine) registerFunction(L *lua.LState) int {
	ld := e.loading
	if ld == nil || !e.run.active {
		raiseTable(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	var info FunctionInfo
	var callback *lua.LFunction
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raiseTable(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		t = e.sb.real(t)
		var msg string
		t.ForEach(func(k, v lua.LValue) {
			if msg != "" {
				return
			}
			ks, ok := k.(lua.LString)
			if !ok {
				msg = "named argument key given to redis.register_function is not a string"
				return
			}
			switch string(ks) {
			case "function_name":
				s, ok := v.(lua.LString)
				if !ok {
					msg = "function_name argument given to redis.register_function must be a string"
					return
				}
				info.Name = string(s)
			case "description":
				s, ok := v.(lua.LString)
				if !ok {
					msg = "description argument given to redis.register_function must be a string"
					return
				}
				info.Description, info.HasDesc = string(s), true
			case "callback":
				f, ok := v.(*lua.LFunction)
				if !ok {
					msg = "callback argument given to redis.register_function must be a function"
					return
				}
				callback = f
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					msg = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				ft = e.sb.real(ft)
				for j := 1; j <= ft.Len(); j++ {
					s, ok := ft.RawGetInt(j).(lua.LString)
					if !ok || !functionFlags[string(s)] {
						msg = "unknown flag given"
						return
					}
					info.Flags = append(info.Flags, string(s))
				}
			default:
				msg = "unknown argument given to redis.register_function"
			}
		})
		if msg != "" {
			raiseTable(L, msg)
		}
		if info.Name == "" {
			raiseTable(L, "redis.register_function must get a function name argument")
		}
		if callback == nil {
			raiseTable(L, "redis.register_function must get a callback argument")
		}
	case 2:
		name, ok := L.Get(1).(lua.LString)
		if !ok {
			if n, isNum := L.Get(1).(lua.LNumber); isNum {
				name = lua.LString(fmtNumber(float64(n)))
			} else {
				raiseTable(L, "first argument to redis.register_function must be a string")
			}
		}
		f, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raiseTable(L, "second argument to redis.register_function must be a function")
		}
		info.Name, callback = string(name), f
	default:
		raiseTable(L, "wrong number of arguments to redis.register_function")
	}
	if !validFunctionName(info.Name) {
		raiseTable(L, strings.TrimPrefix(msgBadLibraryName, "ERR "))
	}
	if _, dup := ld.lib.fns[info.Name]; dup {
		raiseTable(L, "Function already exists in the library")
	}
	ld.lib.fns[info.Name] = newLibFunction(callback, !ld.again)
	ld.lib.Functions = append(ld.lib.Functions, info)
	return 0
}
