package luaexec

import "github.com/yuin/gopher-lua/ast"

// The parser's statements: blocks, if/while/repeat/for, function and local
// declarations, return and assignments, with the bookkeeping that records
// what each local is assigned (localVar.assigns) for the instrumentation
// pass. parse.go holds the parser's state and helpers, parse_expr.go the
// expressions.

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
