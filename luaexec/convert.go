package luaexec

import (
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

func (e *Engine) tableToReply(t *lua.LTable, depth int) resp.Reply {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		return resp.Err(sanitizeError(cstr(string(s))))
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return resp.StatusReply(strings.NewReplacer("\r", " ", "\n", " ").Replace(cstr(string(s))))
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		return resp.Reply{Type: resp.Bulk, Str: fmtArg(nil, float64(d))}
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		return resp.Reply{Type: resp.Bulk, Str: []byte(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))}
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		if _, ok := vt.RawGetString("format").(lua.LString); ok {
			if s, ok := vt.RawGetString("string").(lua.LString); ok {
				return resp.Reply{Type: resp.Bulk, Str: []byte(s)}
			}
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		elems := []resp.Reply{}
		m = e.sb.real(m)
		for _, k := range e.luaOrder(nil, m) {
			elems = append(elems, e.luaToReply(k, depth+1), e.luaToReply(m.RawGet(k), depth+1))
		}
		return resp.Reply{Type: resp.Array, Elems: elems}
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		elems := []resp.Reply{}
		s = e.sb.real(s)
		for _, k := range e.luaOrder(nil, s) {
			elems = append(elems, e.luaToReply(k, depth+1))
		}
		return resp.Reply{Type: resp.Array, Elems: elems}
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

// replyToLua converts a command's reply for redis.call/pcall. It returns
// the value and the number of payload bytes, for charging.
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
		return lua.LFalse, 0
	case resp.Status:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(r.Str))
		return t, len(r.Str)
	case resp.Error:
		t := errorTable(L, "-"+string(r.Str))
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return t, len(r.Str)
	case resp.Array:
		t := L.CreateTable(len(r.Elems), 0)
		n := 0
		for i, el := range r.Elems {
			v, k := e.replyToLua(L, el)
			n += k + 1
			t.RawSetInt(i+1, v)
		}
		return t, n
	}
	return lua.LFalse, 0
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
