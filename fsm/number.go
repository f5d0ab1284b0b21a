package fsm

import (
	"math"
	"math/big"
	"strconv"
)

// Numbers as Redis 7.0 reads and writes them (src/util.c), checked against
// redis-server and glibc. Redis does its float arithmetic in C: scores are
// doubles read with strtod, INCRBYFLOAT and HINCRBYFLOAT work in x86-64's
// 80-bit long double read with strtold. The helpers below reproduce both
// exactly, without cgo:
//
//	parseInt64        string2ll: every integer argument and stored integer
//	parseIntArg       getIntFromObjectOrReply: SELECT and other int arguments
//	parseFloat        string2d: ZADD/ZINCRBY scores and other double arguments
//	parseStrtod       bare strtod as ZRANGEBYSCORE's bounds use it
//	parseLongDouble   string2ld: INCRBYFLOAT/HINCRBYFLOAT operands
//	addLongDouble     their sum, rounded as the x87 unit rounds it
//	formatLongDouble  ld2string LD_STR_HUMAN: the INCRBYFLOAT/HINCRBYFLOAT result
//	formatFloat       formatLongDouble of a double
//	formatScore       addReplyDouble in RESP2 (%.17g): ZSCORE, WITHSCORES, ZINCRBY
//	formatD2String    d2string: integers plainly, otherwise %.17g

// ParseInteger is parseInt64, for the commands outside the state machine
// (SELECT, HELLO, WAIT, CLIENT, SLOWLOG, ...): Redis reads their integers
// with string2ll too, so "+5", "05" and " 5" are not integers there.
func ParseInteger(b []byte) (int64, bool) { return parseInt64(b) }

