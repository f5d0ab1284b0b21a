package luaexec

import (
	"fmt"
	"strings"
)

// This file holds a Lua 5.1 lexer. It exists (instead of gopher-lua's own
// parser) so that syntax errors read exactly as Redis's Lua 5.1 reports them,
// and so that Lua 5.1 lexical rules apply ('goto' is a plain name, numbers
// are read as strtod reads them, "\ddd" escapes, ...).

// Token kinds. Single-character tokens are their byte value (0..255).
const (
	tkAnd = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	tkConcat
	tkDots
	tkEq
	tkGe
	tkLe
	tkNe
	tkNumber
	tkName
	tkString
	tkEOS
)

var tokenNames = [...]string{
	"and", "break", "do", "else", "elseif",
	"end", "false", "for", "function", "if",
	"in", "local", "nil", "not", "or", "repeat",
	"return", "then", "true", "until", "while",
	"..", "...", "==", ">=", "<=", "~=",
	"<number>", "<name>", "<string>", "<eof>",
}

var reservedWords = func() map[string]int {
	m := make(map[string]int)
	for i := tkAnd; i <= tkWhile; i++ {
		m[tokenNames[i-tkAnd]] = i
	}
	return m
}()

const eoz = -1

type token struct {
	kind int
	raw  string  // source text as Lua's error messages show it (names, strings, numbers)
	str  string  // value of a name or string
	num  float64 // value of a number
}

// syntaxError is raised (by panic) inside the lexer and parser.
type syntaxError struct{ msg string }

type lexer struct {
	src      string
	pos      int
	cur      int // current character, or eoz
	line     int // line the lexer is on
	lastLine int // line of the last token consumed
	chunk    string
	buf      []byte
	t        token // current token
	ahead    token // look-ahead token (kind 0 when empty)
	aheadOK  bool
}

func newLexer(src, chunk string) *lexer {
	lx := &lexer{src: src, line: 1, lastLine: 1, chunk: chunk}
	lx.next()
	return lx
}

func (lx *lexer) next() {
	if lx.pos < len(lx.src) {
		lx.cur = int(lx.src[lx.pos])
		lx.pos++
	} else {
		lx.cur = eoz
		lx.pos = len(lx.src) + 1
	}
}

func (lx *lexer) save(c int) { lx.buf = append(lx.buf, byte(c)) }

func (lx *lexer) saveNext() {
	lx.save(lx.cur)
	lx.next()
}

func (lx *lexer) isNewline() bool { return lx.cur == '\n' || lx.cur == '\r' }

func (lx *lexer) incLine() {
	old := lx.cur
	lx.next()
	if lx.isNewline() && lx.cur != old {
		lx.next()
	}
	lx.line++
}

// token2str renders a token kind the way luaX_token2str does.
func token2str(kind int) string {
	if kind < 257 {
		if isCntrl(kind) {
			return fmt.Sprintf("char(%d)", kind)
		}
		return string([]byte{byte(kind)})
	}
	return tokenNames[kind-tkAnd]
}

