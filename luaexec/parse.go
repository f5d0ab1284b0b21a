package luaexec

import (
	"fmt"

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
