package luaexec

import (
	"fmt"
	"math"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// A Lua 5.1 parser that builds gopher-lua's AST. It follows the structure of
// Lua 5.1's recursive-descent parser so that it accepts the same programs and
// rejects the others with the same messages, and it records how every name
// resolves (local, upvalue or global) for the instrumentation pass.

const (
	maxVars     = 200 // LUAI_MAXVARS
	maxUpvalues = 60  // LUAI_MAXUPVALUES
	maxCCalls   = 200 // LUAI_MAXCCALLS
)

// localVar is one declared local variable.
type localVar struct {
	name string
	fn   *funcState
	// assigns lists every expression assigned to the variable; a nil entry
	// stands for a value of unknown type (parameters, multiple results...).
	assigns []ast.Expr
	// numeric is filled in by the instrumentation pass.
	numeric int8
}

type blockScope struct {
	prev    *blockScope
	nactive int
	isLoop  bool
}

type funcState struct {
	prev        *funcState
	block       *blockScope
	actives     []*localVar
	upvals      []*localVar
	isVararg    bool
	lineDefined int
}

// parsed is the result of parsing one chunk.
type parsed struct {
	stmts []ast.Stmt
	// names maps each identifier to the local it refers to (absent: global).
	names map[*ast.IdentExpr]*localVar
	// upvals marks identifiers that refer to a local of an enclosing function.
	upvals map[*ast.IdentExpr]bool
	// locals lists every declared local.
	locals []*localVar
}

type parser struct {
	lx     *lexer
	fs     *funcState
	depth  int
	result *parsed
}

// expression kinds, as far as the grammar cares
const (
	ekOther = iota
	ekVar   // a name or an indexed value: can be assigned
	ekCall  // a function call (multiple results)
	ekVararg
)

type expr struct {
	e    ast.Expr
	kind int
}

// parseChunk parses a Lua 5.1 chunk. chunkID is the name shown in messages
// ("user_script"). On a syntax error it returns the message Lua would give.
func parseChunk(src, chunkID string) (p *parsed, errMsg string) {
	ps := &parser{result: &parsed{names: make(map[*ast.IdentExpr]*localVar), upvals: make(map[*ast.IdentExpr]bool)}}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*syntaxError)
			if !ok {
				panic(r)
			}
			p, errMsg = nil, se.msg
		}
	}()
	ps.lx = newLexer(src, chunkID)
	fs := &funcState{isVararg: true}
	ps.openFunc(fs)
	ps.lx.advance()
	stmts := ps.chunk()
	ps.check(tkEOS)
	ps.closeFunc()
	ps.result.stmts = stmts
	return ps.result, ""
}

func (p *parser) openFunc(fs *funcState) {
	fs.prev = p.fs
	p.fs = fs
	p.enterBlock(false)
}

func (p *parser) closeFunc() {
	p.leaveBlock()
	p.fs = p.fs.prev
}

func (p *parser) enterBlock(isLoop bool) {
	fs := p.fs
	fs.block = &blockScope{prev: fs.block, nactive: len(fs.actives), isLoop: isLoop}
}

func (p *parser) leaveBlock() {
	fs := p.fs
	fs.actives = fs.actives[:fs.block.nactive]
	fs.block = fs.block.prev
}

// --- helpers ---------------------------------------------------------------

func (p *parser) enterLevel() {
	p.depth++
	if p.depth > maxCCalls {
		p.lx.lexError("chunk has too many syntax levels", 0)
	}
}

func (p *parser) leaveLevel() { p.depth-- }

func (p *parser) errorExpected(tok int) {
	p.lx.syntaxError(fmt.Sprintf("'%s' expected", token2str(tok)))
}

func (p *parser) errorLimit(limit int, what string) {
	p.errorLimitIn(p.fs, limit, what)
}

// errorLimitIn reports that a function went over one of Lua's limits.
func (p *parser) errorLimitIn(fs *funcState, limit int, what string) {
	var msg string
	if fs.lineDefined == 0 {
		msg = fmt.Sprintf("main function has more than %d %s", limit, what)
	} else {
		msg = fmt.Sprintf("function at line %d has more than %d %s", fs.lineDefined, limit, what)
	}
	p.lx.lexError(msg, 0)
}

func (p *parser) testNext(tok int) bool {
	if p.lx.t.kind == tok {
		p.lx.advance()
		return true
	}
	return false
}

