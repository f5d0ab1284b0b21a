package luaexec

import (
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The struct library (Roberto Ierusalimschy's lstruct, as Redis ships it),
// with the sizes and alignment of x86-64 Linux: native little endian,
// short 2, int 4, long 8, size_t 8, maximum alignment 8.

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
	structBig        = 0
	structLittle     = 1
)

type structHeader struct {
	endian int
	align  int
}

func (sb *sandbox) openStruct(L *lua.LState) *lua.LTable {
	return sb.newLib(L, 3,
		fnEntry("pack", sb.e.charged(structPack)),
		fnEntry("unpack", sb.e.charged(structUnpack)),
		fnEntry("size", sb.e.charged(structSize)),
	)
}

type structFormat struct {
	L   *lua.LState
	fmt string
	pos int
}

func (f *structFormat) more() bool { return f.pos < len(f.fmt) }

func (f *structFormat) peek() byte {
	if f.pos < len(f.fmt) {
		return f.fmt[f.pos]
	}
	return 0
}

func (f *structFormat) getnum(df int) int {
	if !isDigit(int(f.peek())) {
		return df
	}
	a := 0
	for isDigit(int(f.peek())) {
		d := int(f.peek() - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			runError(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.pos++
	}
	return a
}

func (f *structFormat) optsize(opt byte) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T':
		return 8
	case 'f':
		return 4
	case 'd':
		return 8
	case 'x':
		return 1
	case 'c':
		return f.getnum(1)
	case 'i', 'I':
		sz := f.getnum(4)
		if sz > structMaxIntSize {
			runError(f.L, fmt.Sprintf("integral size %d is larger than limit of %d", sz, structMaxIntSize))
		}
		return sz
	}
	return 0
}

func gettoalign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

func (f *structFormat) control(opt byte, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.endian = structBig
	case '<':
		h.endian = structLittle
	case '!':
		a := f.getnum(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			runError(f.L, fmt.Sprintf("alignment %d is not a power of 2", a))
		}
		h.align = a
	default:
		argError(f.L, 1, fmt.Sprintf("invalid format option '%c'", opt))
	}
}

func structPack(L *lua.LState) int {
	f := &structFormat{L: L, fmt: cstr(checkString(L, 1))}
	L.Push(lua.LNil) // lstruct pushes a mark after the arguments
	h := structHeader{endian: structLittle, align: 1}
	arg := 2
	var b []byte
	total := 0
	for f.more() {
		opt := f.fmt[f.pos]
		f.pos++
		size := f.optsize(opt)
		toalign := gettoalign(total, &h, opt, size)
		total += toalign
		for ; toalign > 0; toalign-- {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := checkNumber(L, arg)
			arg++
			var v uint64
			if n < 0 {
				v = uint64(toCLong(n))
			} else {
				v = toCULong(n)
			}
			buf := make([]byte, size)
			for i := 0; i < size; i++ {
				k := i
				if h.endian == structBig {
					k = size - 1 - i
				}
				buf[k] = byte(v)
				v >>= 8
			}
			b = append(b, buf...)
		case 'x':
			b = append(b, 0)
		case 'f':
			bits := math.Float32bits(float32(checkNumber(L, arg)))
			arg++
			b = appendOrdered(b, uint64(bits), 4, h.endian)
		case 'd':
			bits := math.Float64bits(checkNumber(L, arg))
			arg++
			b = appendOrdered(b, bits, 8, h.endian)
		case 'c', 's':
			s := checkString(L, arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				argError(L, arg, "string too short")
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
				size++
			}
		default:
			f.control(opt, &h)
		}
		total += size
	}
	L.Push(lua.LString(b))
	return 1
}

func appendOrdered(b []byte, v uint64, size int, endian int) []byte {
	buf := make([]byte, size)
	for i := 0; i < size; i++ {
		k := i
		if endian == structBig {
			k = size - 1 - i
		}
		buf[k] = byte(v)
		v >>= 8
	}
	return append(b, buf...)
}

func readOrdered(data string, size int, endian int) uint64 {
	var l uint64
	for i := 0; i < size; i++ {
		k := size - 1 - i
		if endian == structBig {
			k = i
		}
		l = l<<8 | uint64(data[k])
	}
	return l
}

func structUnpack(L *lua.LState) int {
	f := &structFormat{L: L, fmt: cstr(checkString(L, 1))}
	data := checkString(L, 2)
	ld := len(data)
	pos := uint64(optInteger(L, 3, 1))
	if pos == 0 {
		argError(L, 3, "offset must be 1 or greater")
	}
	pos--
	h := structHeader{endian: structLittle, align: 1}
	n := 0
	top := L.GetTop()
	for f.more() {
		opt := f.fmt[f.pos]
		f.pos++
		size := f.optsize(opt)
		pos += uint64(gettoalign(int(pos), &h, opt, size))
		if !(uint64(size) <= uint64(ld) && pos <= uint64(ld)-uint64(size)) {
			argError(L, 2, "data string too short")
		}
		if top+n+2 > maxCStack {
			runError(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			l := readOrdered(data[pos:], size, h.endian)
			if isLower(int(opt)) {
				mask := ^uint64(0) << (uint(size*8-1) & 63)
				if l&mask != 0 {
					l |= mask
				}
				L.Push(lua.LNumber(float64(int64(l))))
			} else {
				L.Push(lua.LNumber(float64(l)))
			}
			n++
		case 'x':
		case 'f':
			bits := uint32(readOrdered(data[pos:], 4, h.endian))
			L.Push(lua.LNumber(float64(math.Float32frombits(bits))))
			n++
		case 'd':
			bits := readOrdered(data[pos:], 8, h.endian)
			L.Push(lua.LNumber(math.Float64frombits(bits)))
			n++
		case 'c':
			if size == 0 {
				var prev float64
				ok := false
				if n > 0 {
					prev, ok = toNumber(L.Get(-1))
				}
				if !ok {
					runError(L, "format 'c0' needs a previous size")
				}
				size = int(toCULong(prev))
				L.Pop(1)
				n--
				if !(uint64(size) <= uint64(ld) && pos <= uint64(ld)-uint64(size)) {
					argError(L, 2, "data string too short")
				}
			}
			L.Push(lua.LString(data[pos : pos+uint64(size)]))
			n++
		case 's':
			end := -1
			for i := int(pos); i < ld; i++ {
				if data[i] == 0 {
					end = i
					break
				}
			}
			if end < 0 {
				runError(L, "unfinished string in data")
			}
			size = end - int(pos) + 1
			L.Push(lua.LString(data[pos:end]))
			n++
		default:
			f.control(opt, &h)
		}
		pos += uint64(size)
	}
	L.Push(lua.LNumber(float64(pos + 1)))
	return n + 1
}

func structSize(L *lua.LState) int {
	f := &structFormat{L: L, fmt: cstr(checkString(L, 1))}
	h := structHeader{endian: structLittle, align: 1}
	pos := 0
	for f.more() {
		opt := f.fmt[f.pos]
		f.pos++
		size := f.optsize(opt)
		pos += gettoalign(pos, &h, opt, size)
		if opt == 's' {
			argError(L, 1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			argError(L, 1, "option 'c0' has no fixed size")
		}
		if !isAlnum(int(opt)) {
			f.control(opt, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
