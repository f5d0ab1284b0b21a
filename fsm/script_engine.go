package fsm

import (
	"github.com/deadbolt/deadbolt/luaexec"
	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	newScriptEngine = func(opt Options) scriptEngine {
		return &luaEngine{e: luaexec.New(luaexec.Options{Budget: opt.ScriptBudget})}
	}
}

// luaEngine adapts luaexec.Engine to the state machine.
type luaEngine struct {
	e       *luaexec.Engine
	pending *luaexec.Library // the last library loaded, until kept
}

func (l *luaEngine) Compile(sha string, body []byte) resp.Reply { return l.e.Compile(sha, body) }
func (l *luaEngine) Forget()                                    { l.e.Forget() }
func (l *luaEngine) Close()                                     { l.e.Close() }
func (l *luaEngine) State() []byte                              { return l.e.State() }
func (l *luaEngine) SetState(b []byte) error                    { return l.e.SetState(b) }

func (l *luaEngine) Run(sha string, body []byte, keys, argv [][]byte, c caller) resp.Reply {
	return l.e.Run(sha, body, keys, argv, c)
}

func (l *luaEngine) ReadOnly(body []byte) (readOnly bool, errMsg string) {
	flags, _, msg := luaexec.ParseShebang(body)
	return flags&luaexec.FlagNoWrites != 0, msg
}

// SHA1Hex is the script hash Redis uses: lowercase hex SHA-1 of the body.
func SHA1Hex(body []byte) string { return luaexec.SHA1Hex(body) }

func (l *luaEngine) ParseLibraryMeta(code []byte) (string, string) {
	return luaexec.ParseLibraryMeta(code)
}

func (l *luaEngine) LoadLibrary(name string, code []byte) ([]FunctionMeta, resp.Reply) {
	l.pending = nil
	lib, r := l.e.LoadLibrary(name, code)
	if r.IsError() {
		return nil, r
	}
	l.pending = lib
	out := make([]FunctionMeta, len(lib.Functions))
	for i, f := range lib.Functions {
		out[i] = FunctionMeta{Name: f.Name, Description: f.Description, HasDesc: f.HasDesc, Flags: f.Flags}
	}
	return out, r
}

func (l *luaEngine) KeepLibrary(name string) {
	if l.pending != nil && l.pending.Name == name {
		l.e.Keep(l.pending)
	}
	l.pending = nil
}

func (l *luaEngine) DropLibrary(name string)                  { l.e.Drop(name) }
func (l *luaEngine) HasLibrary(name string, code []byte) bool { return l.e.HasLibrary(name, code) }
func (l *luaEngine) CallFunction(lib, fn string, keys, args [][]byte, c caller) resp.Reply {
	return l.e.CallFunction(lib, fn, keys, args, c)
}
func (l *luaEngine) CallFunctionApart(lib, fn string, keys, args [][]byte, c caller) resp.Reply {
	return l.e.CallFunctionApart(lib, fn, keys, args, c)
}
