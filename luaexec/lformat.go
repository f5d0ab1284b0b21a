package luaexec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.format, with the conversions and quirks of Lua 5.1's str_format on
// top of glibc's printf.

const formatFlags = "-+ #0"

type fmtSpec struct {
	minus, plus, space, hash, zero bool
	width                          int
	prec                           int // -1: none
}

func (e *Engine) strFormat(L *lua.LState) int {
	top := L.GetTop()
	arg := 1
	f := checkString(L, arg)
	var b []byte
	add := func(s string) {
		e.growBytes(L, len(b), len(s))
		b = append(b, s...)
	}
	for i := 0; i < len(f); {
		c := f[i]
		if c != '%' {
			j := strings.IndexByte(f[i:], '%')
			if j < 0 {
				j = len(f) - i
			}
			add(f[i : i+j])
			i += j
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			add("%")
			i++
			continue
		}
		arg++
		if arg > top {
			argError(L, arg, "no value")
		}
		// scanformat: flags, up to 2 width digits, '.', up to 2 precision digits
		at := func(k int) byte {
			if k < len(f) {
				return f[k]
			}
			return 0
		}
		p := i
		for at(p) != 0 && strings.IndexByte(formatFlags, at(p)) >= 0 {
			p++
		}
		if p-i >= len(formatFlags)+1 {
			runError(L, "invalid format (repeated flags)")
		}
		var spec fmtSpec
		spec.prec = -1
		for _, fc := range f[i:p] {
			switch fc {
			case '-':
				spec.minus = true
			case '+':
				spec.plus = true
			case ' ':
				spec.space = true
			case '#':
				spec.hash = true
			case '0':
				spec.zero = true
			}
		}
		for k := 0; k < 2 && isDigit(int(at(p))); k++ {
			spec.width = spec.width*10 + int(at(p)-'0')
			p++
		}
		if at(p) == '.' {
			p++
			spec.prec = 0
			for k := 0; k < 2 && isDigit(int(at(p))); k++ {
				spec.prec = spec.prec*10 + int(at(p)-'0')
				p++
			}
		}
		if isDigit(int(at(p))) {
			runError(L, "invalid format (width or precision too long)")
		}
		conv := at(p)
		i = p + 1
		var item string
		switch conv {
		case 'c':
			item = pad(spec, "", string([]byte{byte(toCInt(checkNumber(L, arg)))}), false)
		case 'd', 'i':
			item = formatInt(spec, toCLong(checkNumber(L, arg)))
		case 'o', 'u', 'x', 'X':
			item = formatUint(spec, conv, toCULong(checkNumber(L, arg)))
		case 'e', 'E', 'f', 'g', 'G':
			item = formatFloat(spec, conv, checkNumber(L, arg))
		case 'q':
			add(quoteString(checkString(L, arg)))
			continue
		case 's':
			s := checkString(L, arg)
			if spec.prec < 0 && len(s) >= 100 {
				add(s)
				continue
			}
			s = cstr(s)
			if spec.prec >= 0 && len(s) > spec.prec {
				s = s[:spec.prec]
			}
			item = pad(spec, "", s, false)
		default:
			runError(L, fmt.Sprintf("invalid option '%%%c' to 'format'", conv))
		}
		add(cstr(item)) // C appends the item with strlen
	}
	L.Push(lua.LString(b))
	return 1
}

// pad applies the width: prefix (sign, 0x) stays in front of zero padding.
func pad(spec fmtSpec, prefix, body string, zeroOK bool) string {
	n := len(prefix) + len(body)
	if n >= spec.width {
		return prefix + body
	}
	fill := spec.width - n
	switch {
	case spec.minus:
		return prefix + body + strings.Repeat(" ", fill)
	case spec.zero && zeroOK:
		return prefix + strings.Repeat("0", fill) + body
	default:
		return strings.Repeat(" ", fill) + prefix + body
	}
}

func signPrefix(spec fmtSpec, neg bool) string {
	switch {
	case neg:
		return "-"
	case spec.plus:
		return "+"
	case spec.space:
		return " "
	}
	return ""
}

func formatInt(spec fmtSpec, v int64) string {
	neg := v < 0
	var digits string
	if neg {
		digits = strconv.FormatUint(uint64(-v), 10)
	} else {
		digits = strconv.FormatInt(v, 10)
	}
	digits = applyIntPrecision(spec, digits, v == 0)
	return pad(spec, signPrefix(spec, neg), digits, spec.prec < 0)
}

func applyIntPrecision(spec fmtSpec, digits string, zero bool) string {
	if spec.prec >= 0 {
		if spec.prec == 0 && zero {
			return ""
		}
		if len(digits) < spec.prec {
			digits = strings.Repeat("0", spec.prec-len(digits)) + digits
		}
	}
	return digits
}

func formatUint(spec fmtSpec, conv byte, v uint64) string {
	var digits, prefix string
	switch conv {
	case 'o':
		digits = strconv.FormatUint(v, 8)
	case 'u':
		digits = strconv.FormatUint(v, 10)
	case 'x':
		digits = strconv.FormatUint(v, 16)
	case 'X':
		digits = strings.ToUpper(strconv.FormatUint(v, 16))
	}
	digits = applyIntPrecision(spec, digits, v == 0)
	if spec.hash {
		switch conv {
		case 'o':
			if !strings.HasPrefix(digits, "0") {
				digits = "0" + digits
			}
		case 'x':
			if v != 0 {
				prefix = "0x"
			}
		case 'X':
			if v != 0 {
				prefix = "0X"
			}
		}
	}
	return pad(spec, prefix, digits, spec.prec < 0)
}

func formatFloat(spec fmtSpec, conv byte, f float64) string {
	neg := math.Signbit(f)
	upper := conv == 'E' || conv == 'G'
	if math.IsInf(f, 0) || math.IsNaN(f) {
		body := "inf"
		if math.IsNaN(f) {
			body = "nan"
		}
		if upper {
			body = strings.ToUpper(body)
		}
		return pad(spec, signPrefix(spec, neg), body, false)
	}
	prec := spec.prec
	if prec < 0 {
		prec = 6
	}
	a := math.Abs(f)
	var body string
	switch conv {
	case 'e', 'E':
		body = strconv.FormatFloat(a, 'e', prec, 64)
		if spec.hash && prec == 0 {
			body = strings.Replace(body, "e", ".e", 1)
		}
	case 'f':
		body = strconv.FormatFloat(a, 'f', prec, 64)
		if spec.hash && prec == 0 {
			body += "."
		}
	case 'g', 'G':
		body = formatG(a, prec, spec.hash)
	}
	if upper {
		body = strings.ToUpper(body)
	}
	return pad(spec, signPrefix(spec, neg), body, true)
}

// formatG is C's %g for a non-negative finite number.
func formatG(a float64, prec int, hash bool) string {
	if prec == 0 {
		prec = 1
	}
	if !hash {
		return strconv.FormatFloat(a, 'g', prec, 64)
	}
	// exponent after rounding to prec significant digits
	es := strconv.FormatFloat(a, 'e', prec-1, 64)
	x, _ := strconv.Atoi(es[strings.IndexByte(es, 'e')+1:])
	var s string
	if prec > x && x >= -4 {
		s = strconv.FormatFloat(a, 'f', prec-1-x, 64)
	} else {
		s = es
	}
	if !strings.Contains(s, ".") {
		if i := strings.IndexByte(s, 'e'); i >= 0 {
			s = s[:i] + "." + s[i:]
		} else {
			s += "."
		}
	}
	return s
}

// quoteString is %q.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\000`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