func (p *parser) check(tok int) {
	if p.lx.t.kind != tok {
		p.errorExpected(tok)
	}
}

func (p *parser) checkNext(tok int) {
	p.check(tok)
	p.lx.advance()
}

func (p *parser) checkMatch(what, who, where int) {
	if !p.testNext(what) {
		if where == p.lx.line {
			p.errorExpected(what)
		} else {
			p.lx.syntaxError(fmt.Sprintf("'%s' expected (to close '%s' at line %d)",
				token2str(what), token2str(who), where))
		}
	}
}

func (p *parser) checkName() string {
	p.check(tkName)
	s := p.lx.t.str
	p.lx.advance()
	return s
}

// newLocal declares (but does not yet activate) a local; n is the number
// of locals already declared in the same statement.
func (p *parser) newLocal(name string, n int) *localVar {
	fs := p.fs
	if len(fs.actives)+n+1 > maxVars {
		p.errorLimit(maxVars, "local variables")
	}
	v := &localVar{name: name, fn: fs}
	p.result.locals = append(p.result.locals, v)
	return v
}

func (p *parser) activate(vars ...*localVar) {
	p.fs.actives = append(p.fs.actives, vars...)
}

// singleVar resolves a name.
func (p *parser) singleVar(name string, line int) *ast.IdentExpr {
	id := &ast.IdentExpr{Value: name}
	id.SetLine(line)
	id.SetLastLine(line)
	if v := p.resolve(p.fs, name, true); v != nil {
		p.result.names[id] = v
		if v.fn != p.fs {
			p.result.upvals[id] = true
		}
	}
	return id
}

func (p *parser) resolve(fs *funcState, name string, base bool) *localVar {
	if fs == nil {
		return nil
	}
	for i := len(fs.actives) - 1; i >= 0; i-- {
		if fs.actives[i].name == name {
			return fs.actives[i]
		}
	}
	v := p.resolve(fs.prev, name, false)
	if v == nil {
		return nil
	}
	for _, u := range fs.upvals {
		if u == v {
			return v
		}
	}
	if len(fs.upvals)+1 > maxUpvalues {
		p.errorLimitIn(fs, maxUpvalues, "upvalues")
	}
	fs.upvals = append(fs.upvals, v)
	return v
}

