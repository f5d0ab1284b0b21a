package luaexec

import (
	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// Libraries that keep state between calls.
//
// Redis 7.0 replicates what an FCALL did; deadbolt replicates the FCALL,
// and every node runs the function. A library's functions are closures
// over its chunk's locals, which live in each node's Lua state: a
// function that changed one (`local n = 0 ... n = n + 1`), or a table or
// closure held in one (`seen[k] = true`), would let a node that loaded
// the library again (a restart, a snapshot install, a node that joined
// later) answer otherwise than a node that kept its state, from the same
// log.
//
// So a call must not see anything an earlier call left. When a library
// loads, markStateful decides for each function, from the bytecode and
// from what the chunk left behind (both the same on every node, since a
// load sees nothing but redis), whether a call of it could change anything
// a later call sees. For most it cannot: they keep the closures of the
// load, as before, at no cost. A function that could ("stateful") runs,
// at each call, in a fresh copy: the library's chunk runs again and the
// call goes to that copy's function, so every call starts from the state
// right after a load, on every node, whatever the node's history. That
// costs one run of the chunk per call, for those functions only.
//
// A call can change state kept by the library in these ways only:
//   - assigning a variable the chunk made (SETUPVAL on an upvalue whose
//     cell outlives the call);
//   - changing a table the chunk left reachable (one that is not a
//     read-only proxy of the sandbox), which it can only do once it holds
//     the table in a register: a function that only reads fields of such
//     tables (`local C = {ttl = 30000} ... C.ttl`) keeps the fast path,
//     and one that could let such a table go anywhere else (an argument,
//     a return value, a value stored, a capture by a closure) or write into
//     it does not (tablesEscape);
//   - a coroutine or userdata the chunk left reachable: never let through;
//   - the globals and the libraries' environments are read-only, and the
//     engine's own state (math.random, cjson's settings) is in snapshots
//     (State), so neither counts here.
// The check is conservative: a library it calls stateful may not be, and
// only runs slower.

// markStateful decides, for each function lib registered, whether its
// calls run from a fresh copy (see above); top is the chunk's prototype.
// A function is judged by what it can reach alone: the functions of the
// library that need a fresh copy never change the kept closures, so a
// function that cannot change them itself always finds them as the load
// left them.
func (sb *sandbox) markStateful(lib *Library, top *lua.FunctionProto) {
	c := newChunkProtos(top)
	lib.stateful = false
	total := 0
	for _, info := range lib.Functions { // in registration order: see checkSteps
		f := lib.fns[info.Name]
		f.fresh = true
		if missStateForTest.Load() {
			f.fresh = false // the check's mistake, for callers' tests
		} else if total < checkSteps {
			c.steps = 0
			f.fresh = sb.keepsState(lib, f.fn, c)
			total += c.steps
			if f.fresh {
				total += fnCheckSteps - c.steps
			}
		}
		lib.stateful = lib.stateful || f.fresh
	}
}

// fnCheckSteps and checkSteps bound the work markStateful does for one
// function and for one library (values walked, instructions read), so
// that a library made to be slow to check (thousands of functions that
// each reach the same big helpers) costs a load no more than a few tens
// of milliseconds: a function whose check would take more, and the
// functions left once the library's steps are spent, are stateful, which
// is always safe. The count must be the same on every node, although a
// check stops at the first thing that makes a function stateful, after a
// number of steps that depends on the order it met things in (Go's map
// order, inside a table): a function that is not stateful has been read
// whole, in as many steps whatever the order, and one that is stateful
// counts as fnCheckSteps. Functions are checked in the library's order.
const (
	fnCheckSteps = 1 << 18
	checkSteps   = 1 << 21
)

// chunkProtos is a chunk's prototypes: the chunk's own and those nested
// in it, with the one each is nested in.
type chunkProtos struct {
	top     *lua.FunctionProto
	parents map[*lua.FunctionProto]*lua.FunctionProto
	steps   int // spent on the function being checked
}

// spend counts n steps of the function's check and reports whether it
// has taken too many (fnCheckSteps).
func (c *chunkProtos) spend(n int) bool {
	c.steps += n
	return c.steps > fnCheckSteps
}

func newChunkProtos(top *lua.FunctionProto) *chunkProtos {
	c := &chunkProtos{top: top, parents: map[*lua.FunctionProto]*lua.FunctionProto{}}
	var index func(p *lua.FunctionProto)
	index = func(p *lua.FunctionProto) {
		for _, child := range p.FunctionPrototypes {
			c.parents[child] = p
			index(child)
		}
	}
	index(top)
	return c
}

// callableProtos returns the prototypes whose code may run during a call: those
// of the closures a function reaches once the load is over (live), and
// those nested in them, whose closures a call may make. Other code (the
// chunk's own, a helper only the load called) never runs again.
func callableProtos(live map[*lua.FunctionProto]bool) []*lua.FunctionProto {
	var out []*lua.FunctionProto
	seen := map[*lua.FunctionProto]bool{}
	var add func(p *lua.FunctionProto)
	add = func(p *lua.FunctionProto) {
		if seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
		for _, child := range p.FunctionPrototypes {
			add(child)
		}
	}
	for p := range live { // any order: the callers only ask whether one of them does something
		add(p)
	}
	return out
}

// keepsState reports whether a call of fn, a function of lib, could
// change what a later call sees.
func (sb *sandbox) keepsState(lib *Library, fn *lua.LFunction, c *chunkProtos) bool {
	// the values the function reaches: closures, their upvalues, tables
	live := map[*lua.FunctionProto]bool{}
	kept := keptTables{}
	seen := map[*lua.LFunction]bool{}
	seenT := map[*lua.LTable]bool{}
	var mutable func(v lua.LValue) bool
	mutable = func(v lua.LValue) bool {
		if c.spend(1) {
			return true
		}
		switch x := v.(type) {
		case *lua.LNilType, lua.LBool, lua.LNumber, lua.LString:
			return false
		case *lua.LTable:
			if sb.isProtected(x) || seenT[x] {
				return false
			}
			seenT[x] = true
			if x.Metatable != nil && x.Metatable != lua.LNil {
				return true // a load cannot set one; indexing it could run code
			}
			bad := false
			x.ForEach(func(k, val lua.LValue) {
				if sb.writableTable(k) || sb.writableTable(val) {
					kept.nested = true
				}
				bad = bad || mutable(k) || mutable(val)
			})
			return bad
		case *lua.LFunction:
			if seen[x] {
				return false
			}
			if x.IsG { // a Go closure keeps state in its upvalues (string.gmatch: a userdata)
				seen[x] = true
				for _, uv := range x.Upvalues {
					if uv != nil && mutable(uv.Value()) {
						return true
					}
				}
				return false
			}
			seen[x] = true
			if x.Proto == nil || x.Env != lib.env {
				return true
			}
			live[x.Proto] = true
			for i, uv := range x.Upvalues {
				if uv == nil {
					continue
				}
				if sb.writableTable(uv.Value()) {
					kept.add(x.Proto, i)
				}
				if mutable(uv.Value()) {
					return true
				}
			}
			return false
		}
		return true // a coroutine, a userdata, a channel
	}
	if mutable(fn) {
		return true
	}
	// the code: an assignment to a variable that outlives the call, or a
	// kept table changed or let go
	code := callableProtos(live)
	return setsKeptUpvalue(c, live, code) || len(kept.up) > 0 && tablesEscape(c, live, code, &kept) ||
		c.steps > fnCheckSteps
}

// writableTable reports whether v is a table a script could write to.
func (sb *sandbox) writableTable(v lua.LValue) bool {
	t, ok := v.(*lua.LTable)
	return ok && !sb.isProtected(t)
}

// setsKeptUpvalue reports whether code, the prototypes that may run in a
// call (callableProtos), assigns an upvalue whose cell may outlive the call.
// live holds the prototypes of the closures the function reaches once
// the load is over.
//
// Every cell of such a closure outlives calls. A closure made during a
// call (its prototype not in live: none of its closures outlived the
// load) gets its cells when its CLOSURE instruction runs, one per
// upvalue: a local of the function running it (a MOVE after the
// CLOSURE), which is that call's own and new, or an upvalue of that
// function (a GETUPVAL), which outlives calls if that one does.
func setsKeptUpvalue(c *chunkProtos, live map[*lua.FunctionProto]bool, code []*lua.FunctionProto) bool {
	memo := map[protoUpvalue]bool{}
	var kept func(p *lua.FunctionProto, i int) bool
	kept = func(p *lua.FunctionProto, i int) bool {
		if live[p] {
			return true
		}
		parent := c.parents[p]
		if parent == nil {
			return false // the chunk has no upvalues
		}
		k := protoUpvalue{p, i}
		if v, ok := memo[k]; ok {
			return v
		}
		v := true // a capture not found: assume the worst
		c.spend(len(parent.Code))
		if capture, ok := closureCapture(parent, p, i); ok {
			switch opCode(capture) {
			case lua.OP_MOVE:
				v = false
			case lua.OP_GETUPVAL:
				v = kept(parent, opB(capture))
			}
		}
		memo[k] = v
		return v
	}
	for _, p := range code {
		if c.spend(len(p.Code)) {
			return true
		}
		for _, in := range p.Code {
			if opCode(in) == lua.OP_SETUPVAL && kept(p, opB(in)) {
				return true
			}
		}
	}
	return false
}

// freshFunction runs lib's chunk again into a copy of its own and returns
// the copy's function fname, for one call of a stateful library.
func (e *Engine) freshFunction(lib *Library, fname string) (*libFunction, resp.Reply) {
	fresh := &Library{Name: lib.Name, fns: make(map[string]*libFunction, len(lib.fns)), gen: e.gen}
	if r := e.runLibrary(lib, fresh); r.IsError() {
		return nil, r
	}
	e.sb.bindLibrary(e.L, fresh)
	f := fresh.fns[fname]
	if f == nil {
		return nil, resp.Err("ERR Function not found")
	}
	return f, resp.NilReply
}

// keptTables is what the load left of writable tables: which upvalues of
// which prototypes hold one in a closure that outlived the load, and
// whether one of those tables holds another (then a field read from one
// may be a kept table too).
type keptTables struct {
	up     map[protoUpvalue]bool
	nested bool
}

type protoUpvalue struct {
	p *lua.FunctionProto
	i int
}

func (k *keptTables) add(p *lua.FunctionProto, i int) {
	if k.up == nil {
		k.up = map[protoUpvalue]bool{}
	}
	k.up[protoUpvalue{p, i}] = true
}

// tablesEscape reports whether a function of the chunk top could change
// a kept table or let it go (see the top of this file).
//
// A register may hold a kept table once an instruction puts one there:
// GETUPVAL of an upvalue that may hold one (taintedUp), a field read from
// such a register when kept tables hold others, a MOVE from such a
// register. That is read per function, for all its code at once (a
// register that holds a kept table anywhere is suspect everywhere), so
// it errs only towards "stateful". Every read of a suspect register then
// counts as letting the table go, except: the table of a field read, a
// MOVE (followed above), a comparison for equality, a truth test, its
// length (the instrumentation's length function keeps nothing). A kept
// table has no metatable (a load cannot set one), so none of these runs
// code. A table let go may be changed by whatever got it; one written to
// (SETTABLE on it) is changed.
func tablesEscape(c *chunkProtos, live map[*lua.FunctionProto]bool, code []*lua.FunctionProto, kept *keptTables) bool {
	memo := map[protoUpvalue]bool{}
	// taintedUp: whether upvalue i of p may hold a kept table. Cells of
	// closures that outlived the load hold what the walk saw; a closure
	// made during a call gets a cell from its maker's upvalue (GETUPVAL
	// after the CLOSURE: as tainted as that one) or a register of its
	// maker (MOVE: the maker's code lets the table go, if it was one).
	var taintedUp func(p *lua.FunctionProto, i int) bool
	taintedUp = func(p *lua.FunctionProto, i int) bool {
		k := protoUpvalue{p, i}
		if v, ok := memo[k]; ok {
			return v
		}
		v := live[p] && kept.up[k]
		if parent := c.parents[p]; !v && parent != nil && parent != c.top {
			c.spend(len(parent.Code))
			if capture, ok := closureCapture(parent, p, i); ok && opCode(capture) == lua.OP_GETUPVAL {
				v = taintedUp(parent, opB(capture))
			} else if !ok {
				v = true // not found: assume the worst
			}
		}
		memo[k] = v
		return v
	}
	for _, p := range code {
		if registersLetGo(p, kept.nested, func(i int) bool { return taintedUp(p, i) }, c.spend) {
			return true
		}
	}
	return false
}

// closureCapture returns the instruction after parent's CLOSURE of p that
// gives p's upvalue i its cell (a MOVE or a GETUPVAL).
func closureCapture(parent, p *lua.FunctionProto, i int) (uint32, bool) {
	for pc, in := range parent.Code {
		if opCode(in) == lua.OP_CLOSURE && opBx(in) < len(parent.FunctionPrototypes) &&
			parent.FunctionPrototypes[opBx(in)] == p && pc+1+i < len(parent.Code) {
			return parent.Code[pc+1+i], true
		}
	}
	return 0, false
}

// registersLetGo reports whether p's code could change or let go a kept
// table (see tablesEscape); taintedUp tells which upvalues may hold one.
//
// Which registers may hold a kept table is followed along the code's
// control flow (a forward analysis; where paths meet, a register is
// suspect if it is on any of them): a register written by anything but
// GETUPVAL of a suspect upvalue, a field read from a suspect register
// (when kept tables hold others) or a MOVE from one holds something else
// from there on. A call's results and a loop's variables are not kept
// tables: a function could only hand one out after getting it, and
// giving it counts as letting it go, here or in that function's code.
func registersLetGo(p *lua.FunctionProto, nested bool, taintedUp func(int) bool, spend func(int) bool) bool {
	code := p.Code
	n := len(code)
	if n == 0 {
		return false
	}
	// captures returns how many instructions after pc are a CLOSURE's captures
	captures := func(pc int) int {
		in := code[pc]
		if opCode(in) == lua.OP_CLOSURE && opBx(in) < len(p.FunctionPrototypes) {
			return int(p.FunctionPrototypes[opBx(in)].NumUpvalues)
		}
		return 0
	}
	const maxSbx = (1<<18 - 1) >> 1
	// next returns the instructions that may run after pc
	next := func(pc int) []int {
		in := code[pc]
		jump := pc + 1 + opBx(in) - maxSbx
		switch opCode(in) {
		case lua.OP_JMP, lua.OP_FORPREP:
			return []int{jump}
		case lua.OP_FORLOOP:
			return []int{jump, pc + 1}
		case lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_TEST, lua.OP_TESTSET, lua.OP_TFORLOOP:
			return []int{pc + 1, pc + 2}
		case lua.OP_LOADBOOL:
			if opC(in) != 0 {
				return []int{pc + 2}
			}
		case lua.OP_RETURN:
			return nil
		case lua.OP_CLOSURE:
			return []int{pc + 1 + captures(pc)}
		}
		return []int{pc + 1}
	}
	// step applies the instruction at pc to the suspect registers t
	step := func(pc int, t *regSet) {
		in := code[pc]
		a, b, c := opA(in), opB(in), opC(in)
		switch opCode(in) {
		case lua.OP_GETUPVAL:
			t.put(a, taintedUp(b))
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			t.put(a, nested && t.has(b))
		case lua.OP_MOVE:
			t.put(a, t.has(b) && !lenArgument(p, pc))
		case lua.OP_MOVEN:
			t.put(a, t.has(b))
		case lua.OP_LOADNIL:
			for r := a; r <= b; r++ {
				t.put(r, false)
			}
		case lua.OP_SELF:
			t.put(a, false)
			t.put(a+1, false)
		case lua.OP_CALL:
			for r := a; r <= a+c-2; r++ {
				t.put(r, false)
			}
			if c == 0 {
				t.put(a, false)
			}
		case lua.OP_VARARG:
			for r := a; r <= a+b-2; r++ {
				t.put(r, false)
			}
		case lua.OP_FORLOOP, lua.OP_FORPREP:
			t.put(a, false)
			t.put(a+3, false)
		case lua.OP_TFORLOOP:
			for r := a + 3; r <= a+2+c; r++ {
				t.put(r, false)
			}
		case lua.OP_LOADK, lua.OP_LOADBOOL, lua.OP_GETGLOBAL, lua.OP_NEWTABLE, lua.OP_ADD, lua.OP_SUB,
			lua.OP_MUL, lua.OP_DIV, lua.OP_MOD, lua.OP_POW, lua.OP_UNM, lua.OP_NOT, lua.OP_LEN,
			lua.OP_CONCAT, lua.OP_TESTSET, lua.OP_CLOSURE:
			t.put(a, false)
		}
	}
	in := make([]regSet, n) // what may be suspect before each instruction
	reached := make([]bool, n)
	reached[0] = true
	work := []int{0}
	for len(work) > 0 {
		if spend(1) {
			return true
		}
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		t := in[pc]
		step(pc, &t)
		for _, q := range next(pc) {
			if q < 0 || q >= n {
				continue
			}
			if merged := in[q].union(t); !reached[q] || merged != in[q] {
				in[q], reached[q] = merged, true
				work = append(work, q)
			}
		}
	}
	if spend(n) {
		return true
	}
	for pc := 0; pc < n; pc++ {
		if reached[pc] && letsGo(p, pc, &in[pc], captures(pc)) {
			return true
		}
	}
	return false
}

// letsGo reports whether the instruction at pc reads a suspect register
// t other than as registersLetGo allows.
func letsGo(p *lua.FunctionProto, pc int, t *regSet, captures int) bool {
	if t.empty() {
		return false
	}
	in := p.Code[pc]
	a, b, c := opA(in), opB(in), opC(in)
	rk := func(x int) bool { return x&rkConstant == 0 && t.has(x) }
	span := func(a, n int) bool { // n < 0: from a to the top
		for r := a; r < regCount && (n < 0 || r < a+n); r++ {
			if t.has(r) {
				return true
			}
		}
		return false
	}
	switch opCode(in) {
	case lua.OP_MOVE, lua.OP_MOVEN, lua.OP_LOADK, lua.OP_LOADBOOL, lua.OP_LOADNIL,
		lua.OP_GETUPVAL, lua.OP_GETGLOBAL, lua.OP_NEWTABLE, lua.OP_JMP, lua.OP_CLOSE,
		lua.OP_VARARG, lua.OP_NOP, lua.OP_TEST, lua.OP_LEN, lua.OP_EQ:
		// followed, or a read that lets nothing go (equality and length
		// of a table without a metatable run no code)
		return false
	case lua.OP_CLOSURE:
		for k := 1; k <= captures && pc+k < len(p.Code); k++ {
			if capture := p.Code[pc+k]; opCode(capture) == lua.OP_MOVE && t.has(opB(capture)) {
				return true // captured: the closure may do anything with it
			}
		}
		return false
	case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
		return rk(c)
	case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
		return t.has(a) || rk(b) || rk(c)
	case lua.OP_ADD, lua.OP_SUB, lua.OP_MUL, lua.OP_DIV, lua.OP_MOD, lua.OP_POW, lua.OP_LT, lua.OP_LE:
		return rk(b) || rk(c)
	case lua.OP_UNM, lua.OP_NOT, lua.OP_TESTSET:
		return t.has(b)
	case lua.OP_SELF:
		return t.has(b) || rk(c)
	case lua.OP_SETGLOBAL, lua.OP_SETUPVAL:
		return t.has(a)
	case lua.OP_CONCAT:
		return span(b, c-b+1)
	case lua.OP_CALL, lua.OP_TAILCALL:
		if lenCall(p, pc) {
			return false // #x: the length function keeps nothing
		}
		return span(a, b) || b == 0 && span(a, -1)
	case lua.OP_RETURN:
		return span(a, b-1) || b == 0 && span(a, -1)
	case lua.OP_SETLIST:
		return span(a, b+1) || b == 0 && span(a, -1)
	case lua.OP_FORLOOP, lua.OP_FORPREP:
		return span(a, 4)
	case lua.OP_TFORLOOP:
		return span(a, 3)
	}
	return true // an instruction this list does not know: assume the worst
}

// lenCall reports whether the CALL at pc is the instrumentation's length
// function called on a value one instruction put in place (#x is
// \0len(x, desc)): GETUPVAL f \0len; <f+1 := x>; LOADK f+2 desc; CALL f 3 2.
func lenCall(p *lua.FunctionProto, pc int) bool {
	if pc < 3 {
		return false
	}
	up, arg, k, call := p.Code[pc-3], p.Code[pc-2], p.Code[pc-1], p.Code[pc]
	f := opA(call)
	if opCode(call) != lua.OP_CALL || opB(call) != 3 || opC(call) != 2 ||
		opCode(up) != lua.OP_GETUPVAL || opA(up) != f || opB(up) >= len(p.DbgUpvalues) || p.DbgUpvalues[opB(up)] != hidLen ||
		opCode(k) != lua.OP_LOADK || opA(k) != f+2 || opA(arg) != f+1 {
		return false
	}
	switch opCode(arg) {
	case lua.OP_MOVE, lua.OP_GETUPVAL, lua.OP_GETTABLE, lua.OP_GETTABLEKS:
		return true // writes f+1 alone
	}
	return false
}

// regSet is a set of registers (a Lua function has at most 256).
type regSet [4]uint64

const regCount = 256

func (s *regSet) has(r int) bool { return r >= 0 && r < regCount && s[r>>6]&(1<<(r&63)) != 0 }

func (s *regSet) put(r int, on bool) {
	if r < 0 || r >= regCount {
		return
	}
	if on {
		s[r>>6] |= 1 << (r & 63)
	} else {
		s[r>>6] &^= 1 << (r & 63)
	}
}

func (s regSet) union(o regSet) regSet {
	for i := range s {
		s[i] |= o[i]
	}
	return s
}

func (s *regSet) empty() bool { return *s == regSet{} }
