package luaexec

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua 5.1 base library as Redis exposes it (no print, dofile, loadfile,
// module, require, setfenv, getfenv or newproxy).

// baseFuncs returns the base library in the order Lua 5.1 registers it
// (those that Redis keeps).
func (sb *sandbox) baseFuncs(L *lua.LState) []libEntry {
	e := sb.e
	sb.nextFn = L.NewFunction(sb.baseNext)
	sb.ipairsAux = L.NewFunction(sb.ipairsAuxFn)
	return []libEntry{
		fnEntry("assert", baseAssert),
		fnEntry("collectgarbage", sb.baseCollectGarbage),
		fnEntry("error", e.baseError),
		fnEntry("gcinfo", baseGcinfo),
		fnEntry("getmetatable", sb.baseGetmetatable),
		fnEntry("load", e.baseLoad),
		fnEntry("loadstring", e.baseLoadstring),
		valEntry("next", sb.nextFn),
		fnEntry("pcall", e.basePcall),
		fnEntry("rawequal", baseRawequal),
		fnEntry("rawget", sb.baseRawget),
		fnEntry("rawset", sb.baseRawset),
		fnEntry("select", baseSelect),
		fnEntry("setmetatable", sb.baseSetmetatable),
		fnEntry("tonumber", e.baseTonumber),
		fnEntry("tostring", e.baseTostring),
		fnEntry("type", baseType),
		fnEntry("unpack", sb.baseUnpack),
		fnEntry("xpcall", e.baseXpcall),
	}
}

func baseAssert(L *lua.LState) int {
	v := checkAny(L, 1)
	if !lua.LVAsBool(v) {
		runError(L, optString(L, 2, "assertion failed!"))
	}
	return L.GetTop()
}

var gcOptions = []string{"stop", "restart", "collect", "count", "step", "setpause", "setstepmul"}

// collectgarbage answers with fixed values: the real numbers would differ
// between replicas.
func (sb *sandbox) baseCollectGarbage(L *lua.LState) int {
	opt := optString(L, 1, "collect")
	found := false
	for _, o := range gcOptions {
		if o == opt {
			found = true
		}
	}
	if !found {
		argError(L, 1, "invalid option '"+cstr(opt)+"'")
	}
	arg := optInt(L, 2, 0)
	switch opt {
	case "count":
		L.Push(lua.LNumber(0))
	case "step":
		L.Push(lua.LTrue)
	case "setpause":
		L.Push(lua.LNumber(sb.gcPause))
		sb.gcPause = float64(arg)
	case "setstepmul":
		L.Push(lua.LNumber(sb.gcStepMul))
		sb.gcStepMul = float64(arg)
	default:
		L.Push(lua.LNumber(0))
	}
	return 1
}

func baseGcinfo(L *lua.LState) int {
	L.Push(lua.LNumber(0))
	return 1
}

func (e *Engine) baseError(L *lua.LState) int {
	level := optInt(L, 2, 1)
	msg := L.Get(1)
	L.SetTop(1)
	if isStrNum(msg) && level > 0 {
		s := where(L, level)
		if x, ok := msg.(lua.LNumber); ok {
			s += fmtNumber(float64(x))
		} else {
			s += string(msg.(lua.LString))
		}
		msg = lua.LString(s)
	}
	L.Error(msg, 0)
	return 0
}

func (sb *sandbox) baseGetmetatable(L *lua.LState) int {
	v := checkAny(L, 1)
	mt := sb.metatable(L, v)
	if t, ok := mt.(*lua.LTable); ok {
		if f := sb.real(t).RawGetString("__metatable"); f != lua.LNil {
			L.Push(f)
			return 1
		}
	}
	L.Push(mt)
	return 1
}

func (sb *sandbox) baseSetmetatable(L *lua.LState) int {
	mt := L.Get(2)
	t := checkTable(L, 1)
	if mt.Type() != lua.LTNil && mt.Type() != lua.LTTable {
		argError(L, 2, "nil or table expected")
	}
	if cur := sb.metatable(L, t); cur != lua.LNil {
		if ct, ok := cur.(*lua.LTable); ok && sb.real(ct).RawGetString("__metatable") != lua.LNil {
			runError(L, "cannot change a protected metatable")
		}
	}
	sb.checkWritable(L, t)
	if m, ok := mt.(*lua.LTable); ok {
		t.Metatable = sb.real(m)
	} else {
		t.Metatable = lua.LNil
	}
	L.SetTop(1)
	return 1
}

func (sb *sandbox) baseNext(L *lua.LState) int {
	t := checkTable(L, 1)
	k, v := sb.e.next(L, sb.real(t), L.Get(2))
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

func (sb *sandbox) basePairs(L *lua.LState) int {
	t := checkTable(L, 1)
	L.Push(sb.nextFn)
	L.Push(t)
	L.Push(lua.LNil)
	return 3
}

func (sb *sandbox) baseIpairs(L *lua.LState) int {
	t := checkTable(L, 1)
	L.Push(sb.ipairsAux)
	L.Push(t)
	L.Push(lua.LNumber(0))
	return 3
}

func (sb *sandbox) ipairsAuxFn(L *lua.LState) int {
	t := checkTable(L, 1)
	i := checkInt(L, 2) + 1
	v := rawGetInt(sb.real(t), i)
	if v == lua.LNil {
		return 0
	}
	L.Push(lua.LNumber(i))
	L.Push(v)
	return 2
}

func baseRawequal(L *lua.LState) int {
	a := checkAny(L, 1)
	b := checkAny(L, 2)
	L.Push(lua.LBool(a == b))
	return 1
}

func (sb *sandbox) baseRawget(L *lua.LState) int {
	t := checkTable(L, 1)
	k := checkAny(L, 2)
	L.Push(sb.real(t).RawGet(k))
	return 1
}

func (sb *sandbox) baseRawset(L *lua.LState) int {
	t := checkTable(L, 1)
	k := checkAny(L, 2)
	v := checkAny(L, 3)
	sb.checkWritable(L, t)
	rawSet(L, t, k, v)
	L.SetTop(1)
	return 1
}

// rawSet stores into a table with Lua's checks on the key.
func rawSet(L *lua.LState, t *lua.LTable, k, v lua.LValue) {
	switch x := k.(type) {
	case *lua.LNilType:
		rawError(L, "table index is nil")
	case lua.LNumber:
		if math.IsNaN(float64(x)) {
			rawError(L, "table index is NaN")
		}
	}
	t.RawSet(k, v)
}

func baseSelect(L *lua.LState) int {
	n := L.GetTop()
	if s, ok := L.Get(1).(lua.LString); ok && len(s) > 0 && s[0] == '#' {
		L.Push(lua.LNumber(n - 1))
		return 1
	}
	i := checkInt(L, 1)
	if i < 0 {
		i = n + i
	} else if i > n {
		i = n
	}
	if i < 1 {
		argError(L, 1, "index out of range")
	}
	return n - i
}

func (e *Engine) baseTonumber(L *lua.LState) int {
	if s, ok := L.Get(1).(lua.LString); ok && len(s) > 64 {
		e.charge(L, int64(len(s)/bytesPerUnit))
	}
	base := optInt(L, 2, 10)
	if base == 10 {
		v := checkAny(L, 1)
		if f, ok := toNumber(v); ok {
			L.Push(lua.LNumber(f))
			return 1
		}
		L.Push(lua.LNil)
		return 1
	}
	s := checkString(L, 1)
	if base < 2 || base > 36 {
		argError(L, 2, "base out of range")
	}
	s = cstr(s)
	u, n := strtoul(s, base)
	if n > 0 {
		for n < len(s) && isSpace(int(s[n])) {
			n++
		}
		if n == len(s) {
			L.Push(lua.LNumber(float64(u)))
			return 1
		}
	}
	L.Push(lua.LNil)
	return 1
}

func (e *Engine) baseTostring(L *lua.LState) int {
	v := checkAny(L, 1)
	if mm := L.GetMetaField(v, "__tostring"); mm != lua.LNil {
		L.Push(e.callMetaTostring(L, mm, v))
		return 1
	}
	L.Push(lua.LString(e.tostring(L, v)))
	return 1
}

func (e *Engine) callMetaTostring(L *lua.LState, mm, v lua.LValue) lua.LValue {
	L.Push(mm)
	L.Push(v)
	e.callLua(L, 1, 1)
	r := L.Get(-1)
	L.Pop(1)
	return r
}

// tostring renders a value as Lua's tostring does without metamethods;
// objects are numbered in the order they are first shown in the run.
func (e *Engine) tostring(L *lua.LState, v lua.LValue) string {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return fmtNumber(float64(x))
	case lua.LBool:
		if x {
			return "true"
		}
		return "false"
	case *lua.LNilType:
		return "nil"
	case *lua.LUserData:
		if e.sb != nil && x == e.sb.cjsonNull {
			return "userdata: (nil)"
		}
	}
	return fmt.Sprintf("%s: 0x%08x", typeName(v), e.objectAddress(v))
}

func baseType(L *lua.LState) int {
	v := checkAny(L, 1)
	L.Push(lua.LString(typeName(v)))
	return 1
}

func (sb *sandbox) baseUnpack(L *lua.LState) int {
	t := sb.real(checkTable(L, 1))
	i := optInt(L, 2, 1)
	var j int
	if L.Get(3) == lua.LNil {
		j = border(t)
	} else {
		j = checkInt(L, 3)
	}
	if i > j {
		return 0
	}
	n := int64(j) - int64(i) + 1
	if n >= math.MaxInt32 || n+int64(L.GetTop()) > maxCStack {
		runError(L, "too many results to unpack")
	}
	sb.e.charge(L, n)
	for k := i; k <= j; k++ {
		L.Push(rawGetInt(t, k))
	}
	return int(n)
}

// callLua calls the function below nargs arguments on the stack from Go,
// counting the nesting like Lua 5.1 counts C calls.
func (e *Engine) callLua(L *lua.LState, nargs, nret int) {
	if e.run.cdepth+1 >= maxCCalls {
		rawError(L, "C stack overflow")
	}
	e.run.cdepth++
	defer func() { e.run.cdepth-- }()
	L.Call(nargs, nret)
}

// basePcall is Redis's pcall: like Lua's, but an error raised as a table
// with an 'err' string (redis.call's errors) is returned as that string.
func (e *Engine) basePcall(L *lua.LState) int {
	if L.GetTop() == 0 {
		// Redis's pcall calls the 'true' it inserts for the status.
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a boolean value"))
		return 2
	}
	if f := L.Get(1); !callable(L, f) {
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a " + typeName(f) + " value"))
		return 2
	}
	if e.run.cdepth+1 >= maxCCalls {
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(lua.LString("C stack overflow"))
		return 2
	}
	e.run.cdepth++
	err := L.PCall(L.GetTop()-1, lua.MultRet, e.sb.translator)
	e.run.cdepth--
	if err != nil {
		e.checkFatal(L)
		obj := errorObject(err)
		e.chargeCaught(L, obj)
		if t, ok := obj.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				obj = s
			} else if n, ok := t.RawGetString("err").(lua.LNumber); ok {
				obj = n
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// callable reports whether v can be called (a function, or a value with a
// __call metamethod).
func callable(L *lua.LState, v lua.LValue) bool {
	if _, ok := v.(*lua.LFunction); ok {
		return true
	}
	_, ok := L.GetMetaField(v, "__call").(*lua.LFunction)
	return ok
}

func errorObject(err error) lua.LValue {
	if ae, ok := err.(*lua.ApiError); ok {
		if ae.Object != nil {
			return ae.Object
		}
		return lua.LString(ae.Error())
	}
	return lua.LString(err.Error())
}

func (e *Engine) baseXpcall(L *lua.LState) int {
	checkAny(L, 2)
	L.SetTop(2)
	handler := L.Get(2)
	f := L.Get(1)
	L.SetTop(0)
	hfn := L.NewFunction(func(L *lua.LState) int {
		v := L.Get(1)
		if v == e.sb.fatalValue {
			L.Push(v)
			return 1
		}
		if s, ok := v.(lua.LString); ok {
			v = lua.LString(translateVMError(L, 1, string(s)))
		}
		L.Push(handler)
		L.Push(v)
		L.Call(1, 1)
		return 1
	})
	if e.run.cdepth+1 >= maxCCalls {
		L.Push(lua.LFalse)
		L.Push(lua.LString("C stack overflow"))
		return 2
	}
	if !callable(L, f) {
		// the handler sees the error of calling f
		L.Push(handler)
		L.Push(lua.LString("attempt to call a " + typeName(f) + " value"))
		e.callLua(L, 1, 1)
		r := L.Get(-1)
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(r)
		return 2
	}
	e.run.cdepth++
	L.Push(f)
	err := L.PCall(0, lua.MultRet, hfn)
	e.run.cdepth--
	if err != nil {
		e.checkFatal(L)
		obj := errorObject(err)
		e.chargeCaught(L, obj)
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// --- load and loadstring -------------------------------------------------------

func (e *Engine) baseLoadstring(L *lua.LState) int {
	s := checkString(L, 1)
	name := optString(L, 2, s)
	return e.loadChunk(L, s, name)
}

func (e *Engine) baseLoad(L *lua.LState) int {
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok {
		typeError(L, 1, "function")
	}
	name := optString(L, 2, "=(load)")
	var sb strings.Builder
	for {
		L.Push(fn)
		e.callLua(L, 0, 1)
		piece := L.Get(-1)
		L.Pop(1)
		if piece == lua.LNil {
			break
		}
		s, ok := piece.(lua.LString)
		if !ok {
			L.Push(lua.LNil)
			L.Push(lua.LString("reader function must return a string"))
			return 2
		}
		if len(s) == 0 {
			break
		}
		e.growBytes(L, sb.Len(), len(s))
		sb.WriteString(string(s))
	}
	return e.loadChunk(L, sb.String(), name)
}

func (e *Engine) loadChunk(L *lua.LState, src, name string) int {
	e.charge(L, int64(len(src))*costCompileByte+100)
	if len(src) > 0 && src[0] == 0x1b {
		// Redis refuses precompiled chunks.
		L.Push(lua.LNil)
		L.Push(lua.LString(chunkID(name, 80) + ": bad binary format (precompiled chunk)"))
		return 2
	}
	proto, _, msg := compileChunk(src, name, false)
	if msg != "" {
		L.Push(lua.LNil)
		L.Push(lua.LString(msg))
		return 2
	}
	fn := L.NewFunctionFromProto(proto)
	fn.Env = e.sb.env
	if e.run.sources == nil {
		e.run.sources = make(map[string]string)
	}
	e.run.sources[chunkID(name, 60)] = name
	L.Push(fn)
	return 1
}
