package luaexec

import (
	"reflect"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 names values in error messages ("attempt to index local 'x' (a
// nil value)", "bad argument #1 to 'rep'") by looking at the bytecode of the
// running function. gopher-lua compiles to nearly the same instruction set
// but does not look; this file does it the Lua 5.1 way (ldebug.c's
// getobjname) on gopher-lua's bytecode.
//
// gopher-lua does not export the current instruction of a frame, so it is
// read with reflection (read only, and only on the error path). If a future
// gopher-lua changes its internals, names are simply left out.

// Instruction fields, as gopher-lua lays them out (opcode in the top six
// bits, then A, C and B).
func opCode(i uint32) int { return int(i >> 26) }
func opA(i uint32) int    { return int(i>>18) & 0xff }
func opB(i uint32) int    { return int(i & 0x1ff) }
func opC(i uint32) int    { return int(i>>9) & 0x1ff }
func opBx(i uint32) int   { return int(i & 0x3ffff) }

const opBitRK = 1 << 8

// frame is a Lua function's activation seen from Go.
type frame struct {
	proto *lua.FunctionProto
	pc    int // index of the current instruction (the one that failed)
	base  int // register base
	dbg   *lua.Debug
}

// luaFrame returns the Lua frame at the given level, if it is one.
func luaFrame(L *lua.LState, level int) (*frame, bool) {
	dbg, ok := L.GetStack(level)
	if !ok {
		return nil, false
	}
	fv, err := L.GetInfo("f", dbg, lua.LNil)
	if err != nil {
		return nil, false
	}
	fn, ok := fv.(*lua.LFunction)
	if !ok || fn.IsG || fn.Proto == nil {
		return nil, false
	}
	fr := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if !fr.IsValid() || fr.Kind() != reflect.Pointer || fr.IsNil() {
		return nil, false
	}
	pcv := fr.Elem().FieldByName("Pc")
	basev := fr.Elem().FieldByName("LocalBase")
	if !pcv.IsValid() || !basev.IsValid() || pcv.Kind() != reflect.Int || basev.Kind() != reflect.Int {
		return nil, false
	}
	pc := int(pcv.Int()) - 1
	if pc < 0 || pc >= len(fn.Proto.Code) {
		return nil, false
	}
	return &frame{proto: fn.Proto, pc: pc, base: int(basev.Int()), dbg: dbg}, true
}

var luaTypes = map[reflect.Type]string{
	reflect.TypeOf(lua.LNumber(0)):    "number",
	reflect.TypeOf(lua.LString("")):   "string",
	reflect.TypeOf(lua.LBool(false)):  "boolean",
	reflect.TypeOf(lua.LNil):          "nil",
	reflect.TypeOf(&lua.LTable{}):     "table",
	reflect.TypeOf(&lua.LFunction{}):  "function",
	reflect.TypeOf(&lua.LUserData{}):  "userdata",
	reflect.TypeOf(&lua.LState{}):     "thread",
	reflect.TypeOf(lua.LChannel(nil)): "userdata",
}

// registerType returns the Lua type of a register of the frame.
func registerType(L *lua.LState, f *frame, reg int) (string, bool) {
	rg := reflect.ValueOf(L).Elem().FieldByName("reg")
	if !rg.IsValid() || rg.Kind() != reflect.Pointer || rg.IsNil() {
		return "", false
	}
	arr := rg.Elem().FieldByName("array")
	if !arr.IsValid() || arr.Kind() != reflect.Slice {
		return "", false
	}
	i := f.base + reg
	if i < 0 || i >= arr.Len() {
		return "", false
	}
	v := arr.Index(i)
	if v.Kind() != reflect.Interface {
		return "", false
	}
	if v.IsNil() {
		return "nil", true
	}
	t, ok := luaTypes[v.Elem().Type()]
	return t, ok
}

// localName returns the name of the n-th (0-based) local active at pc.
func localName(p *lua.FunctionProto, n, pc int) string {
	for _, l := range p.DbgLocals {
		if l.StartPc > pc {
			break
		}
		if pc < l.EndPc {
			if n == 0 {
				return l.Name
			}
			n--
		}
	}
	return ""
}

func constName(p *lua.FunctionProto, rk int) string {
	if rk&opBitRK != 0 {
		if k := rk &^ opBitRK; k < len(p.Constants) {
			if s, ok := p.Constants[k].(lua.LString); ok {
				return string(s)
			}
		}
	}
	return "?"
}

// writesA reports whether an instruction stores into its register A.
func writesA(i uint32) bool {
	switch opCode(i) {
	case lua.OP_SETGLOBAL, lua.OP_SETUPVAL, lua.OP_SETTABLE, lua.OP_SETTABLEKS, lua.OP_JMP,
		lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_TEST, lua.OP_TAILCALL, lua.OP_RETURN,
		lua.OP_FORLOOP, lua.OP_FORPREP, lua.OP_TFORLOOP, lua.OP_SETLIST, lua.OP_CLOSE, lua.OP_NOP:
		return false
	}
	return true
}

// objName is getobjname: how the value in register reg at pc came to be.
// kind is "local", "global", "field", "upvalue", "method" or "".
func objName(p *lua.FunctionProto, pc, reg int) (kind, name string) {
	for depth := 0; depth < 16; depth++ {
		n := localName(p, reg, pc)
		if n != "" && n[0] != 0 && !(n[0] == '(' && forCallSetup(p, pc)) {
			return "local", n
		}
		switch n {
		case hoistedLocals[0], hoistedLocals[1]: // KEYS, ARGV (hoistedName)
			return "global", n[1:]
		case hoistedLocals[2], hoistedLocals[3]: // redis.call, redis.pcall
			return "field", n[len("\x00redis."):]
		}
		// the last instruction before pc that stored into reg
		var ins uint32
		found := false
		at := 0
		for j := pc - 1; j >= 0; j-- {
			i := p.Code[j]
			if !writesA(i) {
				continue
			}
			a := opA(i)
			if opCode(i) == lua.OP_LOADNIL {
				if a <= reg && reg <= opB(i) {
					ins, found, at = i, true, j
					break
				}
				continue
			}
			if a == reg {
				ins, found, at = i, true, j
				break
			}
		}
		if !found {
			return "", ""
		}
		switch opCode(ins) {
		case lua.OP_GETGLOBAL:
			if bx := opBx(ins); bx < len(p.Constants) {
				if s, ok := p.Constants[bx].(lua.LString); ok {
					return "global", string(s)
				}
			}
			return "", ""
		case lua.OP_MOVE:
			if b := opB(ins); b < opA(ins) {
				reg = b
				continue
			} else if b == opA(ins) && libraryHoistedAt(p, at, reg) {
				// "(\0redis.call or redis.call)" ends with a move of the
				// register to itself: name it as the lookup it stands for
				pc = at
				continue
			}
			return "", ""
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			return "field", constName(p, opC(ins))
		case lua.OP_GETUPVAL:
			if b := opB(ins); b < len(p.DbgUpvalues) {
				return "upvalue", p.DbgUpvalues[b]
			}
			return "upvalue", "?"
		case lua.OP_SELF:
			return "method", constName(p, opC(ins))
		}
		return "", ""
	}
	return "", ""
}

// libraryHoistedAt reports whether the move to itself of register reg at
// pc ends a read that libraryHoisted rewrote, as gopher-lua compiles it:
//
//	GETUPVAL reg \0redis.call; TESTSET reg reg; JMP past pc; <the lookup>; MOVE reg reg
func libraryHoistedAt(p *lua.FunctionProto, pc, reg int) bool {
	for j := pc - 1; j >= 0 && j >= pc-8; j-- {
		i := p.Code[j]
		if opCode(i) != lua.OP_GETUPVAL || opA(i) != reg {
			continue
		}
		if b := opB(i); b >= len(p.DbgUpvalues) || (p.DbgUpvalues[b] != libraryLocals[0] && p.DbgUpvalues[b] != libraryLocals[1]) {
			return false
		}
		if j+2 >= pc {
			return false
		}
		test, jmp := p.Code[j+1], p.Code[j+2]
		if opCode(test) != lua.OP_TESTSET || opA(test) != reg || opB(test) != reg || jumpTarget(jmp, j+2) != pc+1 {
			return false
		}
		// Alone: no other jump lands after it (as the end of an enclosing
		// "a or ..." would), or the value may come from elsewhere, and
		// the code without the rewrite names none.
		for k, i := range p.Code {
			if k != j+2 && jumpTarget(i, k) == pc+1 {
				return false
			}
		}
		return true
	}
	return false
}

// jumpTarget is where the JMP at pc goes, or -1 for another instruction.
func jumpTarget(i uint32, pc int) int {
	const maxSbx = (1<<18 - 1) >> 1 // gopher-lua's sBx bias
	if opCode(i) != lua.OP_JMP {
		return -1
	}
	return pc + 1 + opBx(i) - maxSbx
}

// forCallSetup reports whether the instruction at pc may run before the
// hidden locals of a for loop are active in Lua 5.1 (gopher-lua declares
// them before it evaluates the loop's expressions).
func forCallSetup(p *lua.FunctionProto, pc int) bool {
	switch opCode(p.Code[pc]) {
	case lua.OP_FORLOOP, lua.OP_FORPREP:
		return false
	}
	return true
}

func describeObj(kind, name string) string {
	if kind == "" {
		return ""
	}
	return kind + " '" + cstr(name) + "'"
}

// callSiteName is the name Lua 5.1 gives the Go function running at level
// 0, from the instruction that called it (getfuncname); method reports a
// call written obj:name(...).
func callSiteName(L *lua.LState) (name string, method bool) {
	f, ok := luaFrame(L, 1)
	if !ok {
		return "?", false
	}
	i := f.proto.Code[f.pc]
	switch opCode(i) {
	case lua.OP_CALL, lua.OP_TAILCALL, lua.OP_TFORLOOP:
	default:
		return "?", false
	}
	kind, n := objName(f.proto, f.pc, opA(i))
	if kind == "" {
		return "?", false
	}
	return n, kind == "method"
}

// translateVMError rewrites an error that gopher-lua's VM raised in the Lua
// frame at the given level into Lua 5.1's words. Other messages come back
// unchanged.
func translateVMError(L *lua.LState, level int, msg string) string {
	if _, ok := luaFrame(L, level); !ok {
		return msg
	}
	prefix, body := splitPosition(msg)
	switch {
	case strings.HasPrefix(body, "attempt to index a non-table object("):
		typ := body[len("attempt to index a non-table object("):]
		if j := strings.IndexByte(typ, ')'); j >= 0 {
			typ = typ[:j]
		}
		desc := ""
		if f, ok := luaFrame(L, level); ok {
			i := f.proto.Code[f.pc]
			reg := -1
			switch opCode(i) {
			case lua.OP_GETTABLE, lua.OP_GETTABLEKS, lua.OP_SELF:
				reg = opB(i)
			case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
				reg = opA(i)
			}
			if reg >= 0 {
				desc = describeObj(objName(f.proto, f.pc, reg))
			}
		}
		return prefix + typeMessage("index", desc, typ)
	case body == "attempt to call a non-function object":
		typ, desc := "nil", ""
		if f, ok := luaFrame(L, level); ok {
			i := f.proto.Code[f.pc]
			switch opCode(i) {
			case lua.OP_CALL, lua.OP_TAILCALL, lua.OP_TFORLOOP:
				desc = describeObj(objName(f.proto, f.pc, opA(i)))
				if t, ok := registerType(L, f, opA(i)); ok {
					typ = t
				}
			}
		}
		return prefix + typeMessage("call", desc, typ)
	case strings.HasPrefix(body, "attempt to compare "):
		rest := body[len("attempt to compare "):]
		if a, b, ok := strings.Cut(rest, " with "); ok && a == b {
			return prefix + "attempt to compare two " + a + " values"
		}
	case body == "lua callstack overflow":
		return prefix + "stack overflow"
	}
	return msg
}

func typeMessage(op, desc, typ string) string {
	if desc != "" {
		return "attempt to " + op + " " + desc + " (a " + typ + " value)"
	}
	return "attempt to " + op + " a " + typ + " value"
}

// splitPosition separates "chunk:line: " from a message.
func splitPosition(msg string) (string, string) {
	// the chunk name may itself contain ':' ([string "a:b"]), so look for
	// ":<digits>: "
	for i := 0; i < len(msg); i++ {
		if msg[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		if j > i+1 && j+1 < len(msg) && msg[j] == ':' && msg[j+1] == ' ' {
			return msg[:j+2], msg[j+2:]
		}
	}
	return "", msg
}