// parseInt64 parses b as Redis's string2ll does: an optional '-', then
// decimal digits without a leading zero ("0" itself excepted), nothing
// else (no '+', no spaces, no "-0"), fewer than 21 bytes, within int64.
func parseInt64(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n >= 21 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i, neg := 0, false
	if b[0] == '-' {
		neg = true
		i++
		if i == n {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		d := b[i] - '0'
		if d > 9 {
			return 0, false
		}
		if v > math.MaxUint64/10 || v*10 > math.MaxUint64-uint64(d) {
			return 0, false
		}
		v = v*10 + uint64(d)
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(^v + 1), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// msgIntRange is getIntFromObjectOrReply's error for a valid integer
// outside C's int.
const msgIntRange = "ERR value is out of range, value must between -2147483648 and 2147483647"

// parseIntArg parses an argument as Redis's getIntFromObjectOrReply does
// (SELECT, MOVE and COPY's database numbers): a string2ll integer within
// C int. msg is the error reply's text, "" when n is valid.
func parseIntArg(b []byte) (n int, msg string) {
	v, ok := parseInt64(b)
	if !ok {
		return 0, msgNotInt
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, msgIntRange
	}
	return int(v), ""
}

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: string2ld refuses
// inputs of this length or more.
const maxLongDoubleChars = 5 * 1024

// parseFloat parses b as Redis's string2d does (ZADD and ZINCRBY scores,
// getDoubleFromObject): the whole of b must be a number strtod accepts in
// the C locale — decimal or hexadecimal, an optional sign, "inf" or
// "infinity" in any case — with no leading white space. NaN is refused, as
// are values that overflow a double or underflow to zero.
func parseFloat(b []byte) (float64, bool) {
	if f, ok := plainDecimal(b); ok {
		return f, true
	}
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	x, n := scanStrtod(b)
	if n != len(b) || x.kind == cfNaN {
		return 0, false
	}
	f, rangeErr := x.float64()
	if rangeErr {
		return 0, false
	}
	return f, true
}

// parseStrtod parses b the way zslParseRange uses strtod for
// ZRANGEBYSCORE-style bounds: leading white space is skipped, the rest
// must be consumed up to the end or a NUL byte (so "" reads as 0),
// overflow gives ±Inf and underflow 0; only NaN and junk are refused.
func parseStrtod(b []byte) (float64, bool) {
	if f, ok := plainDecimal(b); ok {
		return f, true
	}
	x, n := scanStrtod(b)
	if n < len(b) && b[n] != 0 || x.kind == cfNaN {
		return 0, false
	}
	f, _ := x.float64()
	return f, true
}

// plainDecimal is the fast path of the float parsers: a short plain
// decimal ("-12", "1795342092073", "0.25") cannot overflow or underflow,
// and strconv rounds it correctly, as strtod does.
func plainDecimal(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 17 {
		return 0, false
	}
	i := 0
	if b[0] == '-' {
		i++
	}
	digits, dot := 0, false
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// parseLongDouble parses b as Redis's string2ld does (INCRBYFLOAT and
// HINCRBYFLOAT operands): like parseFloat, but in 80-bit long double
// precision and range, and only for inputs shorter than 5 KiB. The result
// has at most 64 bits of precision; it may be infinite ("inf").
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars || isCSpace(b[0]) {
		return nil, false
	}
	x, n := scanStrtod(b)
	if n != len(b) || x.kind == cfNaN {
		return nil, false
	}
	f, rangeErr := x.longDouble()
	if rangeErr {
		return nil, false
	}
	return f, true
}

// addLongDouble returns a+b rounded to long double precision. ok is false
// when the sum is infinite or NaN, for which Redis replies "ERR increment
// would produce NaN or Infinity".
func addLongDouble(a, b *big.Float) (sum *big.Float, ok bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	z := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a, b)
	if z.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return z, true
}

// formatLongDouble prints x as Redis's ld2string in LD_STR_HUMAN mode
// does: "%.17Lf", trailing zeros and a trailing '.' cut, "-0" as "0", and
// infinities as "inf" and "-inf". 0.1+0.2 prints as "0.3", 1e20 as
// "100000000000000000000", 1e-20 as "0".
func formatLongDouble(x *big.Float) []byte {
	if x.IsInf() {
		if x.Signbit() {
			return []byte("-inf")
		}
		return []byte("inf")
	}
	b := x.Append(nil, 'f', 17)
	i := len(b)
	for b[i-1] == '0' {
		i--
	}
	if b[i-1] == '.' {
		i--
	}
	b = b[:i]
	if string(b) == "-0" {
		return []byte("0")
	}
	return b
}

// formatFloat prints a double the way Redis prints an INCRBYFLOAT result
// (formatLongDouble of the same value): formatFloat(10.5) is "10.5",
// formatFloat(0.1) is "0.10000000000000001", formatFloat(3e-18) is "0".
func formatFloat(f float64) []byte {
	if math.IsNaN(f) {
		return []byte("nan")
	}
	return formatLongDouble(new(big.Float).SetFloat64(f))
}

// formatScore prints a double as Redis 7.0's addReplyDouble does for RESP2
// (ZSCORE, ZRANGE WITHSCORES, ZINCRBY, ZADD INCR): C's "%.17g", with
// infinities as "inf" and "-inf". So 1.5 is "1.5", 922337203685477 is
// "922337203685477", 0.1 is "0.10000000000000001", 1e20 is "1e+20".
// Negative zero prints as "0": redis-server 7.0.15 answers ZADD z -0 m,
// ZSCORE z m with "0", and ZINCRBY z -0 m likewise.
func formatScore(f float64) []byte {
	switch {
	case f == 0:
		return []byte("0")
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	case math.IsNaN(f):
		return []byte("nan")
	}
	return appendG17(nil, f)
}

// formatD2String prints a double as Redis's d2string does: "nan", "inf",
// "-inf", "0" or "-0", integral values within ±2^62 as integers, anything
// else with "%.17g".
func formatD2String(f float64) []byte {
	switch {
	case math.IsNaN(f):
		return []byte("nan")
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	case f == 0:
		if math.Signbit(f) {
			return []byte("-0")
		}
		return []byte("0")
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.AppendInt(nil, int64(f), 10)
	}
	return appendG17(nil, f)
}

// appendG17 appends C's printf("%.17g", f) for a finite f. Go's 'g' verb
// with precision 17 chooses between the two notations by C's rule and
// drops trailing zeros as C does; only the exponent needs care (C writes
// at least two digits, as Go does).
func appendG17(dst []byte, f float64) []byte {
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

func isCSpace(c byte) bool {
	return c == ' ' || c >= '\t' && c <= '\r'
}

// Long double (x87 80-bit extended) parameters, in big.Float's terms
// (x = m × 2^exp with 0.5 <= m < 1).
const (
	ldPrec   = 64
	ldMaxExp = 16384  // exponent of the largest finite value
	ldMinExp = -16381 // exponent of the smallest normal value, 2^-16382
)

type cfKind uint8

const (
	cfNum cfKind = iota
	cfInf
	cfNaN
)

// cfloat is a number as strtod scanned it, before rounding.
type cfloat struct {
	kind cfKind
	neg  bool
	hex  bool
	sig  []byte // significant digits (decimal or hex), no leading zeros; empty for zero
	pos  int64  // value = 0.sig × base^pos, base 10 or 16
	exp  int64  // binary exponent (hex) or decimal exponent, added to pos
}

// maxSigDigits bounds the digits kept from a mantissa. More than enough
// for exact long double rounding of any input string2ld accepts (under
// 5 KiB); later non-zero digits only matter as a sticky bit.
const maxSigDigits = 12000

// maxExpAbs saturates exponents; anything beyond is overflow or
// underflow anyway.
const maxExpAbs = 1 << 40

// scanStrtod scans the longest prefix of b that C's strtod accepts in the
// C locale and returns it with its length; n is 0 when there is no
// number (strtod then sets its end pointer to the start of the string).
func scanStrtod(b []byte) (x cfloat, n int) {
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		x.neg = b[i] == '-'
		i++
	}
	if hasPrefixFold(b[i:], "inf") {
		x.kind = cfInf
		if hasPrefixFold(b[i:], "infinity") {
			return x, i + 8
		}
		return x, i + 3
	}
	if hasPrefixFold(b[i:], "nan") {
		x.kind = cfNaN
		i += 3
		if i < len(b) && b[i] == '(' {
			j := i + 1
			for j < len(b) && (isAlnum(b[j]) || b[j] == '_') {
				j++
			}
			if j < len(b) && b[j] == ')' {
				i = j + 1
			}
		}
		return x, i
	}
	if i+1 < len(b) && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X') {
		if m, ok := x.scanMantissa(b[i+2:], true); ok {
			x.hex = true
			i += 2 + m
			return x, i + scanExponent(b[i:], 'p', &x.exp)
		}
		x = cfloat{neg: x.neg} // "0x" without hex digits: just the 0
	}
	m, ok := x.scanMantissa(b[i:], false)
	if !ok {
		return cfloat{}, 0
	}
	i += m
	return x, i + scanExponent(b[i:], 'e', &x.exp)
}

// scanMantissa scans digits with an optional point; it needs at least one
// digit.
func (x *cfloat) scanMantissa(b []byte, hex bool) (n int, ok bool) {
	digits, point, sticky := 0, false, false
	for ; n < len(b); n++ {
		c := b[n]
		if c == '.' && !point {
			point = true
			continue
		}
		if !isDigit(c, hex) {
			break
		}
		digits++
		switch {
		case len(x.sig) == 0 && c == '0':
			if point {
				x.pos--
			}
		case len(x.sig) < maxSigDigits:
			x.sig = append(x.sig, c)
			if !point {
				x.pos++
			}
		default:
			sticky = sticky || c != '0'
			if !point {
				x.pos++
			}
		}
	}
	if digits == 0 {
		x.sig, x.pos = nil, 0
		return 0, false
	}
	if len(x.sig) == 0 {
		x.pos = 0
	}
	if sticky {
		x.sig = append(x.sig, '1')
	}
	return n, true
}

// scanExponent scans an exponent part (e or p, sign, digits) into *exp and
// returns its length, 0 when there is none.
func scanExponent(b []byte, mark byte, exp *int64) int {
	if len(b) < 2 || b[0]|0x20 != mark {
		return 0
	}
	i, neg := 1, false
	if b[i] == '+' || b[i] == '-' {
		neg = b[i] == '-'
		i++
	}
	start := i
	var e int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if e < maxExpAbs {
			e = e*10 + int64(b[i]-'0')
		}
		i++
	}
	if i == start {
		return 0
	}
	if neg {
		e = -e
	}
	*exp = e
	return i
}

