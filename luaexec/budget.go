package luaexec

import (
	"fmt"
	"math"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// runState is the state of the script being run.
type runState struct {
	active bool
	// resp is the protocol redis.setresp chose: how redis.call's replies
	// reach the script, and what a returned boolean becomes.
	resp   int
	sha    string
	caller Caller
	used   int64
	limit  int64
	// fatal is set when the script must stop whatever it does (work budget
	// or string size exceeded); pcall cannot catch it.
	fatal *fatalError
	// cdepth counts nested calls from Go back into Lua (Lua 5.1's C stack).
	cdepth int
	// ids numbers the objects tostring has shown, so that "table: 0x..."
	// is the same on every replica.
	ids    map[lua.LValue]uint64
	nextID uint64
	// sources maps a chunk's display name to its raw source for chunks
	// that loadstring compiled during the run.
	sources map[string]string
	// hints and builds tell how tables made during the run were created,
	// and orders caches traversals, for Lua 5.1's order of pairs.
	hints  map[*lua.LTable]tableHint
	builds map[*lua.LTable]*tableBuild
	orders map[*lua.LTable]*tableOrder
}

type fatalError struct{ msg string }

func (f *fatalError) reply() resp.Reply { return resp.Err(f.msg) }

func (r *runState) begin(e *Engine, sha string, c Caller, cost int64) {
	r.active = true
	r.resp = 2
	r.sha = sha
	r.caller = c
	r.used = cost
	r.limit = e.opt.Budget
	r.fatal = nil
	r.cdepth = 1 // the script itself, as Lua 5.1 counts C calls
	r.nextID = 0
	// collectgarbage's setpause and setstepmul last one run (Redis keeps
	// them in its Lua state): kept, they would be state that snapshots do
	// not carry, and a run outside the log (a script on a full disk,
	// fsm.ReadWritesRefused) could change them on one node only.
	if e.sb != nil {
		e.sb.gcPause, e.sb.gcStepMul = 200, 200
	}
	if len(r.ids) > 0 {
		clear(r.ids)
	}
	if len(r.sources) > 0 {
		clear(r.sources)
	}
	if len(e.sb.coroutines) > 0 {
		clear(e.sb.coroutines)
	}
	r.hints, r.builds, r.orders = nil, nil, nil
}

func (r *runState) end() {
	r.active = false
	r.caller = nil
	r.hints, r.builds, r.orders = nil, nil, nil
	if len(r.ids) > 256 {
		r.ids = nil
	}
}

// charge uses n work units and stops the script when the budget is gone.
func (e *Engine) charge(L *lua.LState, n int64) {
	r := &e.run
	r.used += n
	if r.used > r.limit {
		if r.fatal == nil {
			r.fatal = &fatalError{fmt.Sprintf("ERR script exceeded the deterministic work budget (%d units)", r.limit)}
		}
		e.raiseFatal(L)
	}
}

// chargeBytes charges for a string of n bytes about to be built and enforces
// the string size limit.
func (e *Engine) chargeBytes(L *lua.LState, n int) {
	e.growBytes(L, 0, n)
}

// growBytes charges for adding n bytes to a string being built that has
// already have bytes, and enforces the string size limit on the total.
func (e *Engine) growBytes(L *lua.LState, have, n int) {
	if have+n > e.opt.MaxStringBytes || have+n < 0 {
		if e.run.fatal == nil {
			e.run.fatal = &fatalError{fmt.Sprintf("ERR script exceeded the maximum string size (%d bytes)", e.opt.MaxStringBytes)}
		}
		e.raiseFatal(L)
	}
	e.charge(L, int64(n/bytesPerUnit))
}

// raiseFatal raises the current fatal error.
func (e *Engine) raiseFatal(L *lua.LState) {
	L.Error(e.sb.fatalValue, 0)
}

// checkFatal re-raises a fatal error that a protected call caught.
func (e *Engine) checkFatal(L *lua.LState) {
	if e.run.fatal != nil {
		e.raiseFatal(L)
	}
}

// chargeCaught charges for an error caught by pcall, xpcall or
// coroutine.resume: unwinding and translating it is costly.
func (e *Engine) chargeCaught(L *lua.LState, obj lua.LValue) {
	e.charge(L, costError)
	e.chargeOverflow(L, obj)
}

// chargeOverflow charges for a caught stack overflow. Unwinding 2000
// frames costs gopher-lua time quadratic in the depth (it builds a stack
// trace), so a script may not repeat it more than a couple of times.
func (e *Engine) chargeOverflow(L *lua.LState, obj lua.LValue) {
	if s, ok := obj.(lua.LString); ok && strings.HasSuffix(string(s), "stack overflow") &&
		!strings.HasSuffix(string(s), "C stack overflow") {
		e.charge(L, costStackOverflow)
	}
}

// charged wraps a library function whose work grows with the length of its
// arguments (struct's format strings): it is charged by those lengths.
func (e *Engine) charged(f lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		n := 0
		for i := 1; i <= L.GetTop(); i++ {
			if s, ok := L.Get(i).(lua.LString); ok {
				n += len(s)
			}
		}
		e.charge(L, int64(n/bytesPerUnit+1))
		return f(L)
	}
}

