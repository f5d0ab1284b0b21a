package luaexec

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The bit library (LuaBitOp 1.0.2): operations on 32-bit integers, results
// as signed numbers.

func (sb *sandbox) openBit(L *lua.LState) *lua.LTable {
	return sb.newLib(L, 12,
		fnEntry("tobit", bitTobit),
		fnEntry("bnot", bitBnot),
		fnEntry("band", bitBand),
		fnEntry("bor", bitBor),
		fnEntry("bxor", bitBxor),
		fnEntry("lshift", bitLshift),
		fnEntry("rshift", bitRshift),
		fnEntry("arshift", bitArshift),
		fnEntry("rol", bitRol),
		fnEntry("ror", bitRor),
		fnEntry("bswap", bitBswap),
		fnEntry("tohex", bitTohex),
	)
}

// bitArg converts an argument as LuaBitOp does: adding 2^52+2^51 and taking
// the low 32 bits of the double, which rounds to the nearest integer modulo
// 2^32.
func bitArg(L *lua.LState, n int) uint32 {
	f, ok := toNumber(L.Get(n))
	b := uint32(math.Float64bits(f + 6755399441055744.0))
	if b == 0 && !ok {
		typeError(L, n, "number")
	}
	return b
}

func bitRet(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func bitTobit(L *lua.LState) int { return bitRet(L, bitArg(L, 1)) }
func bitBnot(L *lua.LState) int  { return bitRet(L, ^bitArg(L, 1)) }

func bitFold(L *lua.LState, op func(a, b uint32) uint32) int {
	b := bitArg(L, 1)
	for i := L.GetTop(); i > 1; i-- {
		b = op(b, bitArg(L, i))
	}
	return bitRet(L, b)
}

func bitBand(L *lua.LState) int { return bitFold(L, func(a, b uint32) uint32 { return a & b }) }
func bitBor(L *lua.LState) int  { return bitFold(L, func(a, b uint32) uint32 { return a | b }) }
func bitBxor(L *lua.LState) int { return bitFold(L, func(a, b uint32) uint32 { return a ^ b }) }

func bitShift(L *lua.LState, op func(b, n uint32) uint32) int {
	b := bitArg(L, 1)
	n := bitArg(L, 2) & 31
	return bitRet(L, op(b, n))
}

func bitLshift(L *lua.LState) int {
	return bitShift(L, func(b, n uint32) uint32 { return b << n })
}
func bitRshift(L *lua.LState) int {
	return bitShift(L, func(b, n uint32) uint32 { return b >> n })
}
func bitArshift(L *lua.LState) int {
	return bitShift(L, func(b, n uint32) uint32 { return uint32(int32(b) >> n) })
}
func bitRol(L *lua.LState) int {
	return bitShift(L, func(b, n uint32) uint32 { return b<<n | b>>(32-n) })
}
func bitRor(L *lua.LState) int {
	return bitShift(L, func(b, n uint32) uint32 { return b<<(32-n) | b>>n })
}

func bitBswap(L *lua.LState) int {
	b := bitArg(L, 1)
	return bitRet(L, b>>24|b>>8&0xff00|(b&0xff00)<<8|b<<24)
}

func bitTohex(L *lua.LState) int {
	b := bitArg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 {
		n = int32(bitArg(L, 2))
	}
	digits := "0123456789abcdef"
	if n == math.MinInt32 {
		n = math.MinInt32 + 1
	}
	if n < 0 {
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	buf := make([]byte, n)
	for i := int(n) - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