// magnitude returns m with 2^(m-1) <= |x| < 2^m, roughly (within a few
// bits), for finite non-zero x.
func (x *cfloat) magnitude() int64 {
	if x.hex {
		return 4*x.pos + x.exp
	}
	// log2(10) < 3.33; generous bounds are fine: only used to rule out
	// values far outside the format's range.
	return (x.pos + x.exp) * 3322 / 1000
}

// rat returns the exact value of a finite non-zero x, without its sign.
func (x *cfloat) rat() *big.Rat {
	mant := new(big.Int)
	base := int64(10)
	if x.hex {
		base = 16
	}
	mant.SetString(string(x.sig), int(base))
	var scale int64
	var num, den *big.Int
	if x.hex {
		scale = 4*(x.pos-int64(len(x.sig))) + x.exp
		num, den = mant, big.NewInt(1)
		if scale >= 0 {
			num.Lsh(num, uint(scale))
		} else {
			den.Lsh(den, uint(-scale))
		}
	} else {
		scale = x.pos - int64(len(x.sig)) + x.exp
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(scale)), nil)
		num, den = mant, big.NewInt(1)
		if scale >= 0 {
			num.Mul(num, p)
		} else {
			den = p
		}
	}
	return new(big.Rat).SetFrac(num, den)
}

