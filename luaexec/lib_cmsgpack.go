package luaexec

import (
	"encoding/binary"
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack as Redis ships it (lua-cmsgpack 0.4.0): MessagePack encoding of
// Lua values.

const msgpackMaxNesting = 16

func (sb *sandbox) openCmsgpack(L *lua.LState) *lua.LTable {
	e := sb.e
	return sb.newLib(L, 0,
		fnEntry("pack", e.msgpackPack),
		fnEntry("unpack", func(L *lua.LState) int { return e.msgpackUnpack(L, 0, 0) }),
		fnEntry("unpack_one", func(L *lua.LState) int {
			offset := optInteger(L, 2, 0)
			L.SetTop(1)
			return e.msgpackUnpack(L, 1, offset)
		}),
		fnEntry("unpack_limit", func(L *lua.LState) int {
			limit := checkInteger(L, 2)
			offset := optInteger(L, 3, 0)
			L.SetTop(1)
			return e.msgpackUnpack(L, limit, offset)
		}),
		valEntry("_NAME", lua.LString("cmsgpack")),
		valEntry("_VERSION", lua.LString("lua-cmsgpack 0.4.0")),
		valEntry("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo")),
		valEntry("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua")),
	)
}

type msgpackEncoder struct {
	e   *Engine
	L   *lua.LState
	buf []byte
}

func (m *msgpackEncoder) add(b ...byte) {
	m.e.growBytes(m.L, len(m.buf), len(b))
	m.buf = append(m.buf, b...)
}

func (e *Engine) msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "MessagePack pack needs input.")
	}
	m := &msgpackEncoder{e: e, L: L}
	for i := 1; i <= n; i++ {
		m.value(L.Get(i), 0)
	}
	L.Push(lua.LString(m.buf))
	return 1
}

