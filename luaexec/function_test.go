package luaexec

import (
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// Any library code: a Redis-style error or a library, never a panic, and
// the engine keeps working for scripts and functions after it.
func FuzzLoadLibrary(f *testing.F) {
	for _, s := range []string{
		"#!lua name=a\nredis.register_function('f', function(k, a) return #k end)",
		"#!lua name=b\nredis.register_function{function_name='g', callback=function() return 1 end, flags={'no-writes'}}",
		"#!lua name=c\nwhile true do end",
		"#!lua name=d\nredis.register_function(1, 2, 3)",
		"#!lua name=e\nlocal t = {} t[1] = t redis.register_function('h', function() return t end)",
		"#!lua name=f x=y\n",
		"#!lua name=g\nredis.register_function{function_name='f', callback=print}",
	} {
		f.Add([]byte(s))
	}
	e := New(Options{Budget: 200_000})
	defer e.Close()
	f.Fuzz(func(t *testing.T, code []byte) {
		name, msg := ParseLibraryMeta(code)
		if msg != "" {
			return
		}
		lib, r := e.LoadLibrary(name, code)
		if r.IsError() {
			if lib != nil {
				t.Fatalf("an error and a library: %v", r)
			}
		} else {
			if len(lib.Functions) == 0 {
				t.Fatal("a library without functions loaded")
			}
			e.Keep(lib)
			e.CallFunction(name, lib.Functions[0].Name, nil, nil, nopCaller{})
			e.Drop(name)
		}
		if got := e.Run("", []byte("return 1"), nil, nil, nopCaller{}); got.Int != 1 {
			t.Fatalf("EVAL after loading %q: %v", code, got)
		}
	})
}

// nopCaller answers every redis.call with OK.
type nopCaller struct{}

func (nopCaller) Call([][]byte) resp.Reply { return resp.OK }
