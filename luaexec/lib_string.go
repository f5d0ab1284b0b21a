package luaexec

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua 5.1 string library. Every function that builds a string charges
// the work budget by its length and respects the string size limit.

func (sb *sandbox) openString(L *lua.LState) *lua.LTable {
	e := sb.e
	t := sb.newLib(L, 15,
		fnEntry("byte", e.strByte),
		fnEntry("char", e.strChar),
		fnEntry("dump", strDump),
		fnEntry("find", e.strFind),
		fnEntry("format", e.strFormat),
		valEntry("gfind", lua.LFalse), // replaced by gmatch below, as Lua does
		fnEntry("gmatch", e.strGmatch),
		fnEntry("gsub", e.strGsub),
		fnEntry("len", strLen),
		fnEntry("lower", e.strLower),
		fnEntry("match", e.strMatch),
		fnEntry("rep", e.strRep),
		fnEntry("reverse", e.strReverse),
		fnEntry("sub", e.strSub),
		fnEntry("upper", e.strUpper),
	)
	t.RawSetString("gfind", t.RawGetString("gmatch"))
	return t
}

func checkInteger(L *lua.LState, n int) int64 {
	return toCLong(checkNumber(L, n))
}

func optInteger(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInteger(L, n)
}

// posrelat turns a relative string position (negative: from the end) into
// an absolute one.
func posrelat(pos int64, l int) int64 {
	if pos < 0 {
		pos += int64(l) + 1
	}
	if pos >= 0 {
		return pos
	}
	return 0
}

func strLen(L *lua.LState) int {
	L.Push(lua.LNumber(len(checkString(L, 1))))
	return 1
}

func (e *Engine) strSub(L *lua.LState) int {
	s := checkString(L, 1)
	l := len(s)
	start := posrelat(checkInteger(L, 2), l)
	end := posrelat(optInteger(L, 3, -1), l)
	if start < 1 {
		start = 1
	}
	if end > int64(l) {
		end = int64(l)
	}
	if start <= end {
		e.chargeBytes(L, int(end-start+1))
		L.Push(lua.LString(s[start-1 : end]))
	} else {
		L.Push(lua.LString(""))
	}
	return 1
}

func (e *Engine) strReverse(L *lua.LState) int {
	s := checkString(L, 1)
	e.chargeBytes(L, len(s))
	b := make([]byte, len(s))
	for i := range b {
		b[i] = s[len(s)-1-i]
	}
	L.Push(lua.LString(b))
	return 1
}

