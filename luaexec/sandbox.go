package luaexec

import (
	lua "github.com/yuin/gopher-lua"
)

// The sandbox is the global environment scripts run in, as Redis 7.0 builds
// it: the base library without I/O or loaders from files, the string, table
// and math libraries, coroutine, cjson, bit, struct, cmsgpack and redis, all
// read-only.
//
// Read-only tables. gopher-lua has no read-only flag, so every table that
// Redis protects is shown to scripts as an empty proxy whose metatable reads
// from the real table and refuses writes. Library functions that would write
// into a table (rawset, setmetatable, table.insert...) check for proxies,
// and the functions that read (rawget, next, pairs, unpack, #...) see
// through them. The real tables are never reachable from a script, so no
// script can change what the next one sees.
//
// The environment of compiled scripts is one more table: it holds the hidden
// functions that instrumentation calls (names with a NUL byte) and reads
// everything else from the globals; it refuses every assignment, so globals
// cannot be created or changed.
type sandbox struct {
	e       *Engine
	env     *lua.LTable // environment of compiled chunks
	globals *lua.LTable // the real global table
	gproxy  *lua.LTable // _G as scripts see it

	proxies  map[*lua.LTable]*lua.LTable // proxy -> real table
	reals    map[*lua.LTable]*lua.LTable // real table -> proxy
	apparent map[*lua.LTable]lua.LValue  // proxy -> what getmetatable returns

	stringMeta   *lua.LTable // what getmetatable("") returns
	roNewIndex   *lua.LFunction
	errHandler   *lua.LFunction
	translator   *lua.LFunction // pcall's error function: Lua 5.1 messages
	fatalValue   *lua.LUserData
	nextFn       *lua.LFunction
	ipairsAux    *lua.LFunction
	cjsonNull    *lua.LUserData
	cjson        *cjsonState
	coroutines   map[*lua.LState]*coroutineState
	gcPause      float64
	gcStepMul    float64
	keysArgsSize int
}

func newSandbox(e *Engine) *sandbox {
	L := e.L
	sb := &sandbox{
		e:         e,
		proxies:   make(map[*lua.LTable]*lua.LTable),
		reals:     make(map[*lua.LTable]*lua.LTable),
		apparent:  make(map[*lua.LTable]lua.LValue),
		coroutines: make(map[*lua.LState]*coroutineState),
		gcPause:   200,
		gcStepMul: 200,
	}
	sb.fatalValue = L.NewUserData()
	sb.roNewIndex = L.NewFunction(func(L *lua.LState) int {
		runError(L, "Attempt to modify a readonly table")
		return 0
	})
	sb.errHandler = L.NewFunction(sb.errHandlerFn)
	sb.translator = L.NewFunction(func(L *lua.LState) int {
		v := L.Get(1)
		if s, ok := v.(lua.LString); ok {
			v = lua.LString(translateVMError(L, 1, string(s)))
		}
		L.Push(v)
		return 1
	})

	// globals, with the metatable Redis sets: reading a missing global fails
	g := L.NewTable()
	sb.globals = g
	gmeta := L.NewTable()
	gmeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name := L.Get(2)
		if !isStrNum(name) {
			rawError(L, "Second argument to luaProtectedTableError must be a string or number")
		}
		runError(L, "Script attempted to access nonexistent global variable '"+cstr(e.tostring(L, name))+"'")
		return 0
	}))
	g.Metatable = gmeta

	sb.openBase(L, g)
	g.RawSetString("string", sb.protect(L, sb.openString(L), nil))
	g.RawSetString("table", sb.protect(L, sb.openTable(L), nil))
	g.RawSetString("math", sb.protect(L, sb.openMath(L), nil))
	g.RawSetString("coroutine", sb.protect(L, sb.openCoroutine(L), nil))
	g.RawSetString("cjson", sb.protect(L, sb.openCjson(L), nil))
	g.RawSetString("bit", sb.protect(L, openBit(L), nil))
	g.RawSetString("struct", sb.protect(L, openStruct(L), nil))
	g.RawSetString("cmsgpack", sb.protect(L, sb.openCmsgpack(L), nil))
	g.RawSetString("redis", sb.protect(L, sb.openRedis(L), nil))
	g.RawSetString("__redis__err__handler", sb.errHandler)

	// the string metatable: methods on strings
	stringReal := sb.proxies[g.RawGetString("string").(*lua.LTable)]
	smt := L.NewTable()
	smt.RawSetString("__index", stringReal)
	L.SetMetatable(lua.LString(""), smt)
	shown := L.NewTable()
	shown.RawSetString("__index", g.RawGetString("string"))
	sb.stringMeta = sb.protect(L, shown, nil)

	// _G: the metatable scripts see is read-only too
	shownMeta := L.NewTable()
	shownMeta.RawSetString("__index", gmeta.RawGetString("__index"))
	sb.gproxy = sb.protect(L, g, sb.protect(L, shownMeta, nil))
	g.RawSetString("_G", sb.gproxy)

	// the environment of compiled chunks
	env := L.NewTable()
	env.RawSetString(hidBudget, L.NewFunction(e.hiddenBudget))
	env.RawSetString(hidConcat, L.NewFunction(e.hiddenConcat))
	env.RawSetString(hidForNum, L.NewFunction(e.hiddenForNum))
	env.RawSetString(hidLen, L.NewFunction(e.hiddenLen))
	env.RawSetString(hidUnm, L.NewFunction(e.hiddenUnm))
	for op := range arithEvents {
		env.RawSetString(hidArith+string(op), L.NewFunction(e.hiddenArith(op)))
	}
	emeta := L.NewTable()
	emeta.RawSetString("__index", g)
	emeta.RawSetString("__newindex", sb.roNewIndex)
	env.Metatable = emeta
	sb.env = env
	return sb
}

