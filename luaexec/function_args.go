package luaexec

import lua "github.com/yuin/gopher-lua"

// The keys and arguments of FCALL, as the two tables a function gets.
//
// A script's KEYS and ARGV are kept from run to run (argTable): nothing a
// script does outlives its run. A function is a closure of its library,
// and may store the tables it is given where its next call, or another
// function of the library, would find them again (`local last; ... last
// = keys`); such a function runs each call in a fresh copy of its library
// (function_state.go), so a later call cannot see them, but as a second
// guard a function gets new tables on every call, unless its code shows
// that it cannot let them go: then no Lua code can ever reach a table it
// was given once the call is over, and refilling the same table for the
// next call (as argTable does, only while the table is as the call got
// it) is indistinguishable from making a new one.
//
// The proof is read from the function's bytecode when it is registered,
// so it is the same on every node and for every call. A parameter lives
// in its own register for the whole function (gopher-lua, like Lua 5.1,
// gives a function's parameters the first registers and never reuses
// them for temporaries). The table cannot leave the call if that register
// is read only as the table of an indexing (`keys[i]`, `keys[i] = v`) or
// of a length (`#keys`, which the instrumentation turns into a call of its
// hidden length function, lenArgument): every other read (a move to
// another register,
// which is also how a nested function captures it as an upvalue, an
// argument or return value, a comparison, a store into a global, an
// upvalue or another table, a key) counts as an escape. Writes to the
// register are harmless: after `keys = {}` the register no longer holds
// the table. Indexing cannot run Lua code on the table's behalf: the
// table has no metatable (setting one needs the table as an argument, an
// escape), and `#` ignores metatables in Lua 5.1. A parameter that is not
// named is unreachable unless the function is variadic (`...`).
//
// Functions that fail the proof (Go functions, variadic functions, those
// that pass their keys on to a helper) get new tables each call, as
// before; their strings still come from the argument cache.

// libFunction is one registered function.
type libFunction struct {
	fn      *lua.LFunction
	private [2]bool     // whether the keys, the args table cannot outlive a call
	args    [2]argTable // the tables of the last call, and their strings
	fresh   bool        // each call runs in a fresh copy of the library (function_state.go)
}

// newLibFunction reads fn's bytecode for private parameters when prove
// is set (a function used for one call only does not need the proof).
func newLibFunction(fn *lua.LFunction, prove bool) *libFunction {
	f := &libFunction{fn: fn}
	if prove && !fn.IsG && fn.Proto != nil {
		f.private = privateParams(fn.Proto)
	}
	return f
}

// tables returns the tables a call passes, for keys and args: refilled
// from the last call when the function cannot have kept them, new ones
// otherwise.
func (f *libFunction) tables(L *lua.LState, sb *sandbox, keys, args [][]byte) (*lua.LTable, *lua.LTable) {
	sb.argStrings(&f.args, keys, args)
	for i := range f.args {
		if !f.private[i] {
			f.args[i].t = nil // the function may still hold it
		}
	}
	return f.args[0].table(L), f.args[1].table(L)
}

const rkConstant = 1 << 8 // an RK operand with this bit names a constant

// privateParams reports, for a function's first two parameters, whether
// the value passed for it cannot outlive a call (see above).
func privateParams(p *lua.FunctionProto) (private [2]bool) {
	np := int(p.NumParameters)
	var escaped [2]bool
	for i := range escaped {
		if i >= np {
			escaped[i] = p.IsVarArg != 0 // in '...'
		}
	}
	// reg marks a read of register r that may let its value go.
	reg := func(r int) {
		if r >= 0 && r < np && r < len(escaped) {
			escaped[r] = true
		}
	}
	rk := func(x int) {
		if x&rkConstant == 0 {
			reg(x)
		}
	}
	// span marks n registers from a on (n < 0: all from a to the top).
	span := func(a, n int) {
		for r := a; r < len(escaped) && (n < 0 || r < a+n); r++ {
			reg(r)
		}
	}
	for pc, in := range p.Code {
		a, b, c := opA(in), opB(in), opC(in)
		switch opCode(in) {
		case lua.OP_LOADK, lua.OP_LOADBOOL, lua.OP_LOADNIL, lua.OP_GETUPVAL, lua.OP_GETGLOBAL,
			lua.OP_NEWTABLE, lua.OP_JMP, lua.OP_CLOSE, lua.OP_CLOSURE, lua.OP_VARARG, lua.OP_NOP:
			// no register read (a closure's captures are the MOVE
			// instructions after it)
		case lua.OP_LEN:
			// the length of the table: harmless
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			rk(c) // the table (b) is harmless, not the key
		case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
			rk(b) // the table (a) is harmless: argTable sees what changed
			rk(c)
		case lua.OP_MOVE:
			if !lenArgument(p, pc) {
				reg(b)
			}
		case lua.OP_MOVEN, lua.OP_UNM, lua.OP_NOT, lua.OP_TESTSET:
			reg(b)
		case lua.OP_SELF:
			reg(b)
			rk(c)
		case lua.OP_SETGLOBAL, lua.OP_SETUPVAL, lua.OP_TEST:
			reg(a)
		case lua.OP_ADD, lua.OP_SUB, lua.OP_MUL, lua.OP_DIV, lua.OP_MOD, lua.OP_POW,
			lua.OP_EQ, lua.OP_LT, lua.OP_LE:
			rk(b)
			rk(c)
		case lua.OP_CONCAT:
			span(b, c-b+1)
		case lua.OP_CALL, lua.OP_TAILCALL: // the function, its arguments
			span(a, b)
			if b == 0 {
				span(a, -1)
			}
		case lua.OP_RETURN:
			span(a, b-1)
			if b == 0 {
				span(a, -1)
			}
		case lua.OP_SETLIST: // the table, its values
			span(a, b+1)
			if b == 0 {
				span(a, -1)
			}
		case lua.OP_FORLOOP, lua.OP_FORPREP, lua.OP_TFORLOOP:
			span(a, 4)
		default:
			// an instruction this list does not know: assume the worst
			span(0, -1)
		}
	}
	for i := range private {
		private[i] = !escaped[i]
	}
	return private
}

// lenArgument reports whether the MOVE at pc only passes a value to the
// instrumentation's length function (#x is \0len(x, desc), which keeps
// nothing): GETUPVAL f \0len; MOVE f+1 x; LOADK f+2 desc; CALL f 3 2.
func lenArgument(p *lua.FunctionProto, pc int) bool {
	if pc < 1 || pc+2 >= len(p.Code) {
		return false
	}
	up, mv, k, call := p.Code[pc-1], p.Code[pc], p.Code[pc+1], p.Code[pc+2]
	f := opA(up)
	return opCode(up) == lua.OP_GETUPVAL && opB(up) < len(p.DbgUpvalues) && p.DbgUpvalues[opB(up)] == hidLen &&
		opA(mv) == f+1 && opCode(k) == lua.OP_LOADK && opA(k) == f+2 &&
		opCode(call) == lua.OP_CALL && opA(call) == f && opB(call) == 3
}
