package luaexec

import (
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// FuzzReplyConversion drives both directions of the conversion between Lua
// values and replies with arbitrary data: a fuzz-built reply goes through
// redis.call into Lua and back out as the script's result (which must be
// the same reply, up to the conversions Redis itself makes), and a
// fuzz-built Lua table constructor goes out as a reply. Nothing may panic.
func FuzzReplyConversion(f *testing.F) {
	f.Add([]byte("*3\r\n$1\r\na\r\n:5\r\n$-1\r\n"), "{1, 'x', {true, false, nil}, {ok='s'}, {err='E x'}}")
	f.Add([]byte("+OK\r\n"), "{double=1.5, map={a=1}}")
	f.Add([]byte("-ERR bad\r\n"), "{set={a=true}, 1/0, -0, 0/0}")
	f.Add([]byte("*-1\r\n"), "{{{{{{}}}}}}")
	f.Add([]byte("*2\r\n*1\r\n:-9223372036854775808\r\n$0\r\n\r\n"), "{big_number='1', verbatim_string={format='txt', string='s'}}")
	f.Add([]byte(":9007199254740993\r\n"), "{2^63, -2^63, 1e308}")
	e := New(Options{Budget: 1_000_000, MaxStringBytes: 1 << 16})
	defer e.Close()
	f.Fuzz(func(t *testing.T, wire []byte, constructor string) {
		if r, _, ok := resp.Parse(wire); ok {
			got := e.Run("", []byte(`return redis.call('fuzz')`), nil, nil, fixedCaller{r})
			want := expectedRoundTrip(r)
			if r.Type == resp.Error {
				// redis.call raises it: the script fails with the error
				if got.Type != resp.Error || !strings.HasPrefix(got.String(), errorTextInLua(string(r.Str))) {
					t.Fatalf("error %q became %q", wire, replyString(got))
				}
			} else if !got.RESP2().Equal(want) {
				t.Fatalf("round trip of %q:\n got %q\nwant %q", wire, replyString(got), replyString(want))
			}
			e.Run("", []byte(`return redis.pcall('fuzz')`), nil, nil, fixedCaller{r})
			e.Run("", []byte(`return cjson.encode({redis.pcall('fuzz')})`), nil, nil, fixedCaller{r})
			e.Run("", []byte(`return cmsgpack.unpack(cmsgpack.pack(redis.pcall('fuzz')))`), nil, nil, fixedCaller{r})
		}
		if len(constructor) < 2000 && !strings.ContainsAny(constructor, "\x00") {
			// any expression: compile errors and runtime errors are fine,
			// panics are not
			e.Run("", []byte("return "+constructor), nil, nil, fixedCaller{resp.OK})
		}
	})
}

type fixedCaller struct{ r resp.Reply }

func (c fixedCaller) Call(args [][]byte) resp.Reply { return c.r }

// expectedRoundTrip is what EVAL "return redis.call(...)" replies for a
// command reply: Redis turns error replies into script errors, nil arrays
// into nil bulks, and error texts without a code get "ERR".
func expectedRoundTrip(r resp.Reply) resp.Reply {
	switch r.Type {
	case resp.NilArray:
		return resp.NilReply
	case resp.Int:
		// Lua numbers are doubles
		return resp.IntReply(toCLong(float64(r.Int)))
	case resp.Error:
		return resp.Reply{Type: resp.Error}
	case resp.Status:
		return resp.StatusReply(strings.NewReplacer("\r", " ", "\n", " ").Replace(cstr(string(r.Str))))
	case resp.Array:
		out := make([]resp.Reply, 0, len(r.Elems))
		for _, el := range r.Elems {
			x := expectedRoundTrip(el)
			if el.Type == resp.Error {
				// an error inside an array becomes {err=...}: returned as
				// an error reply element
				x = resp.Err(errorTextInLua(string(el.Str)))
			}
			out = append(out, x)
		}
		return resp.Reply{Type: resp.Array, Elems: out}
	}
	return r
}

func errorTextInLua(s string) string {
	b := cstr("-" + s)
	code, msg := "ERR", b[1:]
	if i := strings.IndexByte(b, ' '); i >= 0 {
		code, msg = b[1:i], b[i+1:]
	}
	return sanitizeError(code + " " + strings.Trim(msg, "\r\n"))
}
