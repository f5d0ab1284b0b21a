package luaexec

import (
	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 patterns (string.find, match, gmatch, gsub). Written to behave
// like lstrlib.c, including its error messages; the pattern ends at its
// first NUL byte, as in C. Every step of the matcher is counted against the
// work budget, so that a pathological pattern stops like an endless loop.

const (
	maxCaptures   = 32
	capUnfinished = -1
	capPosition   = -2
	patternEsc    = '%'
	patSpecials   = "^$*+?.([%-"
)

type capture struct {
	init int
	len  int
}

type matchState struct {
	e       *Engine
	L       *lua.LState
	src     string
	pat     string
	level   int
	capture [maxCaptures]capture
	steps   int64
}

func (ms *matchState) tick() {
	ms.steps++
	if ms.steps&1023 == 0 {
		ms.e.charge(ms.L, 1024)
	}
}

func (ms *matchState) flush() {
	ms.e.charge(ms.L, ms.steps&1023)
	ms.steps = 0
}

func (ms *matchState) error(msg string) {
	runError(ms.L, msg)
}

func (ms *matchState) patAt(p int) int {
	if p < len(ms.pat) {
		return int(ms.pat[p])
	}
	return 0
}

func (ms *matchState) checkCapture(l int) int {
	l -= '1'
	if l < 0 || l >= ms.level || ms.capture[l].len == capUnfinished {
		ms.error("invalid capture index")
	}
	return l
}

func (ms *matchState) captureToClose() int {
	level := ms.level - 1
	for ; level >= 0; level-- {
		if ms.capture[level].len == capUnfinished {
			return level
		}
	}
	ms.error("invalid pattern capture")
	return 0
}

// classEnd returns the index after the single-character class at p.
func (ms *matchState) classEnd(p int) int {
	c := ms.patAt(p)
	p++
	if c == patternEsc {
		if p >= len(ms.pat) {
			ms.error("malformed pattern (ends with '%')")
		}
		return p + 1
	}
	if c == '[' {
		if ms.patAt(p) == '^' {
			p++
		}
		for { // look for a ']'
			if p >= len(ms.pat) {
				ms.error("malformed pattern (missing ']')")
			}
			c := ms.pat[p]
			p++
			if c == patternEsc && p < len(ms.pat) {
				p++ // skip escapes (e.g. '%]')
			}
			if ms.patAt(p) == ']' {
				break
			}
		}
		return p + 1
	}
	return p
}

func singleClass(c, cl int) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = isCntrl(c)
	case 'd':
		res = isDigit(c)
	case 'l':
		res = isLower(c)
	case 'p':
		res = isPunct(c)
	case 's':
		res = isSpace(c)
	case 'u':
		res = isUpper(c)
	case 'w':
		res = isAlnum(c)
	case 'x':
		res = isXDigit(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if isUpper(cl) {
		return !res
	}
	return res
}

// matchClass tests c against the bracket class between p (at '[') and ec
// (at ']').
func (ms *matchState) matchBracketClass(c, p, ec int) bool {
	sig := true
	if ms.patAt(p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		pc := int(ms.pat[p])
		if pc == patternEsc {
			p++
			if singleClass(c, ms.patAt(p)) {
				return sig
			}
		} else if ms.patAt(p+1) == '-' && p+2 < ec {
			p += 2
			if pc <= c && c <= int(ms.pat[p]) {
				return sig
			}
		} else if pc == c {
			return sig
		}
	}
	return !sig
}

func (ms *matchState) singleMatch(c, p, ep int) bool {
	switch pc := ms.patAt(p); pc {
	case '.':
		return true
	case patternEsc:
		return singleClass(c, ms.patAt(p+1))
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	default:
		return pc == c
	}
}

func (ms *matchState) matchBalance(s, p int) int {
	if p >= len(ms.pat) || p+1 >= len(ms.pat) {
		ms.error("unbalanced pattern")
	}
	if s >= len(ms.src) || int(ms.src[s]) != int(ms.pat[p]) {
		return -1
	}
	b, e := ms.pat[p], ms.pat[p+1]
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.tick()
		switch ms.src[s] {
		case e:
			cont--
			if cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(int(ms.src[s+i]), p, ep) {
		ms.tick()
		i++
	}
	for i >= 0 {
		ms.tick()
		if r := ms.match(s+i, ep+1); r != -1 {
			return r
		}
		i--
	}
	return -1
}

func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		ms.tick()
		if r := ms.match(s, ep+1); r != -1 {
			return r
		}
		if s < len(ms.src) && ms.singleMatch(int(ms.src[s]), p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		ms.error("too many captures")
	}
	ms.capture[ms.level] = capture{init: s, len: what}
	ms.level++
	r := ms.match(s, p)
	if r == -1 {
		ms.level--
	}
	return r
}

func (ms *matchState) endCapture(s, p int) int {
	l := ms.captureToClose()
	ms.capture[l].len = s - ms.capture[l].init
	r := ms.match(s, p)
	if r == -1 {
		ms.capture[l].len = capUnfinished
	}
	return r
}

func (ms *matchState) matchCapture(s, l int) int {
	l = ms.checkCapture(l)
	c := ms.capture[l]
	n := c.len
	if n < 0 {
		return -1
	}
	if len(ms.src)-s >= n && ms.src[c.init:c.init+n] == ms.src[s:s+n] {
		return s + n
	}
	return -1
}

// match returns the end of the match of the pattern from p against the
// source from s, or -1.
func (ms *matchState) match(s, p int) int {
	for {
		ms.tick()
		if p >= len(ms.pat) {
			return s
		}
		switch ms.pat[p] {
		case '(':
			if ms.patAt(p+1) == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case patternEsc:
			switch ms.patAt(p + 1) {
			case 'b':
				s = ms.matchBalance(s, p+2)
				if s == -1 {
					return -1
				}
				p += 4
				continue
			case 'f':
				p += 2
				if ms.patAt(p) != '[' {
					ms.error("missing '[' after '%f' in pattern")
				}
				ep := ms.classEnd(p)
				prev := 0
				if s > 0 {
					prev = int(ms.src[s-1])
				}
				cur := 0
				if s < len(ms.src) {
					cur = int(ms.src[s])
				}
				if ms.matchBracketClass(prev, p, ep-1) || !ms.matchBracketClass(cur, p, ep-1) {
					return -1
				}
				p = ep
				continue
			default:
				if isDigit(ms.patAt(p + 1)) {
					s = ms.matchCapture(s, ms.patAt(p+1))
					if s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		case '$':
			if p+1 == len(ms.pat) {
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		}
		// default: a single character class, maybe with a suffix
		ep := ms.classEnd(p)
		m := s < len(ms.src) && ms.singleMatch(int(ms.src[s]), p, ep)
		switch ms.patAt(ep) {
		case '?':
			if m {
				if r := ms.match(s+1, ep+1); r != -1 {
					return r
				}
			}
			p = ep + 1
			continue
		case '*':
			return ms.maxExpand(s, p, ep)
		case '+':
			if !m {
				return -1
			}
			return ms.maxExpand(s+1, p, ep)
		case '-':
			return ms.minExpand(s, p, ep)
		default:
			if !m {
				return -1
			}
			s++
			p = ep
		}
	}
}

// pushCapture pushes capture i (the whole match when there are none).
func (ms *matchState) captureValue(i, s, e int) lua.LValue {
	if i >= ms.level {
		if i == 0 {
			return lua.LString(ms.src[s:e])
		}
		ms.error("invalid capture index")
	}
	c := ms.capture[i]
	if c.len == capUnfinished {
		ms.error("unfinished capture")
	}
	if c.len == capPosition {
		return lua.LNumber(c.init + 1)
	}
	return lua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes all captures (or the whole match) and returns how
// many; s < 0 means no whole match.
func (ms *matchState) pushCaptures(s, e int) int {
	n := ms.level
	if n == 0 && s >= 0 {
		n = 1
	}
	if n+ms.L.GetTop() > maxCStack {
		runError(ms.L, "stack overflow (too many captures)")
	}
	for i := 0; i < n; i++ {
		ms.L.Push(ms.captureValue(i, s, e))
	}
	return n
}