func blockFollow(tok int) bool {
	switch tok {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

// --- statements ------------------------------------------------------------

func (p *parser) chunk() []ast.Stmt {
	stmts := []ast.Stmt{}
	p.enterLevel()
	last := false
	for !last && !blockFollow(p.lx.t.kind) {
		var s ast.Stmt
		s, last = p.statement()
		if s != nil {
			stmts = append(stmts, s)
		}
		p.testNext(';')
	}
	p.leaveLevel()
	return stmts
}

func (p *parser) block() []ast.Stmt {
	p.enterBlock(false)
	stmts := p.chunk()
	p.leaveBlock()
	return stmts
}

func (p *parser) statement() (ast.Stmt, bool) {
	line := p.lx.line
	switch p.lx.t.kind {
	case tkIf:
		return p.ifStat(line), false
	case tkWhile:
		return p.whileStat(line), false
	case tkDo:
		p.lx.advance()
		body := p.block()
		end := p.lx.line
		p.checkMatch(tkEnd, tkDo, line)
		s := &ast.DoBlockStmt{Stmts: body}
		s.SetLine(line)
		s.SetLastLine(end)
		return s, false
	case tkFor:
		return p.forStat(line), false
	case tkRepeat:
		return p.repeatStat(line), false
	case tkFunction:
		return p.funcStat(line), false
	case tkLocal:
		p.lx.advance()
		if p.testNext(tkFunction) {
			return p.localFunc(line), false
		}
		return p.localStat(line), false
	case tkReturn:
		return p.retStat(line), true
	case tkBreak:
		p.lx.advance()
		b := p.fs.block
		for b != nil && !b.isLoop {
			b = b.prev
		}
		if b == nil {
			p.lx.syntaxError("no loop to break")
		}
		s := &ast.BreakStmt{}
		s.SetLine(line)
		s.SetLastLine(line)
		return s, true
	default:
		return p.exprStat(line), false
	}
}

func (p *parser) cond() ast.Expr {
	return p.expr().e
}

func (p *parser) testThenBlock() (ast.Expr, []ast.Stmt) {
	p.lx.advance() // skip IF or ELSEIF
	c := p.cond()
	p.checkNext(tkThen)
	return c, p.block()
}

func (p *parser) ifStat(line int) ast.Stmt {
	c, then := p.testThenBlock()
	top := &ast.IfStmt{Condition: c, Then: then, Else: []ast.Stmt{}}
	top.SetLine(line)
	cur := top
	for p.lx.t.kind == tkElseif {
		l := p.lx.line
		c, then := p.testThenBlock()
		next := &ast.IfStmt{Condition: c, Then: then, Else: []ast.Stmt{}}
		next.SetLine(l)
		cur.Else = []ast.Stmt{next}
		cur = next
	}
	if p.lx.t.kind == tkElse {
		p.lx.advance()
		cur.Else = p.block()
	}
	top.SetLastLine(p.lx.line)
	p.checkMatch(tkEnd, tkIf, line)
	return top
}

func (p *parser) whileStat(line int) ast.Stmt {
	p.lx.advance()
	c := p.cond()
	p.enterBlock(true)
	p.checkNext(tkDo)
	body := p.block()
	end := p.lx.line
	p.checkMatch(tkEnd, tkWhile, line)
	p.leaveBlock()
	s := &ast.WhileStmt{Condition: c, Stmts: body}
	s.SetLine(line)
	s.SetLastLine(end)
	return s
}

func (p *parser) repeatStat(line int) ast.Stmt {
	p.enterBlock(true)  // loop block
	p.enterBlock(false) // scope block
	p.lx.advance()
	body := p.chunk()
	p.checkMatch(tkUntil, tkRepeat, line)
	c := p.cond() // inside the scope block
	p.leaveBlock()
	p.leaveBlock()
	s := &ast.RepeatStmt{Condition: c, Stmts: body}
	s.SetLine(line)
	s.SetLastLine(p.lx.lastLine)
	return s
}

func (p *parser) forStat(line int) ast.Stmt {
	p.enterBlock(true)
	p.lx.advance()
	name := p.checkName()
	var s ast.Stmt
	switch p.lx.t.kind {
	case '=':
		s = p.forNum(name, line)
	case ',', tkIn:
		s = p.forList(name, line)
	default:
		p.lx.syntaxError("'=' or 'in' expected")
	}
	p.leaveBlock()
	return s
}

func (p *parser) exp1() ast.Expr {
	e := p.expr()
	adjustOne(e)
	return e.e
}

func (p *parser) forNum(name string, line int) ast.Stmt {
	hidden := []*localVar{p.newLocal("(for index)", 0), p.newLocal("(for limit)", 1), p.newLocal("(for step)", 2)}
	v := p.newLocal(name, 3)
	p.checkNext('=')
	init := p.exp1()
	p.checkNext(',')
	limit := p.exp1()
	var step ast.Expr
	if p.testNext(',') {
		step = p.exp1()
	}
	p.activate(hidden...)
	v.assigns = append(v.assigns, numberMarker)
	body := p.forBody(line, []*localVar{v})
	s := &ast.NumberForStmt{Name: name, Init: init, Limit: limit, Step: step, Stmts: body}
	s.SetLine(line)
	s.SetLastLine(p.lx.lastLine)
	return s
}

func (p *parser) forList(first string, line int) ast.Stmt {
	hidden := []*localVar{p.newLocal("(for generator)", 0), p.newLocal("(for state)", 1), p.newLocal("(for control)", 2)}
	vars := []*localVar{p.newLocal(first, 3)}
	names := []string{first}
	for p.testNext(',') {
		n := p.checkName()
		vars = append(vars, p.newLocal(n, len(vars)+3))
		names = append(names, n)
	}
	p.checkNext(tkIn)
	exprs := p.exprList()
	p.activate(hidden...)
	for _, v := range vars {
		v.assigns = append(v.assigns, nil)
	}
	body := p.forBody(line, vars)
	s := &ast.GenericForStmt{Names: names, Exprs: padForExprs(exprs), Stmts: body}
	s.SetLine(line)
	s.SetLastLine(p.lx.lastLine)
	return s
}

func (p *parser) forBody(line int, vars []*localVar) []ast.Stmt {
	p.checkNext(tkDo)
	p.enterBlock(false)
	p.activate(vars...)
	body := p.block()
	p.leaveBlock()
	p.checkMatch(tkEnd, tkFor, line)
	return body
}

func (p *parser) funcStat(line int) ast.Stmt {
	p.lx.advance()
	// funcname: NAME {'.' NAME} [':' NAME]
	var fexpr ast.Expr = p.singleVar(p.checkName(), p.lx.lastLine)
	var target expr
	target.e = fexpr
	needSelf := false
	method := ""
	for p.lx.t.kind == '.' {
		p.lx.advance()
		kline := p.lx.line
		key := p.checkName()
		k := &ast.StringExpr{Value: key}
		k.SetLine(kline)
		a := &ast.AttrGetExpr{Object: fexpr, Key: k}
		a.SetLine(kline)
		fexpr = a
	}
	if p.lx.t.kind == ':' {
		p.lx.advance()
		method = p.checkName()
		needSelf = true
	}
	fn := p.body(needSelf, line)
	s := &ast.FuncDefStmt{Func: fn}
	if needSelf {
		s.Name = &ast.FuncName{Receiver: fexpr, Method: method}
	} else {
		s.Name = &ast.FuncName{Func: fexpr}
		p.noteAssign(fexpr, fn)
	}
	s.SetLine(line)
	s.SetLastLine(fn.LastLine())
	return s
}

func (p *parser) localFunc(line int) ast.Stmt {
	name := p.checkName()
	v := p.newLocal(name, 0)
	p.activate(v)
	fn := p.body(false, p.lx.line)
	v.assigns = append(v.assigns, fn)
	s := &ast.LocalAssignStmt{Names: []string{name}, Exprs: []ast.Expr{fn}}
	s.SetLine(line)
	s.SetLastLine(fn.LastLine())
	return s
}

func (p *parser) localStat(line int) ast.Stmt {
	var vars []*localVar
	var names []string
	for {
		n := p.checkName()
		vars = append(vars, p.newLocal(n, len(vars)))
		names = append(names, n)
		if !p.testNext(',') {
			break
		}
	}
	exprs := []ast.Expr{}
	var last expr
	if p.testNext('=') {
		exprs, last = p.exprListLast()
	}
	recordAssigns(vars, exprs, last)
	if len(names) == 1 && len(exprs) == 1 {
		if _, ok := exprs[0].(*ast.FunctionExpr); ok {
			// gopher-lua compiles "local f = function" like "local function f";
			// a second (nil) expression keeps Lua 5.1's scoping.
			nilx := &ast.NilExpr{}
			nilx.SetLine(exprs[0].LastLine())
			exprs = append(exprs, nilx)
		}
	}
	p.activate(vars...)
	s := &ast.LocalAssignStmt{Names: names, Exprs: exprs}
	s.SetLine(line)
	s.SetLastLine(p.lx.lastLine)
	return s
}

// recordAssigns notes which expression each variable receives.
func recordAssigns(vars []*localVar, exprs []ast.Expr, last expr) {
	for i, v := range vars {
		v.assigns = append(v.assigns, assignedExpr(i, exprs, last))
	}
}

// assignedExpr returns the expression that the i-th target of an assignment
// receives: nil when unknown (extra results of a call or '...'), nilMarker
// when the target gets nil.
func assignedExpr(i int, exprs []ast.Expr, last expr) ast.Expr {
	multi := len(exprs) > 0 && (last.kind == ekCall || last.kind == ekVararg)
	switch {
	case i < len(exprs)-1:
		return exprs[i]
	case i == len(exprs)-1 && !multi:
		return exprs[i]
	case multi:
		return nil
	}
	return nilMarker
}

func (p *parser) noteAssign(target ast.Expr, value ast.Expr) {
	if id, ok := target.(*ast.IdentExpr); ok {
		if v := p.result.names[id]; v != nil {
			v.assigns = append(v.assigns, value)
		}
	}
}

func (p *parser) retStat(line int) ast.Stmt {
	p.lx.advance()
	var exprs []ast.Expr
	if !blockFollow(p.lx.t.kind) && p.lx.t.kind != ';' {
		exprs = p.exprList()
	}
	s := &ast.ReturnStmt{Exprs: exprs}
	s.SetLine(line)
	s.SetLastLine(p.lx.lastLine)
	return s
}

func (p *parser) exprStat(line int) ast.Stmt {
	e := p.primaryExp()
	if e.kind == ekCall {
		s := &ast.FuncCallStmt{Expr: e.e}
		s.SetLine(e.e.Line())
		s.SetLastLine(p.lx.lastLine)
		return s
	}
	lhs := []expr{e}
	for {
		if lhs[len(lhs)-1].kind != ekVar {
			p.lx.syntaxError("syntax error")
		}
		if !p.testNext(',') {
			break
		}
		n := p.primaryExp()
		if len(lhs) > maxCCalls-p.depth {
			p.errorLimit(maxCCalls-p.depth, "variables in assignment")
		}
		lhs = append(lhs, n)
	}
	p.checkNext('=')
	rhs, last := p.exprListLast()
	targets := make([]ast.Expr, len(lhs))
	for i, l := range lhs {
		targets[i] = l.e
	}
	for i, t := range targets {
		if id, ok := t.(*ast.IdentExpr); ok {
			if v := p.result.names[id]; v != nil {
				v.assigns = append(v.assigns, assignedExpr(i, rhs, last))
			}
		}
	}
	s := &ast.AssignStmt{Lhs: targets, Rhs: rhs}
	s.SetLine(line)
	s.SetLastLine(p.lx.lastLine)
	return s
}

// --- functions ---------------------------------------------------------------

func (p *parser) body(needSelf bool, line int) *ast.FunctionExpr {
	fs := &funcState{lineDefined: line}
	p.openFunc(fs)
	p.checkNext('(')
	var params []*localVar
	names := []string{}
	if needSelf {
		params = append(params, p.newLocal("self", 0))
		p.activate(params...)
		params = params[:0]
	}
	if p.lx.t.kind != ')' {
		for {
			switch p.lx.t.kind {
			case tkName:
				n := p.checkName()
				params = append(params, p.newLocal(n, len(params)))
				names = append(names, n)
			case tkDots:
				p.lx.advance()
				params = append(params, p.newLocal("arg", len(params)))
				fs.isVararg = true
			default:
				p.lx.syntaxError("<name> or '...' expected")
			}
			if fs.isVararg || !p.testNext(',') {
				break
			}
		}
	}
	for _, v := range params {
		v.assigns = append(v.assigns, nil)
	}
	p.activate(params...)
	p.checkNext(')')
	stmts := p.chunk()
	last := p.lx.line
	p.checkMatch(tkEnd, tkFunction, line)
	p.closeFunc()
	fn := &ast.FunctionExpr{ParList: &ast.ParList{HasVargs: fs.isVararg, Names: names}, Stmts: stmts}
	fn.SetLine(line)
	fn.SetLastLine(last)
	return fn
}

func (p *parser) exprList() []ast.Expr {
	l, _ := p.exprListLast()
	return l
}

func (p *parser) exprListLast() ([]ast.Expr, expr) {
	e := p.expr()
	list := []ast.Expr{e.e}
	for p.testNext(',') {
		e = p.expr()
		list = append(list, e.e)
	}
	return list, e
}

func (p *parser) funcArgs(f expr, method string, line0 int) expr {
	line := p.lx.line
	var args []ast.Expr
	switch p.lx.t.kind {
	case '(':
		if line != p.lx.lastLine {
			p.lx.syntaxError("ambiguous syntax (function call x new statement)")
		}
		p.lx.advance()
		if p.lx.t.kind == ')' {
			args = []ast.Expr{}
		} else {
			args = p.exprList()
		}
		p.checkMatch(')', '(', line)
	case '{':
		args = []ast.Expr{p.constructor()}
	case tkString:
		s := &ast.StringExpr{Value: p.lx.t.str}
		s.SetLine(line)
		s.SetLastLine(line)
		args = []ast.Expr{s}
		p.lx.advance()
	default:
		p.lx.syntaxError("function arguments expected")
	}
	call := &ast.FuncCallExpr{Args: args}
	if method != "" {
		call.Receiver = f.e
		call.Method = method
	} else {
		call.Func = f.e
	}
	call.SetLine(line)
	call.SetLastLine(p.lx.lastLine)
	return expr{e: call, kind: ekCall}
}

// --- expressions -------------------------------------------------------------

func (p *parser) prefixExp() expr {
	switch p.lx.t.kind {
	case '(':
		line := p.lx.line
		p.lx.advance()
		e := p.expr()
		p.checkMatch(')', '(', line)
		adjustOne(e)
		return expr{e: e.e, kind: ekOther}
	case tkName:
		line := p.lx.line
		name := p.lx.t.str
		p.lx.advance()
		return expr{e: p.singleVar(name, line), kind: ekVar}
	default:
		p.lx.syntaxError("unexpected symbol")
		return expr{}
	}
}

// adjustOne truncates a multiple-value expression to a single value.
func adjustOne(e expr) {
	switch x := e.e.(type) {
	case *ast.FuncCallExpr:
		if e.kind == ekCall {
			x.AdjustRet = true
		}
	case *ast.Comma3Expr:
		if e.kind == ekVararg {
			x.AdjustRet = true
		}
	}
}

func (p *parser) primaryExp() expr {
	v := p.prefixExp()
	for {
		switch p.lx.t.kind {
		case '.':
			p.lx.advance()
			line := p.lx.line
			name := p.checkName()
			k := &ast.StringExpr{Value: name}
			k.SetLine(line)
			k.SetLastLine(line)
			a := &ast.AttrGetExpr{Object: v.e, Key: k}
			a.SetLine(line)
			a.SetLastLine(line)
			v = expr{e: a, kind: ekVar}
		case '[':
			p.lx.advance()
			k := p.expr()
			adjustOne(k)
			p.checkNext(']')
			a := &ast.AttrGetExpr{Object: v.e, Key: k.e}
			a.SetLine(p.lx.lastLine)
			a.SetLastLine(p.lx.lastLine)
			v = expr{e: a, kind: ekVar}
		case ':':
			p.lx.advance()
			name := p.checkName()
			v = p.funcArgs(v, name, 0)
		case '(', tkString, '{':
			v = p.funcArgs(v, "", 0)
		default:
			return v
		}
	}
}

func (p *parser) simpleExp() expr {
	t := p.lx.t
	line := p.lx.line
	var e ast.Expr
	kind := ekOther
	switch t.kind {
	case tkNumber:
		e = &ast.NumberExpr{Value: canonicalNumber(t.num)}
	case tkString:
		e = &ast.StringExpr{Value: t.str}
	case tkNil:
		e = &ast.NilExpr{}
	case tkTrue:
		e = &ast.TrueExpr{}
	case tkFalse:
		e = &ast.FalseExpr{}
	case tkDots:
		if !p.fs.isVararg {
			p.lx.syntaxError("cannot use '...' outside a vararg function")
		}
		e = &ast.Comma3Expr{}
		kind = ekVararg
	case '{':
		return expr{e: p.constructor()}
	case tkFunction:
		p.lx.advance()
		return expr{e: p.body(false, p.lx.line)}
	default:
		return p.primaryExp()
	}
	e.SetLine(line)
	e.SetLastLine(line)
	p.lx.advance()
	return expr{e: e, kind: kind}
}

// canonicalNumber renders a literal so that gopher-lua reads it back exactly.
func canonicalNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func (p *parser) constructor() *ast.TableExpr {
	line := p.lx.line
	p.checkNext('{')
	fields := []*ast.Field{}
	for p.lx.t.kind != '}' {
		switch p.lx.t.kind {
		case tkName:
			if p.lx.lookahead() != '=' {
				fields = append(fields, &ast.Field{Value: p.expr().e})
			} else {
				kline := p.lx.line
				k := &ast.StringExpr{Value: p.checkName()}
				k.SetLine(kline)
				k.SetLastLine(kline)
				p.checkNext('=')
				fields = append(fields, &ast.Field{Key: k, Value: p.exprOne()})
			}
		case '[':
			p.lx.advance()
			k := p.exprOne()
			p.checkNext(']')
			p.checkNext('=')
			fields = append(fields, &ast.Field{Key: k, Value: p.exprOne()})
		default:
			fields = append(fields, &ast.Field{Value: p.expr().e})
		}
		if !p.testNext(',') && !p.testNext(';') {
			break
		}
	}
	p.checkMatch('}', '{', line)
	// Only a positional item that ends the constructor may expand to
	// several values.
	for i, f := range fields {
		if f.Key == nil && i != len(fields)-1 {
			truncate(f.Value)
		}
	}
	t := &ast.TableExpr{Fields: fields}
	t.SetLine(line)
	t.SetLastLine(p.lx.lastLine)
	return t
}

// truncate marks an unparenthesized call or '...' as single-valued.
func truncate(e ast.Expr) {
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		x.AdjustRet = true
	case *ast.Comma3Expr:
		x.AdjustRet = true
	}
}

func (p *parser) exprOne() ast.Expr {
	e := p.expr()
	adjustOne(e)
	return e.e
}

var binaryPriority = map[int][2]int{
	'+': {6, 6}, '-': {6, 6}, '*': {7, 7}, '/': {7, 7}, '%': {7, 7},
	'^': {10, 9}, tkConcat: {5, 4},
	tkNe: {3, 3}, tkEq: {3, 3}, '<': {3, 3}, tkLe: {3, 3}, '>': {3, 3}, tkGe: {3, 3},
	tkAnd: {2, 2}, tkOr: {1, 1},
}

const unaryPriority = 8

func (p *parser) expr() expr {
	e, _ := p.subExpr(0)
	return e
}

func (p *parser) subExpr(limit int) (expr, int) {
	p.enterLevel()
	var v expr
	switch op := p.lx.t.kind; op {
	case tkNot, '-', '#':
		line := p.lx.line
		p.lx.advance()
		operand, _ := p.subExpr(unaryPriority)
		adjustOne(operand)
		var u ast.Expr
		switch op {
		case tkNot:
			u = &ast.UnaryNotOpExpr{Expr: operand.e}
		case '-':
			u = &ast.UnaryMinusOpExpr{Expr: operand.e}
		default:
			u = &ast.UnaryLenOpExpr{Expr: operand.e}
		}
		u.SetLine(line)
		u.SetLastLine(p.lx.lastLine)
		v = expr{e: u}
	default:
		v = p.simpleExp()
	}
	op := p.lx.t.kind
	for {
		pri, ok := binaryPriority[op]
		if !ok || pri[0] <= limit {
			break
		}
		p.lx.advance()
		adjustOne(v)
		rhs, next := p.subExpr(pri[1])
		adjustOne(rhs)
		v = expr{e: binaryNode(op, v.e, rhs.e, p.lx.lastLine)}
		op = next
	}
	p.leaveLevel()
	return v, op
}

func binaryNode(op int, l, r ast.Expr, line int) ast.Expr {
	var e ast.Expr
	switch op {
	case tkAnd:
		e = &ast.LogicalOpExpr{Operator: "and", Lhs: l, Rhs: r}
	case tkOr:
		e = &ast.LogicalOpExpr{Operator: "or", Lhs: l, Rhs: r}
	case tkConcat:
		e = &ast.StringConcatOpExpr{Lhs: l, Rhs: r}
	case tkEq:
		e = &ast.RelationalOpExpr{Operator: "==", Lhs: l, Rhs: r}
	case tkNe:
		e = &ast.RelationalOpExpr{Operator: "~=", Lhs: l, Rhs: r}
	case '<':
		e = &ast.RelationalOpExpr{Operator: "<", Lhs: l, Rhs: r}
	case tkLe:
		e = &ast.RelationalOpExpr{Operator: "<=", Lhs: l, Rhs: r}
	case '>':
		e = &ast.RelationalOpExpr{Operator: ">", Lhs: l, Rhs: r}
	case tkGe:
		e = &ast.RelationalOpExpr{Operator: ">=", Lhs: l, Rhs: r}
	default:
		e = &ast.ArithmeticOpExpr{Operator: string(rune(op)), Lhs: l, Rhs: r}
	}
	e.SetLine(line)
	e.SetLastLine(line)
	return e
}

// Markers used in localVar.assigns.
var (
	numberMarker ast.Expr = &ast.NumberExpr{Value: "0"}
	nilMarker    ast.Expr = &ast.NilExpr{}
)

// padForExprs fills a generic for's expression list up to its three
// values (generator, state, control) with nils, unless the last is a call
// or "...", which expands to fill them. gopher-lua's code for a shorter
// list can leave the control value set, from a table constructor in the
// list (for r in next, {5} do ... end gave a wrong first key or a
// recovered Go error where Lua, and Redis, give the first element); the
// nils cost no work units, so a script's budget is what it was.
func padForExprs(exprs []ast.Expr) []ast.Expr {
	if len(exprs) == 0 || len(exprs) >= 3 {
		return exprs
	}
	switch exprs[len(exprs)-1].(type) {
	case *ast.FuncCallExpr, *ast.Comma3Expr:
		return exprs
	}
	for len(exprs) < 3 {
		exprs = append(exprs, &ast.NilExpr{})
	}
	return exprs
}