// float64 rounds x to a double as strtod does. rangeErr reports what
// strtod reports as ERANGE with a result of ±HUGE_VAL or zero.
func (x *cfloat) float64() (f float64, rangeErr bool) {
	switch {
	case x.kind == cfNaN:
		f = math.NaN()
	case x.kind == cfInf:
		f = math.Inf(1)
	case len(x.sig) == 0:
		f = 0
	case x.magnitude() > 1100:
		f, rangeErr = math.Inf(1), true
	case x.magnitude() < -1150:
		f, rangeErr = 0, true
	default:
		f, _ = x.rat().Float64()
		rangeErr = f == 0 || math.IsInf(f, 0)
	}
	if x.neg {
		f = -f
	}
	return f, rangeErr
}

// longDouble rounds x to an x87 long double as strtold does.
func (x *cfloat) longDouble() (f *big.Float, rangeErr bool) {
	f = new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	switch {
	case x.kind == cfInf:
		f.SetInf(false)
	case len(x.sig) == 0:
	case x.magnitude() > ldMaxExp+100:
		f.SetInf(false)
		rangeErr = true
	case x.magnitude() < ldMinExp-200:
		rangeErr = true
	default:
		r := x.rat()
		f.SetRat(r)
		e := f.MantExp(nil)
		if e > ldMaxExp {
			f.SetInf(false)
			rangeErr = true
			break
		}
		if e >= ldMinExp {
			break
		}
		// Subnormal: fewer bits of precision are left.
		p := int64(ldPrec) - (ldMinExp - int64(e))
		if p >= 1 {
			f.SetPrec(uint(p)).SetRat(r)
			break
		}
		// Below the smallest subnormal, 2^-16445: round to it or to zero.
		half := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 16446))
		f.SetPrec(1)
		if p == 0 && r.Cmp(half) > 0 {
			f.SetMantExp(big.NewFloat(0.5), ldMinExp-ldPrec+1)
		} else {
			f.SetInt64(0)
			rangeErr = true
		}
	}
	if x.neg {
		f.Neg(f)
	}
	return f, rangeErr
}

func hasPrefixFold(b []byte, s string) bool {
	if len(b) < len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

func isDigit(c byte, hex bool) bool {
	if c >= '0' && c <= '9' {
		return true
	}
	c |= 0x20
	return hex && c >= 'a' && c <= 'f'
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