func cstr(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// lexError raises a syntax error at the lexer's current line. near is the
// text shown after "near" ("" for none).
func (lx *lexer) errorNear(msg string, near string, hasNear bool) {
	m := fmt.Sprintf("%s:%d: %s", lx.chunk, lx.line, msg)
	if hasNear {
		m += " near '" + cstr(near) + "'"
	}
	panic(&syntaxError{m})
}

// lexError reports an error found while reading a token of the given kind;
// the text shown is what has been read so far.
func (lx *lexer) lexError(msg string, kind int) {
	switch kind {
	case 0:
		lx.errorNear(msg, "", false)
	case tkName, tkString, tkNumber:
		lx.errorNear(msg, string(lx.buf), true)
	default:
		lx.errorNear(msg, token2str(kind), true)
	}
}

// syntaxError reports an error at the current token.
func (lx *lexer) syntaxError(msg string) {
	switch lx.t.kind {
	case 0:
		lx.errorNear(msg, "", false)
	case tkName, tkString, tkNumber:
		lx.errorNear(msg, lx.t.raw, true)
	default:
		lx.errorNear(msg, token2str(lx.t.kind), true)
	}
}

// advance moves to the next token.
func (lx *lexer) advance() {
	lx.lastLine = lx.line
	if lx.aheadOK {
		lx.t = lx.ahead
		lx.aheadOK = false
		return
	}
	lx.t = lx.scan()
}

func (lx *lexer) lookahead() int {
	lx.ahead = lx.scan()
	lx.aheadOK = true
	return lx.ahead.kind
}

func (lx *lexer) checkNext(set string) bool {
	if lx.cur == eoz || strings.IndexByte(set, byte(lx.cur)) < 0 {
		return false
	}
	lx.saveNext()
	return true
}

func (lx *lexer) scan() token {
	lx.buf = lx.buf[:0]
	for {
		switch c := lx.cur; c {
		case '\n', '\r':
			lx.incLine()
		case '-':
			lx.next()
			if lx.cur != '-' {
				return token{kind: '-'}
			}
			lx.next()
			if lx.cur == '[' {
				sep := lx.skipSep()
				lx.buf = lx.buf[:0]
				if sep >= 0 {
					lx.readLongString(false, sep)
					lx.buf = lx.buf[:0]
					continue
				}
			}
			for !lx.isNewline() && lx.cur != eoz {
				lx.next()
			}
		case '[':
			sep := lx.skipSep()
			if sep >= 0 {
				s := lx.readLongString(true, sep)
				return token{kind: tkString, raw: string(lx.buf), str: s}
			} else if sep == -1 {
				return token{kind: '['}
			}
			lx.lexError("invalid long string delimiter", tkString)
		case '=':
			lx.next()
			if lx.cur != '=' {
				return token{kind: '='}
			}
			lx.next()
			return token{kind: tkEq}
		case '<':
			lx.next()
			if lx.cur != '=' {
				return token{kind: '<'}
			}
			lx.next()
			return token{kind: tkLe}
		case '>':
			lx.next()
			if lx.cur != '=' {
				return token{kind: '>'}
			}
			lx.next()
			return token{kind: tkGe}
		case '~':
			lx.next()
			if lx.cur != '=' {
				return token{kind: '~'}
			}
			lx.next()
			return token{kind: tkNe}
		case '"', '\'':
			s := lx.readString(c)
			return token{kind: tkString, raw: string(lx.buf), str: s}
		case '.':
			lx.saveNext()
			if lx.checkNext(".") {
				if lx.checkNext(".") {
					return token{kind: tkDots}
				}
				return token{kind: tkConcat}
			}
			if !isDigit(lx.cur) {
				return token{kind: '.'}
			}
			return lx.readNumeral()
		case eoz:
			return token{kind: tkEOS}
		default:
			switch {
			case isSpace(c):
				lx.next()
			case isDigit(c):
				return lx.readNumeral()
			case isAlpha(c) || c == '_':
				for isAlnum(lx.cur) || lx.cur == '_' {
					lx.saveNext()
				}
				s := string(lx.buf)
				if r, ok := reservedWords[s]; ok {
					return token{kind: r}
				}
				return token{kind: tkName, raw: s, str: s}
			default:
				lx.next()
				return token{kind: c}
			}
		}
	}
}

func (lx *lexer) readNumeral() token {
	for isDigit(lx.cur) || lx.cur == '.' {
		lx.saveNext()
	}
	if lx.checkNext("Ee") {
		lx.checkNext("+-")
	}
	for isAlnum(lx.cur) || lx.cur == '_' {
		lx.saveNext()
	}
	s := string(lx.buf)
	v, ok := str2d(s)
	if !ok {
		lx.lexError("malformed number", tkNumber)
	}
	return token{kind: tkNumber, raw: s, num: v}
}

// skipSep reads '[' or ']' followed by '='s; it returns the number of '='
// when the bracket repeats, and -count-1 otherwise.
func (lx *lexer) skipSep() int {
	count := 0
	s := lx.cur
	lx.saveNext()
	for lx.cur == '=' {
		lx.saveNext()
		count++
	}
	if lx.cur == s {
		return count
	}
	return -count - 1
}

func (lx *lexer) readLongString(isString bool, sep int) string {
	lx.saveNext() // second '['
	if lx.isNewline() {
		lx.incLine()
	}
	for {
		switch lx.cur {
		case eoz:
			if isString {
				lx.lexError("unfinished long string", tkEOS)
			}
			lx.lexError("unfinished long comment", tkEOS)
		case ']':
			if lx.skipSep() == sep {
				lx.saveNext()
				if !isString {
					return ""
				}
				b := lx.buf
				return string(b[2+sep : len(b)-(2+sep)])
			}
		case '\n', '\r':
			lx.save('\n')
			lx.incLine()
			if !isString {
				lx.buf = lx.buf[:0]
			}
		default:
			if isString {
				lx.saveNext()
			} else {
				lx.next()
			}
		}
	}
}

func (lx *lexer) readString(del int) string {
	lx.saveNext()
	for lx.cur != del {
		switch lx.cur {
		case eoz:
			lx.lexError("unfinished string", tkEOS)
		case '\n', '\r':
			lx.lexError("unfinished string", tkString)
		case '\\':
			lx.next()
			var c int
			switch lx.cur {
			case 'a':
				c = '\a'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case '\n', '\r':
				lx.save('\n')
				lx.incLine()
				continue
			case eoz:
				continue // reported by the loop
			default:
				if !isDigit(lx.cur) {
					lx.saveNext() // \\, \", \' and any other character
					continue
				}
				c = 0
				for i := 0; i < 3 && isDigit(lx.cur); i++ {
					c = 10*c + (lx.cur - '0')
					lx.next()
				}
				if c > 255 {
					lx.lexError("escape sequence too large", tkString)
				}
				lx.save(c)
				continue
			}
			lx.save(c)
			lx.next()
		default:
			lx.saveNext()
		}
	}
	lx.saveNext()
	b := lx.buf
	return string(b[1 : len(b)-1])
}

// Character classes of the C locale.
func isDigit(c int) bool { return c >= '0' && c <= '9' }
func isAlpha(c int) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c int) bool { return isAlpha(c) || isDigit(c) }
func isSpace(c int) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isCntrl(c int) bool { return c >= 0 && c < 32 || c == 127 }
func isXDigit(c int) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
func isPunct(c int) bool {
	return c > 32 && c < 127 && !isAlnum(c)
}
func isLower(c int) bool { return c >= 'a' && c <= 'z' }
func isUpper(c int) bool { return c >= 'A' && c <= 'Z' }