// --- hidden functions ----------------------------------------------------------

func (e *Engine) hiddenBudget(L *lua.LState) int {
	e.charge(L, int64(L.CheckNumber(1)))
	return 0
}

var forNumMessages = [...]string{"", "'for' initial value must be a number", "'for' limit must be a number", "'for' step must be a number"}

func (e *Engine) hiddenForNum(L *lua.LState) int {
	which := int(L.Get(2).(lua.LNumber))
	switch v := L.Get(1).(type) {
	case lua.LNumber:
		L.Push(v)
		return 1
	case lua.LString:
		if f, ok := str2d(string(v)); ok {
			L.Push(lua.LNumber(f))
			return 1
		}
	}
	runError(L, forNumMessages[which])
	return 0
}

// describeArg returns the i-th name in a NUL separated description list.
func describeArg(desc string, i int) string {
	for ; i > 0; i-- {
		j := strings.IndexByte(desc, 0)
		if j < 0 {
			return ""
		}
		desc = desc[j+1:]
	}
	if j := strings.IndexByte(desc, 0); j >= 0 {
		desc = desc[:j]
	}
	return desc
}

// typeErrorAt raises Lua's "attempt to <op> <desc> (a <type> value)".
func typeErrorAt(L *lua.LState, v lua.LValue, op, desc string) {
	if desc != "" {
		runError(L, fmt.Sprintf("attempt to %s %s (a %s value)", op, desc, typeName(v)))
	}
	runError(L, fmt.Sprintf("attempt to %s a %s value", op, typeName(v)))
}

func isStrNum(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

func (e *Engine) hiddenConcat(L *lua.LState) int {
	top := L.GetTop()
	desc := string(L.Get(1).(lua.LString))
	n := top - 1
	if n == 2 {
		// fast path: two strings or numbers
		a, b := L.Get(2), L.Get(3)
		if isStrNum(a) && isStrNum(b) {
			L.Push(e.concatValues(L, []lua.LValue{a, b}))
			return 1
		}
	}
	vals := make([]lua.LValue, n)
	descs := make([]string, n)
	for i := 0; i < n; i++ {
		vals[i] = L.Get(i + 2)
		descs[i] = describeArg(desc, i)
	}
	for len(vals) > 1 {
		t := len(vals) - 1
		a, b := vals[t-1], vals[t]
		if !isStrNum(a) || !isStrNum(b) {
			if mm := binaryMeta(L, a, b, "__concat"); mm != lua.LNil {
				vals[t-1] = callMeta(L, mm, a, b)
				descs[t-1] = ""
				vals, descs = vals[:t], descs[:t]
				continue
			}
			bad, bd := a, descs[t-1]
			if isStrNum(a) {
				bad, bd = b, descs[t]
			}
			typeErrorAt(L, bad, "concatenate", bd)
		}
		k := t - 1
		for k > 0 && isStrNum(vals[k-1]) {
			k--
		}
		vals[k] = e.concatValues(L, vals[k:])
		descs[k] = ""
		vals, descs = vals[:k+1], descs[:k+1]
	}
	L.Push(vals[0])
	return 1
}

// concatValues joins strings and numbers (numbers as "%.14g").
func (e *Engine) concatValues(L *lua.LState, vals []lua.LValue) lua.LValue {
	var numBuf [32]byte
	size := 0
	for _, v := range vals {
		switch x := v.(type) {
		case lua.LString:
			size += len(x)
		case lua.LNumber:
			size += len(appendNumber(numBuf[:0], float64(x)))
		}
	}
	e.chargeBytes(L, size)
	var sb strings.Builder
	sb.Grow(size)
	for _, v := range vals {
		switch x := v.(type) {
		case lua.LString:
			sb.WriteString(string(x))
		case lua.LNumber:
			sb.Write(appendNumber(numBuf[:0], float64(x)))
		}
	}
	return lua.LString(sb.String())
}

// toNumber converts a value to a number as Lua's arithmetic does.
func toNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		return str2d(string(x))
	}
	return 0, false
}

