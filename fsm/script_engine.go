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
type luaEngine struct{ e *luaexec.Engine }

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
