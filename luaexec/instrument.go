package luaexec

import (
	"sort"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// The instrumentation pass rewrites a parsed script before gopher-lua
// compiles it, so that
//
//   - every loop iteration and every function call charges the work budget
//     (a call to a hidden function at the start of each loop body and each
//     function body, with a cost computed from the size of that body);
//   - string concatenation goes through a hidden function that formats
//     numbers as Lua 5.1 does, charges by the length of the result and
//     enforces the string size limit;
//   - arithmetic whose operands are not known to be numbers, the length
//     operator, '%' and '^' go through hidden functions with Lua 5.1's exact
//     string coercion, results and error messages;
//   - numeric 'for' bounds go through a hidden coercion function, so that
//     numeric strings are accepted as in Lua 5.1;
//   - table constructors with several named fields report their size, for
//     Lua 5.1's order of pairs (ltable.go);
//   - multiple assignments to locals compute every value before storing
//     any (gopher-lua would break "a, b = b, a");
//   - the main chunk reads KEYS, ARGV, redis.call and redis.pcall once,
//     into hidden locals (see hoistedName).
//
// Hidden functions live in the script's environment table under names that
// contain a NUL byte: no Lua identifier can spell them, and the global table
// that scripts see (_G) does not contain them. Each chunk copies the ones it
// uses into locals of the same names when it starts.
//
// Cost model (units are abstract and deterministic; see the constants
// below): a loop iteration or a function call costs a base plus the static
// cost of its body (statements, calls, table stores, constructors,
// closures), whatever branch runs; library functions charge for the bytes
// and elements they produce or scan; each redis.call charges a fixed amount
// plus its bytes; a caught error charges too. Work the VM does on very long
// strings (hashing a long key, comparing two long strings) is not counted.

// Names of the hidden functions.
const (
	hidBudget = "\x00budget"
	hidConcat = "\x00concat"
	hidForNum = "\x00fornum"
	hidLen    = "\x00len"
	hidUnm    = "\x00unm"
	hidTable  = "\x00table"
	hidArgs   = "\x00args"  // KEYS, ARGV, redis.call, redis.pcall: see hoistedName
	hidArith  = "\x00arith" // prefix; the operator character follows
)

// Costs. A unit is roughly one VM instruction (a few nanoseconds); things
// that allocate cost more, so that the default budget also bounds the
// memory a script can hold (a few hundred MB at worst).
const (
	costLoopBase    = 4   // each loop iteration
	costFuncBase    = 8   // each function call
	costStmt        = 2   // each statement of a body
	costCall        = 4   // each call expression
	costIndexStore  = 8   // each store into a table field
	costTable       = 40  // each table constructor
	costTableField  = 4   // each field in a constructor
	costClosure     = 40  // each function created
	costConcat      = 4   // each concatenation (plus its bytes)
	costRedisCall   = 100 // each redis.call/pcall (plus its bytes)
	costCompileByte = 1   // each byte compiled by loadstring
	bytesPerUnit    = 4   // strings built: one unit per this many bytes

	costStackOverflow = 500_000 // a stack overflow caught by pcall (unwinding 2000 frames)
	costOrderKey      = 20      // each key when pairs starts over a table
	costError         = 100     // each error caught by pcall
)

type instrumenter struct {
	p       *parsed
	numMemo map[ast.Expr]bool
	used    map[string]bool // hidden functions the chunk calls
	hoist   bool            // read hoistable globals through hidden locals
	lib     bool            // a library: its functions read redis.call/pcall through upvalues (libraryHoisted)
	hoisted map[string]bool // hidden locals the chunk reads
	depth   int             // nesting of the function bodies being rewritten
}

// instrument rewrites the chunk in place and returns its statements and the
// static cost of running the main chunk once. The chunk starts by copying
// the hidden functions it uses into locals (upvalues of its functions),
// which is cheaper than a global lookup on every call, and, when hoist is
// set, the globals of hoistedName too. When chargeMain is set, the chunk
// also charges its own cost when it runs. The cost does not depend on
// hoist.
func instrument(p *parsed, chargeMain, hoist bool) ([]ast.Stmt, int64) {
	return (&instrumenter{p: p, hoist: hoist}).run(chargeMain)
}

// instrumentLibrary is instrument for a function library's chunk (charged
// when it runs, no hoisting in its body); fast is libraryHoisted.
func instrumentLibrary(p *parsed, fast bool) ([]ast.Stmt, int64) {
	return (&instrumenter{p: p, lib: fast}).run(true)
}

func (in *instrumenter) run(chargeMain bool) ([]ast.Stmt, int64) {
	p := in.p
	in.used, in.hoisted = make(map[string]bool), make(map[string]bool)
	in.inferNumbers()
	in.numMemo = make(map[ast.Expr]bool)
	cost := in.blockCost(p.stmts)
	stmts := in.block(p.stmts)
	if chargeMain {
		stmts = append([]ast.Stmt{in.chargeStmt(int(cost)+costFuncBase, 1)}, stmts...)
	}
	if in.lib && len(in.hoisted) > 0 {
		stmts = append([]ast.Stmt{localDecl(libraryLocals[:], nil)}, stmts...)
	} else if len(in.hoisted) > 0 {
		call := in.hiddenCall(hidArgs, 1)
		call.AdjustRet = false // all of its values
		stmts = append([]ast.Stmt{localDecl(hoistedLocals[:], []ast.Expr{call})}, stmts...)
	}
	if len(in.used) > 0 {
		names := sortedNames(in.used)
		exprs := make([]ast.Expr, len(names))
		for i, n := range names {
			exprs[i] = identAt(n, 1)
		}
		stmts = append([]ast.Stmt{localDecl(names, exprs)}, stmts...)
	}
	return stmts, int64(cost)
}

func sortedNames(set map[string]bool) []string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func identAt(name string, line int) *ast.IdentExpr {
	id := &ast.IdentExpr{Value: name}
	id.SetLine(line)
	id.SetLastLine(line)
	return id
}

// localDecl is "local names = exprs" on the first line.
func localDecl(names []string, exprs []ast.Expr) ast.Stmt {
	decl := &ast.LocalAssignStmt{Names: names, Exprs: exprs}
	decl.SetLine(1)
	decl.SetLastLine(1)
	return decl
}

// hoistedLocals are the hidden locals that hold KEYS, ARGV, redis.call and
// redis.pcall, in the order \x00args returns them.
var hoistedLocals = [...]string{"\x00KEYS", "\x00ARGV", "\x00redis.call", "\x00redis.pcall"}

// hoistedName returns the hidden local that stands for e, if e is one of
// the globals every lock script reads again and again: KEYS, ARGV,
// redis.call, redis.pcall. Reading them through gopher-lua costs three
// table lookups each (the environment, its __index, the globals), and two
// more for a field of the read-only redis table (the proxy's __index, the
// real table). Instead, a chunk that reads any of them starts with
//
//	local \0KEYS, \0ARGV, \0redis.call, \0redis.pcall = \0args()
//
// (one lookup, one call) and reads the locals. No script can change a
// global, nor a field of a library table, so the values at the start are
// the values every later read would get, and they always exist (setArgs
// sets KEYS and ARGV before every run). Error messages that name them do
// not change: objName names the hidden locals as Lua 5.1 names the
// expressions they replace ("global 'KEYS'", "field 'call'"), and the
// descriptions instrumentation computes come from the original
// expressions.
//
// Only reads in the chunk's own body are replaced (not in nested
// functions, which would see the locals as upvalues), and never an
// assignment's target (see target), so that "KEYS = 1" still fails.
func (in *instrumenter) hoistedName(e ast.Expr) (string, bool) {
	if !in.hoist || in.depth > 0 {
		return "", false
	}
	switch x := e.(type) {
	case *ast.IdentExpr:
		if (x.Value == "KEYS" || x.Value == "ARGV") && in.p.names[x] == nil {
			return "\x00" + x.Value, true
		}
	case *ast.AttrGetExpr:
		id, ok := x.Object.(*ast.IdentExpr)
		k, ok2 := x.Key.(*ast.StringExpr)
		if ok && ok2 && id.Value == "redis" && in.p.names[id] == nil && (k.Value == "call" || k.Value == "pcall") {
			return "\x00redis." + k.Value, true
		}
	}
	return "", false
}

// libraryLocals are the hidden locals of a library's chunk that hold
// redis.call and redis.pcall for its functions (libraryHoisted).
var libraryLocals = [...]string{hoistedLocals[2], hoistedLocals[3]}

// libraryHoisted rewrites a read of redis.call or redis.pcall (the global
// redis) inside a library's functions as
//
//	(\0redis.call or redis.call)
//
// where \0redis.call is a local of the library's chunk, declared (nil) at
// its start, that the functions see as an upvalue. Once the load is over,
// LoadLibrary stores in it what redis.call is from then on (bindLibrary),
// and every later read costs one upvalue read instead of four table
// lookups (the library's environment, its __index, the read-only redis
// table's proxy and its __index). No script can change a global nor a
// field of redis, so the value stored is what the lookup would find. While
// the library loads, the local is nil and the original lookup runs, with
// its error ("Script attempted to access nonexistent global variable
// 'call'") before any argument is evaluated, as before; error messages
// that name the value name the lookup (objName reads the last instruction
// that stored into the register), and costs are computed from the code
// before any rewriting.
func (in *instrumenter) libraryHoisted(e ast.Expr) (ast.Expr, bool) {
	if !in.lib || in.depth == 0 {
		return nil, false
	}
	x, ok := e.(*ast.AttrGetExpr)
	if !ok {
		return nil, false
	}
	id, ok := x.Object.(*ast.IdentExpr)
	k, ok2 := x.Key.(*ast.StringExpr)
	if !ok || !ok2 || id.Value != "redis" || in.p.names[id] != nil || (k.Value != "call" && k.Value != "pcall") {
		return nil, false
	}
	name := "\x00redis." + k.Value
	in.hoisted[name] = true
	or := &ast.LogicalOpExpr{Operator: "or", Lhs: identAt(name, x.Line()), Rhs: x}
	or.SetLine(x.Line())
	or.SetLastLine(x.LastLine())
	return or, true
}

// --- number inference ----------------------------------------------------------

// inferNumbers decides which locals always hold numbers: those whose every
// assignment is a number, assuming the same of the others (greatest fixed
// point).
func (in *instrumenter) inferNumbers() {
	locals := in.p.locals
	for _, v := range locals {
		v.numeric = 1
	}
	for changed := true; changed; {
		changed = false
		for _, v := range locals {
			if v.numeric != 1 {
				continue
			}
			for _, a := range v.assigns {
				if a == nil || !in.isNum(a) {
					v.numeric = 0
					changed = true
					break
				}
			}
		}
	}
}

// isNum reports whether an (original, not yet rewritten) expression always
// evaluates to a number.
func (in *instrumenter) isNum(e ast.Expr) bool {
	if in.numMemo != nil {
		if v, ok := in.numMemo[e]; ok {
			return v
		}
	}
	var r bool
	switch x := e.(type) {
	case *ast.NumberExpr:
		r = true
	case *ast.IdentExpr:
		v := in.p.names[x]
		r = v != nil && v.numeric == 1
	case *ast.ArithmeticOpExpr:
		r = in.isNum(x.Lhs) && in.isNum(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		r = in.isNum(x.Expr)
	case *ast.UnaryLenOpExpr:
		r = true
	case *ast.LogicalOpExpr:
		r = in.isNum(x.Lhs) && in.isNum(x.Rhs)
	}
	if in.numMemo != nil {
		in.numMemo[e] = r
	}
	return r
}

// --- costs ---------------------------------------------------------------------

func (in *instrumenter) blockCost(stmts []ast.Stmt) int {
	c := 0
	for _, s := range stmts {
		c += in.stmtCost(s)
	}
	return c
}

func (in *instrumenter) stmtCost(s ast.Stmt) int {
	c := costStmt
	switch x := s.(type) {
	case *ast.AssignStmt:
		for _, l := range x.Lhs {
			if _, ok := l.(*ast.AttrGetExpr); ok {
				c += costIndexStore
			}
			c += in.exprCost(l)
		}
		c += in.exprsCost(x.Rhs)
	case *ast.LocalAssignStmt:
		c += in.exprsCost(x.Exprs)
	case *ast.FuncCallStmt:
		c += in.exprCost(x.Expr)
	case *ast.DoBlockStmt:
		c += in.blockCost(x.Stmts)
	case *ast.WhileStmt:
		c += in.exprCost(x.Condition)
	case *ast.RepeatStmt:
	case *ast.IfStmt:
		c += in.exprCost(x.Condition) + in.blockCost(x.Then) + in.blockCost(x.Else)
	case *ast.NumberForStmt:
		c += in.exprCost(x.Init) + in.exprCost(x.Limit)
		if x.Step != nil {
			c += in.exprCost(x.Step)
		}
	case *ast.GenericForStmt:
		c += in.exprsCost(x.Exprs)
	case *ast.FuncDefStmt:
		c += costClosure
	case *ast.ReturnStmt:
		c += in.exprsCost(x.Exprs)
	}
	return c
}

func (in *instrumenter) exprsCost(es []ast.Expr) int {
	c := 0
	for _, e := range es {
		c += in.exprCost(e)
	}
	return c
}

func (in *instrumenter) exprCost(e ast.Expr) int {
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		c := costCall + in.exprsCost(x.Args)
		if x.Func != nil {
			c += in.exprCost(x.Func)
		} else {
			c += in.exprCost(x.Receiver)
		}
		return c
	case *ast.AttrGetExpr:
		return in.exprCost(x.Object) + in.exprCost(x.Key)
	case *ast.TableExpr:
		c := costTable
		for _, f := range x.Fields {
			c += costTableField + in.exprCost(f.Value)
			if f.Key != nil {
				c += in.exprCost(f.Key)
			}
		}
		return c
	case *ast.FunctionExpr:
		return costClosure
	case *ast.LogicalOpExpr:
		return in.exprCost(x.Lhs) + in.exprCost(x.Rhs)
	case *ast.RelationalOpExpr:
		return in.exprCost(x.Lhs) + in.exprCost(x.Rhs)
	case *ast.StringConcatOpExpr:
		return costConcat + in.exprCost(x.Lhs) + in.exprCost(x.Rhs)
	case *ast.ArithmeticOpExpr:
		c := in.exprCost(x.Lhs) + in.exprCost(x.Rhs)
		if x.Operator == "%" || x.Operator == "^" || !in.isNum(x.Lhs) || !in.isNum(x.Rhs) {
			c += costCall
		}
		return c
	case *ast.UnaryMinusOpExpr:
		c := in.exprCost(x.Expr)
		if !in.isNum(x.Expr) {
			c += costCall
		}
		return c
	case *ast.UnaryNotOpExpr:
		return in.exprCost(x.Expr)
	case *ast.UnaryLenOpExpr:
		return costCall + in.exprCost(x.Expr)
	}
	return 0
}

// --- rewriting -----------------------------------------------------------------

func (in *instrumenter) hiddenCall(name string, line int, args ...ast.Expr) *ast.FuncCallExpr {
	in.used[name] = true
	fn := &ast.IdentExpr{Value: name}
	fn.SetLine(line)
	fn.SetLastLine(line)
	c := &ast.FuncCallExpr{Func: fn, Args: args, AdjustRet: true}
	c.SetLine(line)
	c.SetLastLine(line)
	return c
}

func numberLit(n int, line int) ast.Expr {
	e := &ast.NumberExpr{Value: canonicalNumber(float64(n))}
	e.SetLine(line)
	e.SetLastLine(line)
	return e
}

func stringLit(s string, line int) ast.Expr {
	e := &ast.StringExpr{Value: s}
	e.SetLine(line)
	e.SetLastLine(line)
	return e
}

func (in *instrumenter) chargeStmt(cost int, line int) ast.Stmt {
	call := in.hiddenCall(hidBudget, line, numberLit(cost, line))
	call.AdjustRet = false
	s := &ast.FuncCallStmt{Expr: call}
	s.SetLine(line)
	s.SetLastLine(line)
	return s
}

func (in *instrumenter) block(stmts []ast.Stmt) []ast.Stmt {
	for i, s := range stmts {
		stmts[i] = in.stmt(s)
	}
	return stmts
}

// loopBody instruments a loop body and prepends its charge.
func (in *instrumenter) loopBody(stmts []ast.Stmt, line int) []ast.Stmt {
	cost := costLoopBase + in.blockCost(stmts)
	body := in.block(stmts)
	return append([]ast.Stmt{in.chargeStmt(cost, line)}, body...)
}

func (in *instrumenter) stmt(s ast.Stmt) ast.Stmt {
	switch x := s.(type) {
	case *ast.AssignStmt:
		for i, l := range x.Lhs {
			x.Lhs[i] = in.target(l)
		}
		in.exprs(x.Rhs)
		if len(x.Lhs) > 1 && in.assignsLocal(x.Lhs) {
			return multiAssign(x)
		}
	case *ast.LocalAssignStmt:
		in.exprs(x.Exprs)
	case *ast.FuncCallStmt:
		x.Expr = in.expr(x.Expr)
	case *ast.DoBlockStmt:
		x.Stmts = in.block(x.Stmts)
	case *ast.WhileStmt:
		x.Condition = in.expr(x.Condition)
		x.Stmts = in.loopBody(x.Stmts, x.Line())
	case *ast.RepeatStmt:
		x.Condition = in.expr(x.Condition)
		x.Stmts = in.loopBody(x.Stmts, x.Line())
	case *ast.IfStmt:
		x.Condition = in.expr(x.Condition)
		x.Then = in.block(x.Then)
		x.Else = in.block(x.Else)
	case *ast.NumberForStmt:
		x.Init = in.forBound(x.Init, 1, x.Line())
		x.Limit = in.forBound(x.Limit, 2, x.Line())
		if x.Step != nil {
			x.Step = in.forBound(x.Step, 3, x.Line())
		}
		x.Stmts = in.loopBody(x.Stmts, x.Line())
	case *ast.GenericForStmt:
		in.exprs(x.Exprs)
		x.Stmts = in.loopBody(x.Stmts, x.Line())
	case *ast.FuncDefStmt:
		if x.Name.Func != nil {
			x.Name.Func = in.target(x.Name.Func)
		} else {
			x.Name.Receiver = in.expr(x.Name.Receiver)
		}
		in.function(x.Func)
	case *ast.ReturnStmt:
		in.exprs(x.Exprs)
	}
	return s
}

// assignsLocal reports whether a target is a local or an upvalue.
func (in *instrumenter) assignsLocal(targets []ast.Expr) bool {
	for _, t := range targets {
		if id, ok := t.(*ast.IdentExpr); ok && in.p.names[id] != nil {
			return true
		}
	}
	return false
}

// multiAssign rewrites a multiple assignment so that every value is
// computed before anything is stored (gopher-lua may store into a local
// target before reading it as a source, breaking "a, b = b, a"):
//
//	do
//	  local o1, k1 = <table and key of each indexed target>
//	  local v1, v2 = <values>
//	  <targets using o1[k1]> = v1, v2
//	end
func multiAssign(x *ast.AssignStmt) ast.Stmt {
	line := x.Line()
	ident := func(name string) *ast.IdentExpr {
		id := &ast.IdentExpr{Value: name}
		id.SetLine(line)
		id.SetLastLine(line)
		return id
	}
	local := func(names []string, exprs []ast.Expr) ast.Stmt {
		s := &ast.LocalAssignStmt{Names: names, Exprs: exprs}
		s.SetLine(line)
		s.SetLastLine(line)
		return s
	}
	var preNames []string
	var preExprs []ast.Expr
	targets := make([]ast.Expr, len(x.Lhs))
	for i, l := range x.Lhs {
		a, ok := l.(*ast.AttrGetExpr)
		if !ok {
			targets[i] = l
			continue
		}
		o := "\x00o" + strconv.Itoa(i)
		preNames = append(preNames, o)
		preExprs = append(preExprs, a.Object)
		key := a.Key
		switch key.(type) {
		case *ast.StringExpr, *ast.NumberExpr:
		default:
			k := "\x00k" + strconv.Itoa(i)
			preNames = append(preNames, k)
			preExprs = append(preExprs, key)
			key = ident(k)
		}
		t := &ast.AttrGetExpr{Object: ident(o), Key: key}
		t.SetLine(a.Line())
		t.SetLastLine(a.LastLine())
		targets[i] = t
	}
	var body []ast.Stmt
	if len(preNames) > 0 {
		body = append(body, local(preNames, preExprs))
	}
	vals := make([]string, len(x.Lhs))
	refs := make([]ast.Expr, len(x.Lhs))
	for i := range vals {
		vals[i] = "\x00v" + strconv.Itoa(i)
		refs[i] = ident(vals[i])
	}
	body = append(body, local(vals, x.Rhs))
	assign := &ast.AssignStmt{Lhs: targets, Rhs: refs}
	assign.SetLine(line)
	assign.SetLastLine(x.LastLine())
	body = append(body, assign)
	d := &ast.DoBlockStmt{Stmts: body}
	d.SetLine(line)
	d.SetLastLine(x.LastLine())
	return d
}

func (in *instrumenter) forBound(e ast.Expr, which int, line int) ast.Expr {
	if in.isNum(e) {
		return in.expr(e)
	}
	return in.hiddenCall(hidForNum, line, in.expr(e), numberLit(which, line))
}

func (in *instrumenter) function(f *ast.FunctionExpr) {
	cost := costFuncBase + in.blockCost(f.Stmts)
	in.depth++
	body := in.block(f.Stmts)
	in.depth--
	f.Stmts = append([]ast.Stmt{in.chargeStmt(cost, f.Line())}, body...)
}

// target instruments the target of an assignment: the table and key of
// an indexed target, never the target itself (a variable, or a field such
// as redis.call, must stay something that an assignment writes to).
func (in *instrumenter) target(e ast.Expr) ast.Expr {
	if a, ok := e.(*ast.AttrGetExpr); ok {
		a.Object = in.expr(a.Object)
		a.Key = in.expr(a.Key)
	}
	return e
}

func (in *instrumenter) exprs(es []ast.Expr) {
	for i, e := range es {
		es[i] = in.expr(e)
	}
}

// isMultiValue reports whether e is a call or '...' that may produce
// several values.
func isMultiValue(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		return !x.AdjustRet
	case *ast.Comma3Expr:
		return !x.AdjustRet
	}
	return false
}

