package luaexec

import lua "github.com/yuin/gopher-lua"

// The environments of function libraries (see function.go).
type libraryTables struct {
	loadGlobals *lua.LTable // what a library's code sees while it loads
	fnGlobals   *lua.LTable // what its functions see when they run
	// envMark is a key only library environments hold (set to true), so
	// that isProtected knows one without a set that would keep every
	// environment ever made: a library's goes with it (FUNCTION LOAD
	// REPLACE, DELETE, FLUSH, a failed load). Scripts never see the key:
	// no script reaches a library's environment.
	//
	// That is what keeps the protection: the key is a field of the
	// environment itself, so code holding one (were getfenv or _G ever to
	// reach it) would find the key with next or pairs, and env[key] = nil
	// would remove it and with it isProtected's refusal: an assignment to a
	// key the table already holds does not go through __newindex.
	envMark *lua.LUserData
}

// libraryEnv returns a new environment for a library's chunk, and its
// metatable, whose __index the load replaces once it is over. Like the
// scripts' environment it holds only the instrumentation's hidden
// functions, and refuses every assignment.
func (sb *sandbox) libraryEnv(L *lua.LState) (env, meta *lua.LTable) {
	env = L.NewTable()
	sb.env.ForEach(func(k, v lua.LValue) { env.RawSet(k, v) }) // the hidden functions
	meta = L.NewTable()
	meta.RawSetString("__index", sb.libraryLoadGlobals(L))
	meta.RawSetString("__newindex", sb.roNewIndex)
	env.Metatable = meta
	if sb.lib.envMark == nil {
		sb.lib.envMark = L.NewUserData()
	}
	env.RawSet(sb.lib.envMark, lua.LTrue)
	return env, meta
}

// libraryLoadGlobals is the globals of a library's load: redis alone,
// holding register_function, log and its constants; anything else is a
// missing global.
func (sb *sandbox) libraryLoadGlobals(L *lua.LState) *lua.LTable {
	if sb.lib.loadGlobals != nil {
		return sb.lib.loadGlobals
	}
	api := sb.newLib(L, 0, append([]libEntry{fnEntry("register_function", sb.e.registerFunction)}, sb.logEntries()...)...)
	apiMeta := L.NewTable()
	apiMeta.RawSetString("__index", sb.missing)
	api.Metatable = apiMeta
	g := L.NewTable()
	g.RawSetString("redis", sb.protect(L, api, nil))
	gm := L.NewTable()
	gm.RawSetString("__index", sb.missing)
	g.Metatable = gm
	sb.lib.loadGlobals = g
	return g
}

// functionGlobals is what a library's functions see: the scripts'
// globals, without KEYS and ARGV, and a redis without the debugger.
func (sb *sandbox) functionGlobals(L *lua.LState) *lua.LTable {
	if sb.lib.fnGlobals != nil {
		return sb.lib.fnGlobals
	}
	redis := sb.protect(L, sb.newLib(L, 0, sb.redisEntries()...), nil)
	g := L.NewTable()
	// redis is a field of its own, found without calling __index: a
	// function looks it up for every redis.call.
	g.RawSetString("redis", redis)
	gm := L.NewTable()
	gm.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		k := L.Get(2)
		if s, ok := k.(lua.LString); ok {
			switch string(s) {
			case "redis":
				L.Push(redis)
				return 1
			case "KEYS", "ARGV":
				runError(L, "Script attempted to access nonexistent global variable '"+string(s)+"'")
			}
		}
		L.Push(L.GetTable(sb.globals, k))
		return 1
	}))
	g.Metatable = gm
	sb.lib.fnGlobals = g
	return g
}

// bindLibrary stores redis.call and redis.pcall, as a library's functions
// see them, in the hidden locals of the library's chunk, once its load is
// over (see libraryHoisted). It finds them as upvalues of the functions
// the library registered and of the functions those reach through their
// upvalues; one it does not find stays nil, and the functions that read it
// look redis.call up as they would without it.
func (sb *sandbox) bindLibrary(L *lua.LState, lib *Library) {
	redis, ok := L.GetTable(sb.functionGlobals(L), lua.LString("redis")).(*lua.LTable)
	if !ok {
		return
	}
	real := sb.real(redis)
	vals := map[string]lua.LValue{
		libraryLocals[0]: real.RawGetString("call"),
		libraryLocals[1]: real.RawGetString("pcall"),
	}
	seen := map[*lua.LFunction]bool{}
	var walk func(fn *lua.LFunction)
	walk = func(fn *lua.LFunction) {
		if fn.IsG || fn.Proto == nil || seen[fn] || len(seen) >= 4096 {
			return
		}
		seen[fn] = true
		for i, uv := range fn.Upvalues {
			if i < len(fn.Proto.DbgUpvalues) && uv != nil && uv.IsClosed() {
				if v, ok := vals[fn.Proto.DbgUpvalues[i]]; ok {
					uv.SetValue(v)
					continue
				}
			}
			if uv != nil {
				if f, ok := uv.Value().(*lua.LFunction); ok {
					walk(f)
				}
			}
		}
	}
	for _, f := range lib.fns {
		walk(f.fn)
	}
}

// isLibraryEnv reports whether t is a library's environment.
func (sb *sandbox) isLibraryEnv(t *lua.LTable) bool {
	return sb.lib.envMark != nil && t.RawGet(sb.lib.envMark) == lua.LTrue
}