func (m *msgpackEncoder) bytes(s string) {
	l := len(s)
	switch {
	case l < 32:
		m.add(0xa0 | byte(l))
	case l <= 0xff:
		m.add(0xd9, byte(l))
	case l <= 0xffff:
		m.add(0xda, byte(l>>8), byte(l))
	default:
		m.add(0xdb, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
	}
	m.e.growBytes(m.L, len(m.buf), l)
	m.buf = append(m.buf, s...)
}

func (m *msgpackEncoder) integer(n int64) {
	var b [9]byte
	switch {
	case n >= 0 && n <= 127:
		m.add(byte(n))
	case n >= 0 && n <= 0xff:
		m.add(0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		m.add(0xcd, byte(n>>8), byte(n))
	case n >= 0 && n <= 0xffffffff:
		m.add(0xce, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	case n >= 0:
		b[0] = 0xcf
		binary.BigEndian.PutUint64(b[1:], uint64(n))
		m.add(b[:]...)
	case n >= -32:
		m.add(byte(int8(n)))
	case n >= -128:
		m.add(0xd0, byte(n))
	case n >= -32768:
		m.add(0xd1, byte(n>>8), byte(n))
	case n >= -2147483648:
		m.add(0xd2, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	default:
		b[0] = 0xd3
		binary.BigEndian.PutUint64(b[1:], uint64(n))
		m.add(b[:]...)
	}
}

func (m *msgpackEncoder) number(f float64) {
	if !math.IsInf(f, 0) && float64(toCLong(f)) == f {
		m.integer(toCLong(f))
		return
	}
	if float64(float32(f)) == f {
		var b [5]byte
		b[0] = 0xca
		binary.BigEndian.PutUint32(b[1:], math.Float32bits(float32(f)))
		m.add(b[:]...)
		return
	}
	var b [9]byte
	b[0] = 0xcb
	binary.BigEndian.PutUint64(b[1:], math.Float64bits(f))
	m.add(b[:]...)
}

func (m *msgpackEncoder) header(small, b16, b32 byte, n int) {
	switch {
	case n <= 15:
		m.add(small | byte(n))
	case n <= 65535:
		m.add(b16, byte(n>>8), byte(n))
	default:
		m.add(b32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func (m *msgpackEncoder) value(v lua.LValue, level int) {
	m.e.charge(m.L, 1)
	switch x := v.(type) {
	case lua.LString:
		m.bytes(string(x))
	case lua.LBool:
		if x {
			m.add(0xc3)
		} else {
			m.add(0xc2)
		}
	case lua.LNumber:
		m.number(float64(x))
	case *lua.LTable:
		if level == msgpackMaxNesting {
			m.add(0xc0)
			return
		}
		t := m.e.sb.real(x)
		if isMsgpackArray(t) {
			n := border(t)
			m.header(0x90, 0xdc, 0xdd, n)
			for j := 1; j <= n; j++ {
				m.value(m.L.GetTable(x, lua.LNumber(j)), level+1)
			}
			return
		}
		keys := m.e.luaOrder(m.L, t)
		m.header(0x80, 0xde, 0xdf, len(keys))
		for _, k := range keys {
			m.value(k, level+1)
			m.value(t.RawGet(k), level+1)
		}
	default:
		m.add(0xc0)
	}
}

// isMsgpackArray is table_is_an_array: the keys are exactly 1..n.
func isMsgpackArray(t *lua.LTable) bool {
	count, max := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(toCInt(float64(n))) != float64(n) {
			return false
		}
		if int(n) > max {
			max = int(n)
		}
		count++
	}
	return max == count
}

// --- decoding --------------------------------------------------------------------

const (
	mpOK = iota
	mpEOF
	mpBadFormat
)

type msgpackDecoder struct {
	e   *Engine
	L   *lua.LState
	s   string
	p   int
	err int
}

func (d *msgpackDecoder) need(n int) bool {
	if len(d.s)-d.p < n {
		d.err = mpEOF
		return false
	}
	return true
}

func (d *msgpackDecoder) u(i int) uint64 { return uint64(d.s[d.p+i]) }

func (d *msgpackDecoder) str(hdr, l int) lua.LValue {
	if !d.need(hdr + l) {
		return nil
	}
	v := lua.LString(d.s[d.p+hdr : d.p+hdr+l])
	d.p += hdr + l
	return v
}

// value decodes one value; nil means an error (d.err) or a Lua nil, told
// apart by d.err.
func (d *msgpackDecoder) value() lua.LValue {
	if !d.need(1) {
		return nil
	}
	d.e.charge(d.L, 1)
	c := d.s[d.p]
	switch c {
	case 0xcc:
		if !d.need(2) {
			return nil
		}
		v := lua.LNumber(d.u(1))
		d.p += 2
		return v
	case 0xd0:
		if !d.need(2) {
			return nil
		}
		v := lua.LNumber(int8(d.s[d.p+1]))
		d.p += 2
		return v
	case 0xcd:
		if !d.need(3) {
			return nil
		}
		v := lua.LNumber(d.u(1)<<8 | d.u(2))
		d.p += 3
		return v
	case 0xd1:
		if !d.need(3) {
			return nil
		}
		v := lua.LNumber(int32(int16(d.u(1)<<8)) | int32(d.u(2)))
		d.p += 3
		return v
	case 0xce:
		if !d.need(5) {
			return nil
		}
		v := lua.LNumber(d.u(1)<<24 | d.u(2)<<16 | d.u(3)<<8 | d.u(4))
		d.p += 5
		return v
	case 0xd2:
		if !d.need(5) {
			return nil
		}
		v := lua.LNumber(int32(uint32(d.u(1)<<24 | d.u(2)<<16 | d.u(3)<<8 | d.u(4))))
		d.p += 5
		return v
	case 0xcf, 0xd3:
		if !d.need(9) {
			return nil
		}
		v := lua.LNumber(int64(binary.BigEndian.Uint64([]byte(d.s[d.p+1 : d.p+9]))))
		d.p += 9
		return v
	case 0xc0:
		d.p++
		return lua.LNil
	case 0xc3:
		d.p++
		return lua.LTrue
	case 0xc2:
		d.p++
		return lua.LFalse
	case 0xca:
		if !d.need(5) {
			return nil
		}
		v := lua.LNumber(math.Float32frombits(binary.BigEndian.Uint32([]byte(d.s[d.p+1 : d.p+5]))))
		d.p += 5
		return v
	case 0xcb:
		if !d.need(9) {
			return nil
		}
		v := lua.LNumber(math.Float64frombits(binary.BigEndian.Uint64([]byte(d.s[d.p+1 : d.p+9]))))
		d.p += 9
		return v
	case 0xd9:
		if !d.need(2) {
			return nil
		}
		return d.str(2, int(d.u(1)))
	case 0xda:
		if !d.need(3) {
			return nil
		}
		return d.str(3, int(d.u(1)<<8|d.u(2)))
	case 0xdb:
		if !d.need(5) {
			return nil
		}
		l := int(d.u(1)<<24 | d.u(2)<<16 | d.u(3)<<8 | d.u(4))
		d.p += 5
		return d.str(0, l)
	case 0xdc, 0xde:
		if !d.need(3) {
			return nil
		}
		l := int(d.u(1)<<8 | d.u(2))
		d.p += 3
		return d.container(c == 0xde, l)
	case 0xdd, 0xdf:
		if !d.need(5) {
			return nil
		}
		l := int(d.u(1)<<24 | d.u(2)<<16 | d.u(3)<<8 | d.u(4))
		d.p += 5
		return d.container(c == 0xdf, l)
	}
	switch {
	case c&0x80 == 0:
		d.p++
		return lua.LNumber(c)
	case c&0xe0 == 0xe0:
		d.p++
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return d.str(1, int(c&0x1f))
	case c&0xf0 == 0x90:
		d.p++
		return d.container(false, int(c&0xf))
	case c&0xf0 == 0x80:
		d.p++
		return d.container(true, int(c&0xf))
	}
	d.err = mpBadFormat
	return nil
}

func (d *msgpackDecoder) container(isMap bool, n int) lua.LValue {
	t := d.L.NewTable()
	for i := 1; n > 0; n-- {
		if isMap {
			k := d.value()
			if d.err != mpOK {
				return nil
			}
			v := d.value()
			if d.err != mpOK {
				return nil
			}
			if k == lua.LNil {
				rawError(d.L, "table index is nil")
			}
			if f, ok := k.(lua.LNumber); ok && math.IsNaN(float64(f)) {
				rawError(d.L, "table index is NaN")
			}
			t.RawSet(k, v)
			continue
		}
		v := d.value()
		if d.err != mpOK {
			return nil
		}
		t.RawSetInt(i, v)
		i++
	}
	return t
}

func (e *Engine) msgpackUnpack(L *lua.LState, limit, offset int64) int {
	s := checkString(L, 1)
	all := limit == 0 && offset == 0
	if offset < 0 || limit < 0 {
		runError(L, fmt.Sprintf("Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s))))
	} else if offset > int64(len(s)) {
		runError(L, fmt.Sprintf("Start offset %d greater than input length %d.", int32(offset), int32(len(s))))
	}
	if all {
		limit = math.MaxInt32
	}
	e.charge(L, int64(len(s))/bytesPerUnit)
	d := &msgpackDecoder{e: e, L: L, s: s, p: int(offset)}
	var vals []lua.LValue
	for cnt := int64(0); d.p < len(s) && cnt < limit; cnt++ {
		if L.GetTop()+len(vals)+2 > maxCStack {
			runError(L, "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
		}
		v := d.value()
		switch d.err {
		case mpEOF:
			runError(L, "Missing bytes in input.")
		case mpBadFormat:
			runError(L, "Bad data format in input.")
		}
		vals = append(vals, v)
	}
	if !all {
		next := lua.LNumber(d.p)
		if d.p == len(s) {
			next = -1
		}
		L.Push(next)
	}
	for _, v := range vals {
		L.Push(v)
	}
	if !all {
		return len(vals) + 1
	}
	return len(vals)
}
