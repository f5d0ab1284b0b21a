package luaexec

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The Lua 5.1 math library, with Redis's math.random and math.randomseed.

func (sb *sandbox) openMath(L *lua.LState) *lua.LTable {
	e := sb.e
	unary := func(name string, f func(float64) float64) libEntry {
		return fnEntry(name, func(L *lua.LState) int {
			L.Push(lua.LNumber(f(checkNumber(L, 1))))
			return 1
		})
	}
	t := sb.newLib(L, 28,
		unary("abs", math.Abs),
		unary("acos", math.Acos),
		unary("asin", math.Asin),
		fnEntry("atan2", mathAtan2),
		unary("atan", math.Atan),
		unary("ceil", math.Ceil),
		unary("cosh", math.Cosh),
		unary("cos", math.Cos),
		unary("deg", func(x float64) float64 { return x / (math.Pi / 180.0) }),
		unary("exp", math.Exp),
		unary("floor", math.Floor),
		fnEntry("fmod", mathFmod),
		fnEntry("frexp", mathFrexp),
		fnEntry("ldexp", mathLdexp),
		unary("log10", math.Log10),
		unary("log", math.Log),
		fnEntry("max", mathMax),
		fnEntry("min", mathMin),
		fnEntry("modf", mathModf),
		fnEntry("pow", mathPow),
		unary("rad", func(x float64) float64 { return x * (math.Pi / 180.0) }),
		fnEntry("random", e.mathRandom),
		fnEntry("randomseed", e.mathRandomseed),
		unary("sinh", math.Sinh),
		unary("sin", math.Sin),
		unary("sqrt", math.Sqrt),
		unary("tanh", math.Tanh),
		unary("tan", math.Tan),
	)
	sb.addFields(L, t, sb.builds[t],
		valEntry("pi", lua.LNumber(math.Pi)),
		valEntry("huge", lua.LNumber(math.Inf(1))),
		valEntry("mod", t.RawGetString("fmod")),
	)
	return t
}

func mathAtan2(L *lua.LState) int {
	L.Push(lua.LNumber(math.Atan2(checkNumber(L, 1), checkNumber(L, 2))))
	return 1
}

func mathFmod(L *lua.LState) int {
	L.Push(lua.LNumber(math.Mod(checkNumber(L, 1), checkNumber(L, 2))))
	return 1
}

func mathFrexp(L *lua.LState) int {
	f, e := math.Frexp(checkNumber(L, 1))
	L.Push(lua.LNumber(f))
	L.Push(lua.LNumber(e))
	return 2
}

func mathLdexp(L *lua.LState) int {
	L.Push(lua.LNumber(math.Ldexp(checkNumber(L, 1), checkInt(L, 2))))
	return 1
}

func mathMax(L *lua.LState) int {
	n := L.GetTop()
	m := checkNumber(L, 1)
	for i := 2; i <= n; i++ {
		if d := checkNumber(L, i); d > m {
			m = d
		}
	}
	L.Push(lua.LNumber(m))
	return 1
}

func mathMin(L *lua.LState) int {
	n := L.GetTop()
	m := checkNumber(L, 1)
	for i := 2; i <= n; i++ {
		if d := checkNumber(L, i); d < m {
			m = d
		}
	}
	L.Push(lua.LNumber(m))
	return 1
}

func mathModf(L *lua.LState) int {
	x := checkNumber(L, 1)
	var ip, fp float64
	if math.IsInf(x, 0) {
		ip, fp = x, math.Copysign(0, x)
	} else {
		ip, fp = math.Modf(x)
	}
	L.Push(lua.LNumber(ip))
	L.Push(lua.LNumber(fp))
	return 2
}

func mathPow(L *lua.LState) int {
	L.Push(lua.LNumber(luaPow(checkNumber(L, 1), checkNumber(L, 2))))
	return 1
}

// luaPow is C's pow.
func luaPow(x, y float64) float64 {
	return math.Pow(x, y)
}

func (e *Engine) mathRandom(L *lua.LState) int {
	r := e.rand.float()
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := checkInt(L, 1)
		if u < 1 {
			argError(L, 1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l := checkInt(L, 1)
		u := checkInt(L, 2)
		if l > u {
			argError(L, 2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		runError(L, "wrong number of arguments")
	}
	return 1
}

func (e *Engine) mathRandomseed(L *lua.LState) int {
	e.rand.seed(int32(checkInt(L, 1)))
	return 0
}
