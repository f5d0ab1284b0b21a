package luaexec

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson as Redis ships it (lua-cjson 2.1.0). Its settings (cjson.encode_*,
// cjson.decode_*) outlive the script that changes them, as in Redis; they
// are part of Engine.State.

type cjsonConfig struct {
	sparseConvert  int
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	encodeInvalid  int // 0 off, 1 on, 2 null
	decodeInvalid  int
	keepBuffer     int
	precision      int
}

func defaultCjsonConfig() cjsonConfig {
	return cjsonConfig{
		sparseConvert:  0,
		sparseRatio:    2,
		sparseSafe:     10,
		encodeMaxDepth: 1000,
		decodeMaxDepth: 1000,
		encodeInvalid:  0,
		decodeInvalid:  1,
		keepBuffer:     1,
		precision:      14,
	}
}

func (sb *sandbox) openCjson(L *lua.LState) *lua.LTable {
	sb.cjsonNull = L.NewUserData()
	return sb.newCjson(L, &sb.e.cjsonCfg)
}

func (sb *sandbox) newCjson(L *lua.LState, cfg *cjsonConfig) *lua.LTable {
	e := sb.e
	return sb.newLib(L, 0,
		fnEntry("encode", func(L *lua.LState) int {
			if L.GetTop() != 1 {
				argError(L, 1, "expected 1 argument")
			}
			enc := &jsonEncoder{e: e, L: L, cfg: cfg}
			enc.value(L.Get(1), 0)
			L.Push(lua.LString(enc.buf))
			return 1
		}),
		fnEntry("decode", func(L *lua.LState) int {
			if L.GetTop() != 1 {
				argError(L, 1, "expected 1 argument")
			}
			s := checkString(L, 1)
			e.charge(L, int64(len(s)))
			if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
				runError(L, "JSON parser does not support UTF-16 or UTF-32")
			}
			d := &jsonDecoder{e: e, L: L, cfg: cfg, data: s}
			tok := d.next()
			v := d.value(tok)
			if tok = d.next(); tok.kind != tEnd {
				d.parseError("the end", tok)
			}
			L.Push(v)
			return 1
		}),
		fnEntry("encode_sparse_array", func(L *lua.LState) int {
			cjsonArgs(L, 3)
			cjsonEnum(L, 1, &cfg.sparseConvert, nil, 1)
			cjsonInt(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
			cjsonInt(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
			return 3
		}),
		fnEntry("encode_max_depth", func(L *lua.LState) int {
			cjsonArgs(L, 1)
			return cjsonInt(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
		}),
		fnEntry("decode_max_depth", func(L *lua.LState) int {
			cjsonArgs(L, 1)
			return cjsonInt(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
		}),
		fnEntry("encode_number_precision", func(L *lua.LState) int {
			cjsonArgs(L, 1)
			return cjsonInt(L, 1, &cfg.precision, 1, 14)
		}),
		fnEntry("encode_keep_buffer", func(L *lua.LState) int {
			cjsonArgs(L, 1)
			return cjsonEnum(L, 1, &cfg.keepBuffer, nil, 1)
		}),
		fnEntry("encode_invalid_numbers", func(L *lua.LState) int {
			cjsonArgs(L, 1)
			return cjsonEnum(L, 1, &cfg.encodeInvalid, []string{"off", "on", "null"}, 1)
		}),
		fnEntry("decode_invalid_numbers", func(L *lua.LState) int {
			cjsonArgs(L, 1)
			return cjsonEnum(L, 1, &cfg.decodeInvalid, nil, 1)
		}),
		fnEntry("new", func(L *lua.LState) int {
			c := defaultCjsonConfig()
			L.Push(sb.newCjson(L, &c))
			return 1
		}),
		valEntry("null", sb.cjsonNull),
		valEntry("_NAME", lua.LString("cjson")),
		valEntry("_VERSION", lua.LString("2.1.0")),
	)
}

func cjsonArgs(L *lua.LState, n int) {
	if L.GetTop() > n {
		argError(L, n+1, "found too many arguments")
	}
	for L.GetTop() < n {
		L.Push(lua.LNil)
	}
}

func cjsonInt(L *lua.LState, idx int, setting *int, min, max int) int {
	if L.Get(idx) != lua.LNil {
		v := int(checkInteger(L, idx))
		if v < min || v > max {
			argError(L, 1, fmt.Sprintf("expected integer between %d and %d", min, max))
		}
		*setting = v
	}
	L.Push(lua.LNumber(*setting))
	return 1
}

func cjsonEnum(L *lua.LState, idx int, setting *int, options []string, boolTrue int) int {
	if options == nil {
		options = []string{"off", "on"}
		boolTrue = 1
	}
	if v := L.Get(idx); v != lua.LNil {
		if b, ok := v.(lua.LBool); ok && boolTrue != 0 {
			*setting = 0
			if b {
				*setting = boolTrue
			}
		} else {
			s := checkString(L, idx)
			found := -1
			for i, o := range options {
				if o == s {
					found = i
				}
			}
			if found < 0 {
				argError(L, idx, "invalid option '"+cstr(s)+"'")
			}
			*setting = found
		}
	}
	if boolTrue != 0 && (*setting == 0 || *setting == boolTrue) {
		L.Push(lua.LBool(*setting != 0))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
	return 1
}

// --- encoding --------------------------------------------------------------------

var jsonEscapes = func() [256]string {
	var t [256]string
	for i := 0; i < 32; i++ {
		t[i] = fmt.Sprintf("\\u%04x", i)
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = `\b`, `\t`, `\n`, `\f`, `\r`
	t['"'], t['\\'], t['/'] = `\"`, `\\`, `\/`
	t[0x7f] = `\u007f`
	return t
}()

type jsonEncoder struct {
	e   *Engine
	L   *lua.LState
	cfg *cjsonConfig
	buf []byte
}

func (enc *jsonEncoder) grow(n int) {
	enc.e.growBytes(enc.L, len(enc.buf), n)
}

func (enc *jsonEncoder) fail(v lua.LValue, reason string) {
	runError(enc.L, "Cannot serialise "+typeName(v)+": "+reason)
}

func (enc *jsonEncoder) str(s string) {
	enc.grow(len(s) + 2)
	enc.buf = append(enc.buf, '"')
	for i := 0; i < len(s); i++ {
		if esc := jsonEscapes[s[i]]; esc != "" {
			enc.buf = append(enc.buf, esc...)
		} else {
			enc.buf = append(enc.buf, s[i])
		}
	}
	enc.buf = append(enc.buf, '"')
}

func (enc *jsonEncoder) number(v lua.LValue, f float64) {
	switch enc.cfg.encodeInvalid {
	case 0:
		if math.IsInf(f, 0) || math.IsNaN(f) {
			enc.fail(v, "must not be NaN or Inf")
		}
	case 1:
		if math.IsNaN(f) {
			enc.buf = append(enc.buf, "nan"...)
			return
		}
	default:
		if math.IsInf(f, 0) || math.IsNaN(f) {
			enc.buf = append(enc.buf, "null"...)
			return
		}
	}
	s := fmtG(f, enc.cfg.precision)
	enc.grow(len(s))
	enc.buf = append(enc.buf, s...)
}

func (enc *jsonEncoder) value(v lua.LValue, depth int) {
	enc.e.charge(enc.L, 1)
	switch x := v.(type) {
	case lua.LString:
		enc.str(string(x))
	case lua.LNumber:
		enc.number(v, float64(x))
	case lua.LBool:
		if x {
			enc.buf = append(enc.buf, "true"...)
		} else {
			enc.buf = append(enc.buf, "false"...)
		}
	case *lua.LNilType:
		enc.buf = append(enc.buf, "null"...)
	case *lua.LTable:
		depth++
		if depth > enc.cfg.encodeMaxDepth || depth > maxCStack/3 {
			runError(enc.L, fmt.Sprintf("Cannot serialise, excessive nesting (%d)", depth))
		}
		t := enc.e.sb.real(x)
		if n := enc.arrayLength(v, t); n > 0 {
			enc.buf = append(enc.buf, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					enc.buf = append(enc.buf, ',')
				}
				enc.value(rawGetInt(t, i), depth)
			}
			enc.buf = append(enc.buf, ']')
			return
		}
		enc.buf = append(enc.buf, '{')
		first := true
		for _, k := range enc.e.luaOrder(enc.L, t) {
			val := t.RawGet(k)
			enc.e.charge(enc.L, 1)
			if !first {
				enc.buf = append(enc.buf, ',')
			}
			first = false
			switch kx := k.(type) {
			case lua.LNumber:
				enc.buf = append(enc.buf, '"')
				enc.number(k, float64(kx))
				enc.buf = append(enc.buf, '"', ':')
			case lua.LString:
				enc.str(string(kx))
				enc.buf = append(enc.buf, ':')
			default:
				enc.fail(k, "table key must be a number or string")
			}
			enc.value(val, depth)
		}
		enc.buf = append(enc.buf, '}')
	case *lua.LUserData:
		if x == enc.e.sb.cjsonNull {
			enc.buf = append(enc.buf, "null"...)
			return
		}
		enc.fail(v, "type not supported")
	default:
		enc.fail(v, "type not supported")
	}
}

// arrayLength is lua_array_length: the size of a pure array, 0 for an empty
// table, -1 for an object.
func (enc *jsonEncoder) arrayLength(v lua.LValue, t *lua.LTable) int {
	max, items := 0.0, 0
	k, _ := t.Next(lua.LNil)
	for k != lua.LNil {
		enc.e.charge(enc.L, 1)
		n, ok := k.(lua.LNumber)
		if !ok || n == 0 || math.Floor(float64(n)) != float64(n) || n < 1 {
			return -1
		}
		if float64(n) > max {
			max = float64(n)
		}
		items++
		k, _ = t.Next(k)
	}
	c := enc.cfg
	if c.sparseRatio > 0 && max > float64(items*c.sparseRatio) && max > float64(c.sparseSafe) {
		if c.sparseConvert == 0 {
			enc.fail(v, "excessively sparse array")
		}
		return -1
	}
	return int(max)
}

// --- decoding --------------------------------------------------------------------

const (
	tObjBegin = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var jsonTokenNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

var jsonCh2Token = func() [256]int {
	var t [256]int
	for i := range t {
		t[i] = tError
	}
	t['{'], t['}'], t['['], t[']'], t[','], t[':'] = tObjBegin, tObjEnd, tArrBegin, tArrEnd, tComma, tColon
	t[0] = tEnd
	t[' '], t['\t'], t['\n'], t['\r'] = tWhitespace, tWhitespace, tWhitespace, tWhitespace
	for _, c := range "fiInNt\"+-0123456789" {
		t[c] = tUnknown
	}
	return t
}()

var jsonEscape2Char = func() [256]byte {
	var t [256]byte
	t['"'], t['\\'], t['/'], t['b'], t['t'], t['n'], t['f'], t['r'], t['u'] = '"', '\\', '/', '\b', '\t', '\n', '\f', '\r', 'u'
	return t
}()

type jsonToken struct {
	kind  int
	index int
	str   string
	num   float64
	b     bool
	err   string
}

type jsonDecoder struct {
	e     *Engine
	L     *lua.LState
	cfg   *cjsonConfig
	data  string
	ptr   int
	depth int
}

// at returns the byte at i, or NUL past the end, as C sees the string.
func (d *jsonDecoder) at(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0
}

func (d *jsonDecoder) errToken(t *jsonToken, msg string) {
	t.kind = tError
	t.index = d.ptr
	t.err = msg
}

func (d *jsonDecoder) next() jsonToken {
	var t jsonToken
	for {
		t.kind = jsonCh2Token[d.at(d.ptr)]
		if t.kind != tWhitespace {
			break
		}
		d.ptr++
	}
	t.index = d.ptr
	switch t.kind {
	case tError:
		d.errToken(&t, "invalid token")
		return t
	case tEnd:
		return t
	case tUnknown:
	default:
		d.ptr++
		return t
	}
	ch := d.at(d.ptr)
	rest := d.data[min(d.ptr, len(d.data)):]
	switch {
	case ch == '"':
		d.stringToken(&t)
	case ch == '-' || ch >= '0' && ch <= '9':
		if d.cfg.decodeInvalid == 0 && d.invalidNumber() {
			d.errToken(&t, "invalid number")
			return t
		}
		d.numberToken(&t)
	case strings.HasPrefix(rest, "true"):
		t.kind, t.b = tBoolean, true
		d.ptr += 4
	case strings.HasPrefix(rest, "false"):
		t.kind, t.b = tBoolean, false
		d.ptr += 5
	case strings.HasPrefix(rest, "null"):
		t.kind = tNull
		d.ptr += 4
	case d.cfg.decodeInvalid != 0 && d.invalidNumber():
		d.numberToken(&t)
	default:
		d.errToken(&t, "invalid token")
	}
	return t
}

func (d *jsonDecoder) invalidNumber() bool {
	p := d.ptr
	if d.at(p) == '+' {
		return true
	}
	if d.at(p) == '-' {
		p++
	}
	if c := d.at(p); c == '0' {
		c2 := d.at(p + 1)
		return c2|0x20 == 'x' || c2 >= '0' && c2 <= '9'
	} else if c <= '9' {
		return false
	}
	r := strings.ToLower(d.data[p:min(p+3, len(d.data))])
	return r == "inf" || r == "nan"
}

func (d *jsonDecoder) numberToken(t *jsonToken) {
	t.kind = tNumber
	v, n := strtod(cstr(d.data[d.ptr:]))
	if n == 0 {
		d.errToken(t, "invalid number")
		return
	}
	t.num = v
	d.ptr += n
}

func hexDigit(c byte) int {
	if c >= '0' && c <= '9' {
		return int(c - '0')
	}
	c |= 0x20
	if c >= 'a' && c <= 'f' {
		return int(c-'a') + 10
	}
	return -1
}

func (d *jsonDecoder) hex4(p int) int {
	v := 0
	for i := 0; i < 4; i++ {
		h := hexDigit(d.at(p + i))
		if h < 0 {
			return -1
		}
		v = v<<4 | h
	}
	return v
}

func (d *jsonDecoder) stringToken(t *jsonToken) {
	d.ptr++
	var b []byte
	for {
		ch := d.at(d.ptr)
		if ch == '"' {
			break
		}
		if ch == 0 {
			d.errToken(t, "unexpected end of string")
			return
		}
		if ch == '\\' {
			ch = jsonEscape2Char[d.at(d.ptr+1)]
			if ch == 'u' {
				if !d.unicodeEscape(&b) {
					d.errToken(t, "invalid unicode escape code")
					return
				}
				continue
			}
			if ch == 0 {
				d.errToken(t, "invalid escape code")
				return
			}
			d.ptr++
		}
		b = append(b, ch)
		d.ptr++
	}
	d.ptr++
	t.kind = tString
	t.str = string(b)
}

func (d *jsonDecoder) unicodeEscape(b *[]byte) bool {
	cp := d.hex4(d.ptr + 2)
	if cp < 0 {
		return false
	}
	escLen := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 {
			return false
		}
		if d.at(d.ptr+6) != '\\' || d.at(d.ptr+7) != 'u' {
			return false
		}
		low := d.hex4(d.ptr + 8)
		if low < 0 || low&0xFC00 != 0xDC00 {
			return false
		}
		cp = ((cp&0x3FF)<<10 | low&0x3FF) + 0x10000
		escLen = 12
	}
	switch {
	case cp <= 0x7F:
		*b = append(*b, byte(cp))
	case cp <= 0x7FF:
		*b = append(*b, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		*b = append(*b, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		*b = append(*b, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	d.ptr += escLen
	return true
}

func (d *jsonDecoder) parseError(exp string, t jsonToken) {
	found := jsonTokenNames[t.kind]
	if t.kind == tError {
		found = t.err
	}
	runError(d.L, fmt.Sprintf("Expected %s but found %s at character %d", exp, found, t.index+1))
}

func (d *jsonDecoder) descend() {
	d.depth++
	if d.depth > d.cfg.decodeMaxDepth || d.depth > maxCStack/3 {
		runError(d.L, fmt.Sprintf("Found too many nested data structures (%d) at character %d", d.depth, d.ptr))
	}
}

func (d *jsonDecoder) value(t jsonToken) lua.LValue {
	d.e.charge(d.L, 1)
	switch t.kind {
	case tString:
		return lua.LString(t.str)
	case tNumber:
		return lua.LNumber(t.num)
	case tBoolean:
		return lua.LBool(t.b)
	case tNull:
		return d.e.sb.cjsonNull
	case tObjBegin:
		d.descend()
		tbl := d.L.NewTable()
		t = d.next()
		if t.kind == tObjEnd {
			d.depth--
			return tbl
		}
		for {
			if t.kind != tString {
				d.parseError("object key string", t)
			}
			key := lua.LString(t.str)
			if t = d.next(); t.kind != tColon {
				d.parseError("colon", t)
			}
			tbl.RawSet(key, d.value(d.next()))
			t = d.next()
			if t.kind == tObjEnd {
				d.depth--
				return tbl
			}
			if t.kind != tComma {
				d.parseError("comma or object end", t)
			}
			t = d.next()
		}
	case tArrBegin:
		d.descend()
		tbl := d.L.NewTable()
		t = d.next()
		if t.kind == tArrEnd {
			d.depth--
			return tbl
		}
		for i := 1; ; i++ {
			tbl.RawSetInt(i, d.value(t))
			t = d.next()
			if t.kind == tArrEnd {
				d.depth--
				return tbl
			}
			if t.kind != tComma {
				d.parseError("comma or array end", t)
			}
			t = d.next()
		}
	}
	d.parseError("value", t)
	return lua.LNil
}