func (e *Engine) strLower(L *lua.LState) int {
	s := checkString(L, 1)
	e.chargeBytes(L, len(s))
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func (e *Engine) strUpper(L *lua.LState) int {
	s := checkString(L, 1)
	e.chargeBytes(L, len(s))
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func (e *Engine) strRep(L *lua.LState) int {
	s := checkString(L, 1)
	n := checkInt(L, 2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	total := int64(len(s)) * int64(n)
	if total > int64(e.opt.MaxStringBytes) {
		e.chargeBytes(L, e.opt.MaxStringBytes+1)
	}
	e.chargeBytes(L, int(total))
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

func (e *Engine) strByte(L *lua.LState) int {
	s := checkString(L, 1)
	l := len(s)
	posi := posrelat(optInteger(L, 2, 1), l)
	pose := posrelat(optInteger(L, 3, posi), l)
	if posi <= 0 {
		posi = 1
	}
	if pose > int64(l) {
		pose = int64(l)
	}
	if posi > pose {
		return 0
	}
	n := pose - posi + 1
	if n+int64(L.GetTop()) > maxCStack {
		runError(L, "stack overflow (string slice too long)")
	}
	e.charge(L, n)
	for i := posi; i <= pose; i++ {
		L.Push(lua.LNumber(s[i-1]))
	}
	return int(n)
}

func (e *Engine) strChar(L *lua.LState) int {
	n := L.GetTop()
	b := make([]byte, n)
	for i := 1; i <= n; i++ {
		c := checkInt(L, i)
		if c < 0 || c > 255 {
			argError(L, i, "invalid value")
		}
		b[i-1] = byte(c)
	}
	e.chargeBytes(L, n)
	e.charge(L, int64(n))
	L.Push(lua.LString(b))
	return 1
}

func strDump(L *lua.LState) int {
	if _, ok := L.Get(1).(*lua.LFunction); !ok {
		typeError(L, 1, "function")
	}
	if L.Get(1).(*lua.LFunction).IsG {
		runError(L, "unable to dump given function")
	}
	// gopher-lua has no bytecode format to dump to. Redis refuses to load
	// bytecode, so all a script can do with a dump is fail to load it: a
	// chunk header is enough for that.
	L.Push(lua.LString("\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00"))
	return 1
}

func (e *Engine) strFind(L *lua.LState) int  { return e.strFindAux(L, true) }
func (e *Engine) strMatch(L *lua.LState) int { return e.strFindAux(L, false) }

func (e *Engine) strFindAux(L *lua.LState, find bool) int {
	s := checkString(L, 1)
	p := checkString(L, 2)
	init := posrelat(optInteger(L, 3, 1), len(s)) - 1
	if init < 0 {
		init = 0
	} else if init > int64(len(s)) {
		init = int64(len(s))
	}
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(cstr(p), patSpecials)) {
		e.charge(L, int64(len(s))-init)
		if i := strings.Index(s[init:], p); i >= 0 {
			L.Push(lua.LNumber(int(init) + i + 1))
			L.Push(lua.LNumber(int(init) + i + len(p)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	pat := cstr(p)
	anchor := len(pat) > 0 && pat[0] == '^'
	if anchor {
		pat = pat[1:]
	}
	ms := &matchState{e: e, L: L, src: s, pat: pat}
	for s1 := int(init); ; s1++ {
		ms.level = 0
		if r := ms.match(s1, 0); r != -1 {
			ms.flush()
			if find {
				L.Push(lua.LNumber(s1 + 1))
				L.Push(lua.LNumber(r))
				return ms.pushCaptures(-1, 0) + 2
			}
			return ms.pushCaptures(s1, r)
		}
		if s1 >= len(s) || anchor {
			break
		}
	}
	ms.flush()
	L.Push(lua.LNil)
	return 1
}

func (e *Engine) strGmatch(L *lua.LState) int {
	s := checkString(L, 1)
	p := cstr(checkString(L, 2))
	pos := 0
	L.Push(L.NewClosure(func(L *lua.LState) int {
		ms := &matchState{e: e, L: L, src: s, pat: p}
		defer ms.flush()
		for src := pos; src <= len(s); src++ {
			ms.level = 0
			if r := ms.match(src, 0); r != -1 {
				newStart := r
				if r == src {
					newStart++ // empty match: go at least one position
				}
				pos = newStart
				return ms.pushCaptures(src, r)
			}
		}
		pos = len(s) + 1
		return 0
	}, L.NewUserData())) // the userdata marks the closure as keeping state (function_state.go)
	return 1
}

func (e *Engine) strGsub(L *lua.LState) int {
	src := checkString(L, 1)
	p := cstr(checkString(L, 2))
	repl := L.Get(3)
	maxN := optInt(L, 4, len(src)+1)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTFunction, lua.LTTable:
	default:
		argError(L, 3, "string/function/table expected")
	}
	anchor := len(p) > 0 && p[0] == '^'
	if anchor {
		p = p[1:]
	}
	ms := &matchState{e: e, L: L, src: src, pat: p}
	var b []byte
	add := func(piece string) {
		e.growBytes(L, len(b), len(piece))
		b = append(b, piece...)
	}
	n := 0
	s := 0
	for n < maxN {
		ms.level = 0
		r := ms.match(s, 0)
		if r != -1 {
			n++
			add(e.gsubValue(ms, repl, s, r))
		}
		if r != -1 && r > s {
			s = r
		} else if s < len(src) {
			add(src[s : s+1])
			s++
		} else {
			break
		}
		if anchor {
			break
		}
	}
	add(src[s:])
	ms.flush()
	L.Push(lua.LString(b))
	L.Push(lua.LNumber(n))
	return 2
}

// gsubValue computes the replacement of the match src[s:e].
func (e *Engine) gsubValue(ms *matchState, repl lua.LValue, s, end int) string {
	L := ms.L
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		var news string
		if x, ok := r.(lua.LNumber); ok {
			news = fmtNumber(float64(x))
		} else {
			news = string(r.(lua.LString))
		}
		var b []byte
		for i := 0; i < len(news); i++ {
			c := news[i]
			if c != patternEsc {
				b = append(b, c)
				continue
			}
			i++
			var d byte // past the end, C reads the terminating NUL
			if i < len(news) {
				d = news[i]
			}
			switch {
			case !isDigit(int(d)):
				b = append(b, d)
			case d == '0':
				b = append(b, ms.src[s:end]...)
			default:
				cv := ms.captureValue(int(d-'1'), s, end)
				if x, ok := cv.(lua.LNumber); ok {
					b = append(b, fmtNumber(float64(x))...)
				} else {
					b = append(b, string(cv.(lua.LString))...)
				}
			}
		}
		return string(b)
	case *lua.LFunction:
		L.Push(r)
		n := ms.pushCaptures(s, end)
		e.callLua(L, n, 1)
		v = L.Get(-1)
		L.Pop(1)
	case *lua.LTable:
		v = L.GetTable(r, ms.captureValue(0, s, end))
	}
	if !lua.LVAsBool(v) {
		return ms.src[s:end]
	}
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return fmtNumber(float64(x))
	}
	runError(L, "invalid replacement value (a "+typeName(v)+")")
	return ""
}
