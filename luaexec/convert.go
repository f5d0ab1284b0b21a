package luaexec

import (
	"strconv"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// Conversions between Lua values and Redis replies, as Redis 7.0 does them
// for a RESP2 client.

// maxReplyDepth bounds the nesting of a returned table (Redis would run out
// of C stack long before).
const maxReplyDepth = 10000

// toReply converts the value a script returned.
func (e *Engine) toReply(v lua.LValue) resp.Reply {
	return e.luaToReply(v, 0)
}

func (e *Engine) luaToReply(v lua.LValue, depth int) resp.Reply {
	switch x := v.(type) {
	case lua.LString:
		return resp.Reply{Type: resp.Bulk, Str: []byte(x)}
	case lua.LBool:
		if e.run.resp >= 3 {
			return resp.BoolReply(bool(x))
		}
		if x {
			return resp.One
		}
		return resp.NilReply
	case lua.LNumber:
		return resp.IntReply(toCLong(float64(x)))
	case *lua.LTable:
		if depth >= maxReplyDepth {
			return resp.Err("ERR reached lua stack limit")
		}
		return e.tableToReply(e.sb.real(x), depth)
	}
	return resp.NilReply
}

// noCRLF replaces the line breaks a one-line reply cannot hold.
var noCRLF = strings.NewReplacer("\r", " ", "\n", " ")

func (e *Engine) tableToReply(t *lua.LTable, depth int) resp.Reply {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		return resp.Err(sanitizeError(cstr(string(s))))
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return resp.StatusReply(noCRLF.Replace(cstr(string(s))))
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		return resp.DoubleReply(fmtArg(nil, float64(d)))
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		return resp.Reply{Type: resp.BigNumber, Str: []byte(noCRLF.Replace(string(s)))}
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		if f, ok := vt.RawGetString("format").(lua.LString); ok {
			if s, ok := vt.RawGetString("string").(lua.LString); ok {
				// Redis copies three bytes of the format, whatever its
				// length: a shorter one brings its terminating NUL.
				format := []byte(string(f) + "\x00\x00\x00")[:3]
				return resp.VerbatimReply(string(format), string(s))
			}
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		elems := []resp.Reply{}
		m = e.sb.real(m)
		for _, k := range e.luaOrder(nil, m) {
			elems = append(elems, e.luaToReply(k, depth+1), e.luaToReply(m.RawGet(k), depth+1))
		}
		return resp.MapReply(elems...)
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		elems := []resp.Reply{}
		s = e.sb.real(s)
		for _, k := range e.luaOrder(nil, s) {
			elems = append(elems, e.luaToReply(k, depth+1))
		}
		return resp.SetReply(elems...)
	}
	var elems []resp.Reply
	for j := 1; ; j++ {
		v := rawGetInt(t, j)
		if v == lua.LNil {
			break
		}
		if elems == nil {
			elems = make([]resp.Reply, 0, 4)
		}
		elems = append(elems, e.luaToReply(v, depth+1))
	}
	if elems == nil {
		elems = []resp.Reply{}
	}
	return resp.Reply{Type: resp.Array, Elems: elems}
}

// replyToLua converts a command's reply for redis.call/pcall, as the
// script's protocol (redis.setresp) shows it. It returns the value and the
// number of payload bytes, for charging.
func (e *Engine) replyToLua(L *lua.LState, r resp.Reply) (lua.LValue, int) {
	switch r.Type {
	case resp.Int:
		if r.Int >= 0 && r.Int < int64(len(smallInts)) {
			return smallInts[r.Int], 0
		}
		return lua.LNumber(float64(r.Int)), 0
	case resp.Bulk:
		return lua.LString(r.Str), len(r.Str)
	case resp.Nil, resp.NilArray:
		if e.run.resp >= 3 {
			return lua.LNil, 0
		}
		return lua.LFalse, 0
	case resp.Status:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(r.Str))
		return t, len(r.Str)
	case resp.Error:
		t := errorTable(L, "-"+string(r.Str))
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return t, len(r.Str)
	case resp.Array, resp.Push:
		return e.arrayToLua(L, r.Elems)
	}
	if e.run.resp < 3 {
		if r.Type == resp.Pairs || r.Type == resp.Map || r.Type == resp.Set {
			return e.arrayToLua(L, r.RESP2().Elems)
		}
		return e.replyToLua(L, r.RESP2())
	}
	switch r.Type {
	case resp.Pairs:
		return e.arrayToLua(L, r.Elems)
	case resp.Map, resp.Set:
		inner := L.CreateTable(0, len(r.Elems))
		n := 0
		for i := 0; i < len(r.Elems); i++ {
			k, kn := e.replyToLua(L, r.Elems[i])
			v, vn := lua.LValue(lua.LTrue), 0
			if r.Type == resp.Map {
				i++
				v, vn = e.replyToLua(L, r.Elems[i])
			}
			n += kn + vn + 1
			if k != lua.LNil {
				inner.RawSet(k, v)
			}
		}
		name := "set"
		if r.Type == resp.Map {
			name = "map"
		}
		t := L.CreateTable(0, 1)
		t.RawSetString(name, inner)
		return t, n
	case resp.Bool:
		return lua.LBool(r.Int != 0), 0
	case resp.Double:
		f, _ := strconv.ParseFloat(string(r.Str), 64)
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, len(r.Str)
	case resp.BigNumber:
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(r.Str))
		return t, len(r.Str)
	case resp.Verbatim:
		format, text := "", r.Str
		if len(text) >= 4 {
			format, text = string(text[:3]), text[4:]
		}
		vt := L.CreateTable(0, 2)
		vt.RawSetString("format", lua.LString(format))
		vt.RawSetString("string", lua.LString(text))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", vt)
		return t, len(r.Str)
	}
	return lua.LFalse, 0
}

func (e *Engine) arrayToLua(L *lua.LState, elems []resp.Reply) (lua.LValue, int) {
	t := L.CreateTable(len(elems), 0)
	n := 0
	for i, el := range elems {
		v, k := e.replyToLua(L, el)
		n += k + 1
		if v != lua.LNil {
			t.RawSetInt(i+1, v)
		}
	}
	return t, n
}

// smallInts are the numbers most integer replies hold (EXISTS, HINCRBY,
// PEXPIRE, DEL...), boxed once: boxing a number allocates.
var smallInts = func() (a [256]lua.LValue) {
	for i := range a {
		a[i] = lua.LNumber(i)
	}
	return a
}()

// errorTable builds the {err=...} table of Redis's luaPushErrorBuff: a
// message "-CODE text" keeps its code, any other gets "ERR".
func errorTable(L *lua.LState, buf string) *lua.LTable {
	code, msg := "ERR", buf
	if strings.HasPrefix(buf, "-") {
		b := cstr(buf)
		if i := strings.IndexByte(b, ' '); i < 0 {
			msg = b[1:]
		} else {
			code, msg = b[1:i], b[i+1:]
		}
	}
	msg = strings.Trim(msg, "\r\n")
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(code+" "+msg))
	return t
}
