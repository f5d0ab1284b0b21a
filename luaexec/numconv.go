package luaexec

import (
	"math"
	"strconv"
	"strings"
)

// Number <-> string conversions with the exact behaviour of Lua 5.1 as built
// into Redis on glibc: strings become numbers as strtod reads them, numbers
// become strings with "%.14g" (and "%.17g" for redis.call arguments).

// str2d converts a string to a number like luaO_str2d: the whole string
// (up to the first NUL, as C sees it) must be a number, optionally surrounded
// by white space; hexadecimal is accepted.
func str2d(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if v, ok := fastDecimal(s); ok {
		return v, true
	}
	v, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	if n < len(s) && (s[n] == 'x' || s[n] == 'X') {
		var u uint64
		u, n = strtoul(s, 16)
		v = float64(u)
	}
	for n < len(s) && isSpace(int(s[n])) {
		n++
	}
	return v, n == len(s)
}

// fastDecimal handles the common case of a short decimal integer.
func fastDecimal(s string) (float64, bool) {
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	i, neg := 0, false
	if s[0] == '-' {
		neg, i = true, 1
		if len(s) == 1 {
			return 0, false
		}
	}
	var n int64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		if n == 0 {
			return math.Copysign(0, -1), true
		}
		return float64(-n), true
	}
	return float64(n), true
}

// strtod reads the longest prefix of s that glibc's strtod accepts and
// returns its value and length (0 when there is no number).
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isSpace(int(s[i])) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(v float64) float64 {
		if neg {
			return -v
		}
		return v
	}
	rest := s[i:]
	// inf, infinity, nan, nan(chars)
	if len(rest) >= 3 {
		switch strings.ToLower(rest[:3]) {
		case "inf":
			n := 3
			if len(rest) >= 8 && strings.EqualFold(rest[:8], "infinity") {
				n = 8
			}
			return sign(math.Inf(1)), i + n
		case "nan":
			n := 3
			if n < len(rest) && rest[n] == '(' {
				j := n + 1
				for j < len(rest) && (isAlnum(int(rest[j])) || rest[j] == '_') {
					j++
				}
				if j < len(rest) && rest[j] == ')' {
					n = j + 1
				}
			}
			nan := math.Float64frombits(0x7ff8000000000000)
			if neg {
				nan = math.Float64frombits(0xfff8000000000000)
			}
			return nan, i + n
		}
	}
	// hexadecimal
	if len(rest) >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') {
		j := 2
		digits := 0
		for j < len(rest) && isXDigit(int(rest[j])) {
			j++
			digits++
		}
		if j < len(rest) && rest[j] == '.' {
			j++
			for j < len(rest) && isXDigit(int(rest[j])) {
				j++
				digits++
			}
		}
		if digits > 0 {
			mant := rest[2:j]
			exp := "p0"
			if j < len(rest) && (rest[j] == 'p' || rest[j] == 'P') {
				k := j + 1
				if k < len(rest) && (rest[k] == '+' || rest[k] == '-') {
					k++
				}
				if k < len(rest) && isDigit(int(rest[k])) {
					for k < len(rest) && isDigit(int(rest[k])) {
						k++
					}
					exp = "p" + rest[j+1:k]
					j = k
				}
			}
			if mant == "." {
				return 0, 0
			}
			v, err := strconv.ParseFloat("0x"+mant+exp, 64)
			if err != nil && !isRangeErr(err) {
				return 0, 0
			}
			return sign(v), i + j
		}
		// "0x" without digits: the number is the "0"
		return sign(0), i + 1
	}
	// decimal
	j := 0
	digits := 0
	for j < len(rest) && isDigit(int(rest[j])) {
		j++
		digits++
	}
	if j < len(rest) && rest[j] == '.' {
		j++
		for j < len(rest) && isDigit(int(rest[j])) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if j < len(rest) && (rest[j] == 'e' || rest[j] == 'E') {
		k := j + 1
		if k < len(rest) && (rest[k] == '+' || rest[k] == '-') {
			k++
		}
		if k < len(rest) && isDigit(int(rest[k])) {
			for k < len(rest) && isDigit(int(rest[k])) {
				k++
			}
			j = k
		}
	}
	v, err := strconv.ParseFloat(rest[:j], 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	_ = start
	return sign(v), i + j
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// strtoul reads an unsigned integer prefix like C's strtoul (base 2..36),
// returning the value and the length read (0 when none).
func strtoul(s string, base int) (uint64, int) {
	i := 0
	for i < len(s) && isSpace(int(s[i])) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		if i+2 < len(s) && digitVal(s[i+2]) < 16 {
			i += 2
		}
	}
	start := i
	var v uint64
	overflow := false
	for i < len(s) {
		d := digitVal(s[i])
		if d >= base {
			break
		}
		hi, lo := mulAdd(v, uint64(base), uint64(d))
		if hi != 0 {
			overflow = true
		}
		v = lo
		i++
	}
	if i == start {
		return 0, 0
	}
	if overflow {
		return math.MaxUint64, i
	}
	if neg {
		v = -v
	}
	return v, i
}

func mulAdd(a, b, c uint64) (hi, lo uint64) {
	// a*b + c with overflow detection
	if a != 0 && b > math.MaxUint64/a {
		return 1, 0
	}
	p := a * b
	if p+c < p {
		return 1, 0
	}
	return 0, p + c
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

// fmtNumber formats a Lua number as Lua's tostring does ("%.14g").
func fmtNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 {
		if f == 0 && math.Signbit(f) {
			return "-0"
		}
		return strconv.FormatInt(int64(f), 10)
	}
	return fmtG(f, 14)
}

// appendNumber appends fmtNumber(f) to dst.
func appendNumber(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 && !(f == 0 && math.Signbit(f)) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return append(dst, fmtG(f, 14)...)
}

// fmtG formats like C's printf("%.<prec>g").
func fmtG(f float64, prec int) string {
	if s, ok := fmtSpecial(f, false); ok {
		return s
	}
	if prec == 0 {
		prec = 1
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}

// fmtSpecial renders infinities and NaNs as glibc does.
func fmtSpecial(f float64, upper bool) (string, bool) {
	var s string
	switch {
	case math.IsInf(f, 1):
		s = "inf"
	case math.IsInf(f, -1):
		s = "-inf"
	case math.IsNaN(f):
		s = "nan"
		if math.Signbit(f) {
			s = "-nan"
		}
	default:
		return "", false
	}
	if upper {
		s = strings.ToUpper(s)
	}
	return s, true
}

// fmtArg formats a number passed to redis.call ("%.17g").
func fmtArg(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 && !(f == 0 && math.Signbit(f)) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	if s, ok := fmtSpecial(f, false); ok {
		return append(dst, s...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// toInteger converts a double to a C int the way the x86-64 cvttsd2si
// instruction does (out-of-range and NaN give the minimum value), which is
// what (int)d compiles to in the Lua libraries.
func toCInt(f float64) int32 {
	if f != f || f >= 2147483648.0 || f <= -2147483649.0 {
		return math.MinInt32
	}
	return int32(f)
}

// toCLong converts a double to a C long (64-bit) like cvttsd2si.
func toCLong(f float64) int64 {
	if f != f || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// toCULong converts a double to a C unsigned long as gcc does on x86-64.
func toCULong(f float64) uint64 {
	if f < 9223372036854775808.0 {
		return uint64(toCLong(f))
	}
	if f != f || f >= 18446744073709551616.0 {
		return 0
	}
	return uint64(f)
}
