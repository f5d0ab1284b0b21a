package luaexec

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua 5.1 table library. table.sort is Lua 5.1's own quicksort, step by
// step, so that ties and inconsistent comparators come out as in Redis.

func (sb *sandbox) openTable(L *lua.LState) *lua.LTable {
	return sb.newLib(L, 9,
		fnEntry("concat", sb.tabConcat),
		fnEntry("foreach", sb.tabForeach),
		fnEntry("foreachi", sb.tabForeachi),
		fnEntry("getn", sb.tabGetn),
		fnEntry("maxn", sb.tabMaxn),
		fnEntry("insert", sb.tabInsert),
		fnEntry("remove", sb.tabRemove),
		fnEntry("setn", tabSetn),
		fnEntry("sort", sb.tabSort),
	)
}

func (sb *sandbox) tabConcat(L *lua.LState) int {
	e := sb.e
	sep := optString(L, 2, "")
	t := sb.real(checkTable(L, 1))
	i := optInt(L, 3, 1)
	var last int
	if L.Get(4) == lua.LNil {
		last = border(t)
	} else {
		last = checkInt(L, 4)
	}
	var b strings.Builder
	for ; i <= last; i++ {
		v := rawGetInt(t, i)
		var s string
		switch x := v.(type) {
		case lua.LString:
			s = string(x)
		case lua.LNumber:
			s = fmtNumber(float64(x))
		default:
			runError(L, fmt.Sprintf("invalid value (%s) at index %d in table for 'concat'", typeName(v), i))
		}
		n := len(s)
		if i != last {
			n += len(sep)
		}
		e.charge(L, 1)
		e.growBytes(L, b.Len(), n)
		b.WriteString(s)
		if i != last {
			b.WriteString(sep)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

func (sb *sandbox) tabForeach(L *lua.LState) int {
	t := checkTable(L, 1)
	f, ok := L.Get(2).(*lua.LFunction)
	if !ok {
		typeError(L, 2, "function")
	}
	real := sb.real(t)
	k, v := sb.e.next(L, real, lua.LNil)
	for k != lua.LNil {
		sb.e.charge(L, 1)
		L.Push(f)
		L.Push(k)
		L.Push(v)
		sb.e.callLua(L, 2, 1)
		if r := L.Get(-1); r != lua.LNil {
			return 1
		}
		L.Pop(1)
		k, v = sb.e.next(L, real, k)
	}
	return 0
}

func (sb *sandbox) tabForeachi(L *lua.LState) int {
	t := checkTable(L, 1)
	n := sb.length(t)
	f, ok := L.Get(2).(*lua.LFunction)
	if !ok {
		typeError(L, 2, "function")
	}
	real := sb.real(t)
	for i := 1; i <= n; i++ {
		sb.e.charge(L, 1)
		L.Push(f)
		L.Push(lua.LNumber(i))
		L.Push(rawGetInt(real, i))
		sb.e.callLua(L, 2, 1)
		if r := L.Get(-1); r != lua.LNil {
			return 1
		}
		L.Pop(1)
	}
	return 0
}

func (sb *sandbox) tabGetn(L *lua.LState) int {
	L.Push(lua.LNumber(sb.length(checkTable(L, 1))))
	return 1
}

func tabSetn(L *lua.LState) int {
	checkTable(L, 1)
	runError(L, "'setn' is obsolete")
	return 0
}

func (sb *sandbox) tabMaxn(L *lua.LState) int {
	t := sb.real(checkTable(L, 1))
	max := 0.0
	k, _ := t.Next(lua.LNil)
	for k != lua.LNil {
		sb.e.charge(L, 1)
		if n, ok := k.(lua.LNumber); ok && float64(n) > max {
			max = float64(n)
		}
		k, _ = t.Next(k)
	}
	L.Push(lua.LNumber(max))
	return 1
}

func (sb *sandbox) tabInsert(L *lua.LState) int {
	t := checkTable(L, 1)
	e := sb.length(t) + 1
	var pos int
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = checkInt(L, 2)
		if pos > e {
			e = pos
		}
		sb.checkWritable(L, t)
		sb.e.charge(L, int64(e-pos))
		for i := e; i > pos; i-- {
			t.RawSetInt(i, rawGetInt(t, i-1))
		}
	default:
		runError(L, "wrong number of arguments to 'insert'")
	}
	sb.checkWritable(L, t)
	t.RawSetInt(pos, L.Get(-1))
	return 0
}

func (sb *sandbox) tabRemove(L *lua.LState) int {
	t := checkTable(L, 1)
	e := sb.length(t)
	pos := optInt(L, 2, e)
	if !(1 <= pos && pos <= e) {
		return 0
	}
	sb.checkWritable(L, t)
	sb.e.charge(L, int64(e-pos))
	v := rawGetInt(t, pos)
	for ; pos < e; pos++ {
		t.RawSetInt(pos, rawGetInt(t, pos+1))
	}
	t.RawSetInt(e, lua.LNil)
	L.Push(v)
	return 1
}

// --- sort ------------------------------------------------------------------------

type sorter struct {
	sb   *sandbox
	L    *lua.LState
	t    *lua.LTable
	comp lua.LValue
	ok   bool // writability checked
}

func (sb *sandbox) tabSort(L *lua.LState) int {
	t := checkTable(L, 1)
	n := sb.length(t)
	comp := L.Get(2)
	if comp != lua.LNil {
		if _, ok := comp.(*lua.LFunction); !ok {
			typeError(L, 2, "function")
		}
	}
	s := &sorter{sb: sb, L: L, t: t, comp: comp}
	s.auxsort(1, n)
	return 0
}

func (s *sorter) get(i int) lua.LValue { return rawGetInt(s.sb.real(s.t), i) }

func (s *sorter) set(i int, v lua.LValue) {
	if !s.ok {
		s.sb.checkWritable(s.L, s.t)
		s.ok = true
	}
	s.t.RawSetInt(i, v)
}

func (s *sorter) less(a, b lua.LValue) bool {
	s.sb.e.charge(s.L, 1)
	if s.comp != lua.LNil {
		L := s.L
		L.Push(s.comp)
		L.Push(a)
		L.Push(b)
		s.sb.e.callLua(L, 2, 1)
		r := lua.LVAsBool(L.Get(-1))
		L.Pop(1)
		return r
	}
	return s.sb.e.lessThan(s.L, a, b)
}

// auxsort is Lua 5.1's quicksort.
func (s *sorter) auxsort(l, u int) {
	for l < u {
		// sort a[l], a[(l+u)/2] and a[u]
		if s.less(s.get(u), s.get(l)) {
			s.swap(l, u)
		}
		if u-l == 1 {
			break
		}
		i := (l + u) / 2
		if s.less(s.get(i), s.get(l)) {
			s.swap(i, l)
		} else if s.less(s.get(u), s.get(i)) {
			s.swap(i, u)
		}
		if u-l == 2 {
			break
		}
		p := s.get(i)
		s.swap(i, u-1)
		// a[l] <= P == a[u-1] <= a[u]; sort from l+1 to u-2
		i, j := l, u-1
		for {
			for i++; s.less(s.get(i), p); i++ {
				if i > u {
					runError(s.L, "invalid order function for sorting")
				}
			}
			for j--; s.less(p, s.get(j)); j-- {
				if j < l {
					runError(s.L, "invalid order function for sorting")
				}
			}
			if j < i {
				break
			}
			s.swap(i, j)
		}
		s.swap(u-1, i)
		// recurse into the smaller half, loop on the larger
		if i-l < u-i {
			j, i, l = l, i-1, i+1
		} else {
			j, i, u = i+1, u, i-1
		}
		s.auxsort(j, i)
	}
}

func (s *sorter) swap(i, j int) {
	a, b := s.get(i), s.get(j)
	s.set(i, b)
	s.set(j, a)
}

// lessThan is Lua 5.1's '<' (lua_lessthan).
func (e *Engine) lessThan(L *lua.LState, a, b lua.LValue) bool {
	switch x := a.(type) {
	case lua.LNumber:
		if y, ok := b.(lua.LNumber); ok {
			return x < y
		}
	case lua.LString:
		if y, ok := b.(lua.LString); ok {
			return x < y
		}
	}
	if a.Type() == b.Type() {
		mm1 := L.GetMetaField(a, "__lt")
		if mm1 != lua.LNil && rawEqualMeta(mm1, L.GetMetaField(b, "__lt")) {
			return lua.LVAsBool(callMeta(L, mm1, a, b))
		}
	}
	orderError(L, a, b)
	return false
}

func rawEqualMeta(a, b lua.LValue) bool { return a == b }

func orderError(L *lua.LState, a, b lua.LValue) {
	t1, t2 := typeName(a), typeName(b)
	if t1 == t2 {
		rawError(L, "attempt to compare two "+t1+" values")
	}
	rawError(L, "attempt to compare "+t1+" with "+t2)
}
