package luaexec

import (
	"math"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// The parser's expressions: function bodies and call arguments, prefix,
// primary and simple expressions, table constructors, and binary and
// unary operators by priority.

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