var arithEvents = map[byte]string{'+': "__add", '-': "__sub", '*': "__mul", '/': "__div", '%': "__mod", '^': "__pow"}

func (e *Engine) hiddenArith(op byte) lua.LGFunction {
	event := arithEvents[op]
	return func(L *lua.LState) int {
		a, b := L.Get(1), L.Get(2)
		if s, ok := a.(lua.LString); ok && len(s) > 64 {
			e.charge(L, int64(len(s)/bytesPerUnit))
		}
		if s, ok := b.(lua.LString); ok && len(s) > 64 {
			e.charge(L, int64(len(s)/bytesPerUnit))
		}
		x, ok1 := toNumber(a)
		y, ok2 := toNumber(b)
		if ok1 && ok2 {
			L.Push(lua.LNumber(arith(op, x, y)))
			return 1
		}
		if mm := binaryMeta(L, a, b, event); mm != lua.LNil {
			L.Push(callMeta(L, mm, a, b))
			return 1
		}
		desc := string(L.Get(3).(lua.LString))
		if !ok1 {
			typeErrorAt(L, a, "perform arithmetic on", describeArg(desc, 0))
		}
		typeErrorAt(L, b, "perform arithmetic on", describeArg(desc, 1))
		return 0
	}
}

func arith(op byte, x, y float64) float64 {
	switch op {
	case '+':
		return x + y
	case '-':
		return x - y
	case '*':
		return x * y
	case '/':
		return x / y
	case '%':
		return x - math.Floor(x/y)*y
	case '^':
		return luaPow(x, y)
	}
	return 0
}

func (e *Engine) hiddenUnm(L *lua.LState) int {
	a := L.Get(1)
	if x, ok := toNumber(a); ok {
		L.Push(lua.LNumber(-x))
		return 1
	}
	if mm := binaryMeta(L, a, a, "__unm"); mm != lua.LNil {
		L.Push(callMeta(L, mm, a, a))
		return 1
	}
	typeErrorAt(L, a, "perform arithmetic on", string(L.Get(2).(lua.LString)))
	return 0
}

// hiddenTable records the size of a table built by a constructor with
// several named fields, for Lua 5.1's order of pairs.
func (e *Engine) hiddenTable(L *lua.LState) int {
	t := L.Get(1)
	if tb, ok := t.(*lua.LTable); ok {
		if e.run.hints == nil {
			e.run.hints = make(map[*lua.LTable]tableHint)
		}
		e.run.hints[tb] = tableHint{int(L.Get(2).(lua.LNumber)), int(L.Get(3).(lua.LNumber))}
	}
	L.Push(t)
	return 1
}

func (e *Engine) hiddenLen(L *lua.LState) int {
	switch x := L.Get(1).(type) {
	case lua.LString:
		L.Push(lua.LNumber(len(x)))
		return 1
	case *lua.LTable:
		L.Push(lua.LNumber(e.sb.length(x)))
		return 1
	}
	a := L.Get(1)
	if mm := binaryMeta(L, a, lua.LNil, "__len"); mm != lua.LNil {
		L.Push(callMeta(L, mm, a, lua.LNil))
		return 1
	}
	typeErrorAt(L, a, "get length of", string(L.Get(2).(lua.LString)))
	return 0
}

// binaryMeta finds a metamethod for a binary event in a's metatable, then
// in b's.
func binaryMeta(L *lua.LState, a, b lua.LValue, event string) lua.LValue {
	if mm := L.GetMetaField(a, event); mm != lua.LNil {
		return mm
	}
	return L.GetMetaField(b, event)
}

func callMeta(L *lua.LState, mm, a, b lua.LValue) lua.LValue {
	L.Push(mm)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	v := L.Get(-1)
	L.Pop(1)
	return v
}

// border returns a border of a table as Lua 5.1's '#' does: n such that
// t[n] is not nil and t[n+1] is nil (0 when t[1] is nil).
func border(t *lua.LTable) int {
	n := t.Len()
	if rawGetInt(t, n+1) == lua.LNil {
		return n
	}
	// unbound search, as luaH_getn does beyond the array part
	i, j := n+1, 2*(n+1)
	for rawGetInt(t, j) != lua.LNil {
		i = j
		if j > math.MaxInt32/2 {
			k := 1
			for rawGetInt(t, k) != lua.LNil {
				k++
			}
			return k - 1
		}
		j *= 2
	}
	for j-i > 1 {
		m := (i + j) / 2
		if rawGetInt(t, m) == lua.LNil {
			j = m
		} else {
			i = m
		}
	}
	return i
}