// protect returns a read-only proxy of t. shownMeta is what getmetatable
// returns for the proxy (nil: no metatable).
func (sb *sandbox) protect(L *lua.LState, t *lua.LTable, shownMeta lua.LValue) *lua.LTable {
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", sb.roNewIndex)
	p.Metatable = mt
	sb.proxies[p] = t
	sb.reals[t] = p
	if shownMeta == nil {
		shownMeta = lua.LNil
	}
	sb.apparent[p] = shownMeta
	return p
}

// real returns the table behind a proxy (or t itself).
func (sb *sandbox) real(t *lua.LTable) *lua.LTable {
	if r, ok := sb.proxies[t]; ok {
		return r
	}
	return t
}

// isProtected reports whether scripts may not write into t.
func (sb *sandbox) isProtected(t *lua.LTable) bool {
	if _, ok := sb.proxies[t]; ok {
		return true
	}
	return t == sb.env
}

// length is the '#' of a table.
func (sb *sandbox) length(t *lua.LTable) int {
	return border(sb.real(t))
}

// checkWritable raises Redis's error for a write into a read-only table,
// from inside a library function (no position, as lua_rawset reports it).
func (sb *sandbox) checkWritable(L *lua.LState, t *lua.LTable) {
	if sb.isProtected(t) {
		rawError(L, "Attempt to modify a readonly table")
	}
}

// metatable returns what getmetatable shows for v (before __metatable).
func (sb *sandbox) metatable(L *lua.LState, v lua.LValue) lua.LValue {
	switch x := v.(type) {
	case *lua.LTable:
		if m, ok := sb.apparent[x]; ok {
			return m
		}
		mt, ok := x.Metatable.(*lua.LTable)
		if !ok {
			return lua.LNil
		}
		if p, ok := sb.reals[mt]; ok {
			return p
		}
		return mt
	case lua.LString:
		return sb.stringMeta
	case *lua.LUserData:
		if mt, ok := x.Metatable.(*lua.LTable); ok {
			return mt
		}
	}
	return lua.LNil
}

// setArgs sets KEYS and ARGV.
func (sb *sandbox) setArgs(L *lua.LState, keys, argv [][]byte) {
	sb.globals.RawSetString("KEYS", stringArray(L, keys))
	sb.globals.RawSetString("ARGV", stringArray(L, argv))
}

func stringArray(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for _, b := range items {
		t.Append(lua.LString(b))
	}
	return t
}

// register adds Go functions to a library table.
func register(L *lua.LState, t *lua.LTable, funcs map[string]lua.LGFunction) {
	for name, fn := range funcs {
		t.RawSetString(name, L.NewFunction(fn))
	}
}