// describe renders how Lua 5.1 names a value in error messages ("local 'x'",
// "global 'x'", "upvalue 'x'", "field 'x'"), or "".
func (in *instrumenter) describe(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.IdentExpr:
		if in.p.names[x] == nil {
			return "global '" + cstr(x.Value) + "'"
		}
		if in.p.upvals[x] {
			return "upvalue '" + cstr(x.Value) + "'"
		}
		return "local '" + cstr(x.Value) + "'"
	case *ast.AttrGetExpr:
		if k, ok := x.Key.(*ast.StringExpr); ok {
			return "field '" + cstr(k.Value) + "'"
		}
	}
	return ""
}

func (in *instrumenter) expr(e ast.Expr) ast.Expr {
	if x, ok := in.libraryHoisted(e); ok {
		return x
	}
	if name, ok := in.hoistedName(e); ok {
		in.hoisted[name] = true
		return identAt(name, e.Line())
	}
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		if x.Func != nil {
			x.Func = in.expr(x.Func)
		} else {
			x.Receiver = in.expr(x.Receiver)
		}
		in.exprs(x.Args)
	case *ast.AttrGetExpr:
		x.Object = in.expr(x.Object)
		x.Key = in.expr(x.Key)
	case *ast.TableExpr:
		na, nh := 0, 0
		for i, f := range x.Fields {
			if f.Key != nil {
				f.Key = in.expr(f.Key)
				nh++
			} else if i < len(x.Fields)-1 || !isMultiValue(f.Value) {
				na++
			}
			f.Value = in.expr(f.Value)
		}
		if nh >= 2 {
			// Lua sizes the table from the constructor; pairs needs to know.
			line := x.Line()
			return in.hiddenCall(hidTable, line, x,
				numberLit(fb2int(int2fb(na)), line), numberLit(fb2int(int2fb(nh)), line))
		}
	case *ast.FunctionExpr:
		in.function(x)
	case *ast.LogicalOpExpr:
		x.Lhs = in.expr(x.Lhs)
		x.Rhs = in.expr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs = in.expr(x.Lhs)
		x.Rhs = in.expr(x.Rhs)
	case *ast.StringConcatOpExpr:
		return in.concat(x)
	case *ast.ArithmeticOpExpr:
		native := x.Operator != "%" && x.Operator != "^" && in.isNum(x.Lhs) && in.isNum(x.Rhs)
		desc := in.describe(x.Lhs) + "\x00" + in.describe(x.Rhs)
		x.Lhs = in.expr(x.Lhs)
		x.Rhs = in.expr(x.Rhs)
		if native {
			return x
		}
		return in.hiddenCall(hidArith+x.Operator, x.Line(), x.Lhs, x.Rhs, stringLit(desc, x.Line()))
	case *ast.UnaryMinusOpExpr:
		native := in.isNum(x.Expr)
		desc := in.describe(x.Expr)
		x.Expr = in.expr(x.Expr)
		if native {
			return x
		}
		return in.hiddenCall(hidUnm, x.Line(), x.Expr, stringLit(desc, x.Line()))
	case *ast.UnaryNotOpExpr:
		x.Expr = in.expr(x.Expr)
	case *ast.UnaryLenOpExpr:
		desc := in.describe(x.Expr)
		x.Expr = in.expr(x.Expr)
		return in.hiddenCall(hidLen, x.Line(), x.Expr, stringLit(desc, x.Line()))
	}
	return e
}

// concat flattens a chain a .. b .. c (right associative) into one call
// \0concat(desc, a, b, c), as Lua 5.1 concatenates a chain in one step.
func (in *instrumenter) concat(x *ast.StringConcatOpExpr) ast.Expr {
	var operands []ast.Expr
	// Only the right spine is one Lua 5.1 chain; a concatenation on the left
	// (possible only with parentheses) is evaluated first on its own.
	operands = append(operands, x.Lhs)
	for r := x.Rhs; ; {
		c, ok := r.(*ast.StringConcatOpExpr)
		if !ok {
			operands = append(operands, r)
			break
		}
		operands = append(operands, c.Lhs)
		r = c.Rhs
	}
	desc := ""
	for i, o := range operands {
		if i > 0 {
			desc += "\x00"
		}
		desc += in.describe(o)
	}
	args := make([]ast.Expr, 0, len(operands)+1)
	args = append(args, stringLit(desc, x.Line()))
	for _, o := range operands {
		o = in.expr(o)
		truncate(o)
		args = append(args, o)
	}
	return in.hiddenCall(hidConcat, x.Line(), args...)
}
