package luaexec

import (
	"hash/maphash"
	"reflect"
	"strings"
	"unsafe"

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
// The environment of compiled chunks is one more table: it holds only the
// hidden functions that instrumentation calls (names with a NUL byte, which
// no Lua identifier can spell) and reads everything else from the globals.
// It refuses every assignment, so globals cannot be created or changed.
type sandbox struct {
	e       *Engine
	env     *lua.LTable // environment of compiled chunks
	globals *lua.LTable // the real global table
	gproxy  *lua.LTable // _G as scripts see it

	proxies  map[*lua.LTable]*lua.LTable // proxy -> real table
	reals    map[*lua.LTable]*lua.LTable // real table -> proxy
	apparent map[*lua.LTable]lua.LValue  // proxy -> what getmetatable returns
	builds   map[*lua.LTable]*tableBuild // how library tables were filled

	stringMeta *lua.LTable    // what getmetatable("") returns
	roNewIndex *lua.LFunction // __newindex of read-only tables
	errHandler *lua.LFunction // __redis__err__handler
	translator *lua.LFunction // pcall's error function: Lua 5.1 messages
	fatalValue *lua.LUserData // raised to stop a script (budget, size)
	nextFn     *lua.LFunction
	ipairsAux  *lua.LFunction
	cjsonNull  *lua.LUserData

	keys, argv *lua.LTable // the tables KEYS and ARGV are set to (setArgs)
	argChunk   []byte      // where their strings are cut from (argBytes)
	argCache   argCache    // recent strings of KEYS and ARGV
	redisCall  lua.LValue  // redis.call
	redisPcall lua.LValue  // redis.pcall

	coroutines map[*lua.LState]*coroutineState
	missing    *lua.LFunction // __index of the globals: a missing global fails
	lib        libraryTables  // function libraries' environments (function_env.go)
	gcPause    float64
	gcStepMul  float64
}

func newSandbox(e *Engine) *sandbox {
	L := e.L
	sb := &sandbox{
		e:          e,
		proxies:    make(map[*lua.LTable]*lua.LTable),
		reals:      make(map[*lua.LTable]*lua.LTable),
		apparent:   make(map[*lua.LTable]lua.LValue),
		builds:     make(map[*lua.LTable]*tableBuild),
		coroutines: make(map[*lua.LState]*coroutineState),
		argCache:   newArgCache(),
		gcPause:    200,
		gcStepMul:  200,
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
	missing := L.NewFunction(func(L *lua.LState) int {
		name := L.Get(2)
		if !isStrNum(name) {
			rawError(L, "Second argument to luaProtectedTableError must be a string or number")
		}
		runError(L, "Script attempted to access nonexistent global variable '"+cstr(e.tostring(L, name))+"'")
		return 0
	})
	gmeta.RawSetString("__index", missing)
	g.Metatable = gmeta
	sb.missing = missing

	// _G as scripts see it: read-only, and so is the metatable it shows
	shownMeta := L.NewTable()
	shownMeta.RawSetString("__index", missing)
	sb.gproxy = sb.protect(L, g, sb.protect(L, shownMeta, nil))

	// The globals, in the order Redis 7.0 creates them (see ltable.go):
	// Lua's base library, the libraries, redis; "debug" comes and goes.
	gb := &tableBuild{hint: tableHint{0, 2}}
	sb.builds[g] = gb
	lib := func(name string, t *lua.LTable) libEntry {
		return valEntry(name, sb.protect(L, t, nil))
	}
	sb.addFields(L, g, gb, valEntry("_G", sb.gproxy))
	sb.addFields(L, g, gb, sb.baseFuncs(L)...)
	sb.addFields(L, g, gb,
		valEntry("_VERSION", lua.LString("Lua 5.1")),
		fnEntry("ipairs", sb.baseIpairs),
		fnEntry("pairs", sb.basePairs),
		lib("coroutine", sb.openCoroutine(L)),
		lib("table", sb.openTable(L)),
		lib("string", sb.openString(L)),
		lib("math", sb.openMath(L)),
	)
	gb.ops = append(gb.ops, simOp{key: lua.LString("debug")})
	sb.addFields(L, g, gb,
		lib("cjson", sb.openCjson(L)),
		lib("struct", sb.openStruct(L)),
		lib("cmsgpack", sb.openCmsgpack(L)),
		lib("bit", sb.openBit(L)),
		lib("redis", sb.openRedis(L)),
	)
	redis := sb.proxies[g.RawGetString("redis").(*lua.LTable)]
	sb.redisCall, sb.redisPcall = redis.RawGetString("call"), redis.RawGetString("pcall")
	gb.ops = append(gb.ops, simOp{key: lua.LString("debug"), del: true})
	sb.addFields(L, g, gb, valEntry("__redis__err__handler", sb.errHandler))
	gb.ops = append(gb.ops, simOp{key: lua.LString("KEYS")}, simOp{key: lua.LString("ARGV")})

	// the string metatable: methods on strings
	stringReal := sb.proxies[g.RawGetString("string").(*lua.LTable)]
	smt := L.NewTable()
	smt.RawSetString("__index", stringReal)
	L.SetMetatable(lua.LString(""), smt)
	shown := L.NewTable()
	shown.RawSetString("__index", g.RawGetString("string"))
	sb.stringMeta = sb.protect(L, shown, nil)

	// The environment of compiled chunks. It must hold nothing but the
	// hidden functions: any key present in it could be assigned without
	// going through __newindex.
	env := L.NewTable()
	env.RawSetString(hidBudget, L.NewFunction(e.hiddenBudget))
	env.RawSetString(hidConcat, L.NewFunction(e.hiddenConcat))
	env.RawSetString(hidForNum, L.NewFunction(e.hiddenForNum))
	env.RawSetString(hidLen, L.NewFunction(e.hiddenLen))
	env.RawSetString(hidUnm, L.NewFunction(e.hiddenUnm))
	env.RawSetString(hidTable, L.NewFunction(e.hiddenTable))
	env.RawSetString(hidArgs, L.NewFunction(sb.hiddenArgs))
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

// hiddenArgs returns what the globals hoistedName replaces hold: KEYS,
// ARGV, redis.call and redis.pcall.
func (sb *sandbox) hiddenArgs(L *lua.LState) int {
	L.Push(sb.keys)
	L.Push(sb.argv)
	L.Push(sb.redisCall)
	L.Push(sb.redisPcall)
	return 4
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
	return t == sb.env || sb.isLibraryEnv(t)
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

// setArgs sets KEYS and ARGV for a run of a script, from the tables the
// script's previous run used (see argTable).
func (sb *sandbox) setArgs(L *lua.LState, at *[2]argTable, keys, argv [][]byte) {
	sb.argStrings(at, keys, argv)
	if t := at[0].table(L); t != sb.keys {
		sb.globals.RawSetString("KEYS", t)
		sb.keys = t
	}
	if t := at[1].table(L); t != sb.argv {
		sb.globals.RawSetString("ARGV", t)
		sb.argv = t
	}
}

// argStrings sets the strings of two argument tables (KEYS and ARGV, or
// a function's keys and args) to keys and argv, reusing what it can.
func (sb *sandbox) argStrings(at *[2]argTable, keys, argv [][]byte) {
	// One string holds the bytes of every key and argument that is neither
	// the previous run's nor in the cache; the Lua strings are slices of
	// it, so a run costs at most one copy rather than one per string.
	n := at[0].match(keys, &sb.argCache) + at[1].match(argv, &sb.argCache)
	all := ""
	if n > 0 {
		buf := sb.argBytes(n)
		buf = at[0].appendFresh(buf, keys)
		buf = at[1].appendFresh(buf, argv)
		all = unsafe.String(&buf[0], n) // buf is never written again
	}
	// A short string cut from a buffer of its own (a run with a big
	// argument) is copied: cached or kept for the next run, it would keep
	// the big argument's bytes alive with it.
	own := n > argChunkLimit
	at[0].fill(keys, &all, &sb.argCache, own)
	at[1].fill(argv, &all, &sb.argCache, own)
}

// Sizes of the chunks argBytes cuts strings from.
const (
	argChunkSize  = 4096
	argChunkLimit = 512 // larger strings get their own buffer
)

// argBytes returns an empty slice with room for n bytes, for the strings
// of KEYS and ARGV. It cuts them from a chunk that is only ever appended
// to, one region per run, so that a run costs no allocation most of the
// time: once a run's strings are made, nothing writes their bytes again,
// which is what unsafe.String requires. A full chunk is left to the
// garbage collector, which frees it when no string cut from it remains.
func (sb *sandbox) argBytes(n int) []byte {
	if n > argChunkLimit {
		return make([]byte, 0, n)
	}
	if cap(sb.argChunk)-len(sb.argChunk) < n {
		sb.argChunk = make([]byte, 0, argChunkSize)
	}
	i := len(sb.argChunk)
	sb.argChunk = sb.argChunk[:i+n]
	return sb.argChunk[i : i : i+n]
}

// argCache holds recent KEYS and ARGV strings, boxed as Lua values, in a
// direct-mapped table: a lock server's clients come back again and again
// with the same lock names, owner ids and channels, and a string found
// here costs neither a copy nor an allocation. Which strings it holds
// depends on a per-process hash seed, but a script cannot tell a string
// from the cache from a new one with the same bytes.
type argCache struct {
	seed  maphash.Seed
	slots [argCacheSlots]lua.LValue // nil or lua.LString
}

const (
	argCacheSlots  = 1024
	argCacheMaxLen = 128 // longer strings are not cached
)

func newArgCache() argCache { return argCache{seed: maphash.MakeSeed()} }

// str returns b as a Lua string: the cached one if it is there, else a
// copy, which it caches.
func (c *argCache) str(b []byte) lua.LValue {
	k := c.slot(b)
	if k >= 0 {
		if s, ok := c.slots[k].(lua.LString); ok && string(s) == string(b) {
			return c.slots[k]
		}
	}
	v := lua.LValue(lua.LString(b))
	if k >= 0 {
		c.slots[k] = v
	}
	return v
}

// slot returns where b is cached, or -1 if it is not cacheable.
func (c *argCache) slot(b []byte) int {
	if len(b) > argCacheMaxLen {
		return -1
	}
	return int(maphash.Bytes(c.seed, b) % argCacheSlots)
}

// argTable is the KEYS or ARGV table of one compiled script, kept from one
// run to the next with the strings it held. A lock script is run again and
// again with the same number of keys and arguments, several of them the
// same (a lease time, a channel name), so a run usually refills the same
// table and reuses some of the strings instead of allocating them anew.
//
// Nothing a script does survives its run (globals are read-only, tables
// made during the run are unreachable afterwards), so the table is
// reachable only from the script's own runs. A run may still change it
// (KEYS[9] = 1, setmetatable(KEYS, ...)): then the table is not reused,
// since gopher-lua remembers the keys a table ever had and that would show
// in the order of pairs (ltable.go). A reused table is indistinguishable
// from a fresh one.
type argTable struct {
	t     *lua.LTable
	vals  []lua.LValue // t[i+1] is vals[i]: the strings given last time
	fresh []int        // set by match: see there
}

// Values of argTable.fresh besides a cache slot.
const (
	argKnown    = -1 // vals[i] is items[i] already
	argUncached = -2 // a new string, too long for the cache
)

// match makes vals as long as items and sets the entries it can without
// copying: those that did not change since the last run, and those in the
// cache. For the others, fresh tells where fill caches them, and match
// returns their total length.
func (a *argTable) match(items [][]byte, c *argCache) int {
	old := len(a.vals)
	if cap(a.vals) < len(items) {
		vals := make([]lua.LValue, len(items))
		copy(vals, a.vals)
		a.vals = vals
	}
	a.vals = a.vals[:len(items)]
	if cap(a.fresh) < len(items) {
		a.fresh = make([]int, len(items))
	}
	a.fresh = a.fresh[:len(items)]
	n := 0
	for i, b := range items {
		if i < old {
			if s, ok := a.vals[i].(lua.LString); ok && string(s) == string(b) {
				a.fresh[i] = argKnown
				continue
			}
		}
		k := c.slot(b)
		if k >= 0 {
			if s, ok := c.slots[k].(lua.LString); ok && string(s) == string(b) {
				a.vals[i] = c.slots[k]
				a.fresh[i] = argKnown
				continue
			}
		} else {
			k = argUncached
		}
		a.fresh[i] = k
		n += len(b)
	}
	return n
}

// appendFresh appends the bytes of the items that match did not find.
func (a *argTable) appendFresh(buf []byte, items [][]byte) []byte {
	for i, b := range items {
		if a.fresh[i] != argKnown {
			buf = append(buf, b...)
		}
	}
	return buf
}

// fill makes the strings match did not find, taking their bytes from the
// front of *all, in order, as appendFresh laid them out, and caches them.
//
// With own, the strings short enough to be cached are copied out of *all.
func (a *argTable) fill(items [][]byte, all *string, c *argCache, own bool) {
	for i, b := range items {
		k := a.fresh[i]
		if k == argKnown {
			continue
		}
		str := (*all)[:len(b)]
		if own && len(b) <= argCacheMaxLen {
			str = strings.Clone(str)
		}
		v := lua.LValue(lua.LString(str))
		*all = (*all)[len(b):]
		a.vals[i] = v
		if k >= 0 {
			c.slots[k] = v
		}
	}
}

// table returns the Lua array of vals: the previous table refilled when
// it is as the previous run got it, otherwise a new one.
func (a *argTable) table(L *lua.LState) *lua.LTable {
	n := len(a.vals)
	if a.t != nil && n < lua.MaxArrayIndex && pristine(a.t, n) {
		for i, v := range a.vals {
			a.t.RawSetInt(i+1, v)
		}
		return a.t
	}
	a.t = L.CreateTable(n, 0)
	for _, v := range a.vals {
		a.t.Append(v)
	}
	return a.t
}

// ltableLayout locates the unexported fields of gopher-lua's LTable that
// pristine reads (read only: reflection cannot write them). If a future
// gopher-lua lays its tables out differently, ok is false and tables are
// never reused.
var ltableLayout = func() (l struct {
	ok          bool
	array, keys int
}) {
	t := reflect.TypeOf(lua.LTable{})
	field := func(name string) int {
		f, found := t.FieldByName(name)
		if !found || f.Type.Kind() != reflect.Slice || len(f.Index) != 1 {
			return -1
		}
		return f.Index[0]
	}
	l.array, l.keys = field("array"), field("keys")
	l.ok = l.array >= 0 && l.keys >= 0
	return l
}()

// pristine reports whether t, made by CreateTable(n, 0) and n Appends, is
// still an array of exactly n slots that has never had a key outside its
// array part nor keeps a metatable, whatever values the slots hold.
// gopher-lua creates a table's hash part (dict, strdict) only together with
// the list of its keys (keys, k2i), when the first key goes there, and
// never drops it: a nil keys means no key ever went there.
func pristine(t *lua.LTable, n int) bool {
	l := &ltableLayout
	if !l.ok || t.Metatable != lua.LNil {
		return false
	}
	v := reflect.ValueOf(t).Elem()
	return v.Field(l.array).Len() == n && v.Field(l.keys).IsNil()
}

// libEntry is one field of a library table: a Go function or a value.
type libEntry struct {
	name string
	fn   lua.LGFunction
	val  lua.LValue
}

func fnEntry(name string, fn lua.LGFunction) libEntry { return libEntry{name: name, fn: fn} }
func valEntry(name string, v lua.LValue) libEntry     { return libEntry{name: name, val: v} }

// tableBuild remembers how a table of the environment was built, so that
// pairs visits it in the order Lua 5.1 would (see ltable.go).
type tableBuild struct {
	hint tableHint
	ops  []simOp
}

// newLib builds a library table as Lua registers one: created with room
// for nhash fields, then filled in order.
func (sb *sandbox) newLib(L *lua.LState, nhash int, entries ...libEntry) *lua.LTable {
	t := L.NewTable()
	b := &tableBuild{hint: tableHint{0, nhash}}
	if sb.e.run.active {
		// made by a script (cjson.new): remembered for the run only
		if sb.e.run.builds == nil {
			sb.e.run.builds = make(map[*lua.LTable]*tableBuild)
		}
		sb.e.run.builds[t] = b
	} else {
		sb.builds[t] = b
	}
	sb.addFields(L, t, b, entries...)
	return t
}

// addFields adds fields to a library table, after the ones it has.
func (sb *sandbox) addFields(L *lua.LState, t *lua.LTable, b *tableBuild, entries ...libEntry) {
	for _, en := range entries {
		v := en.val
		if en.fn != nil {
			v = L.NewFunction(en.fn)
		}
		if t.RawGetString(en.name) == lua.LNil {
			b.ops = append(b.ops, simOp{key: lua.LString(en.name)})
		}
		t.RawSetString(en.name, v)
	}
}
