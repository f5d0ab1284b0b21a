package luaexec

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// Caller executes one Redis command on behalf of a script and returns its
// reply. Errors (wrong type, unknown command, not allowed from script, wrong
// arity...) come back as error replies whose text is exactly what Redis
// puts in the error (e.g. "WRONGTYPE Operation against a key holding the
// wrong kind of value", "ERR Unknown Redis command called from script").
// luaexec decides how to raise them (redis.call raises, redis.pcall returns
// a {err=...} table) and adds the "script: <sha>, on @user_script:N."
// decoration that Redis adds.
//
// args and the byte slices it holds are valid only until Call returns: the
// engine reuses them for the next command, so Call must copy whatever it
// keeps (the reply may refer to them; it is converted before the next call).
type Caller interface {
	Call(args [][]byte) resp.Reply
}

// LogLevel is the level of a redis.log message.
type LogLevel int

// The levels of redis.log (redis.LOG_DEBUG ... redis.LOG_WARNING).
const (
	LogDebug LogLevel = iota
	LogVerbose
	LogNotice
	LogWarning
)

// Options configure an Engine.
type Options struct {
	// Budget is the number of work units one script run may use; 0 means
	// DefaultBudget. See instrument.go for what costs what.
	Budget int64
	// MaxStringBytes is the largest string a script may build; 0 means
	// DefaultMaxStringBytes (512 MiB, like proto-max-bulk-len).
	MaxStringBytes int
	// Logger receives redis.log messages; nil drops them. It must not call
	// back into the Engine.
	Logger func(level LogLevel, msg string)
}

// Defaults for Options.
const (
	DefaultBudget         = 20_000_000
	DefaultMaxStringBytes = 512 << 20
)

// Engine runs Redis Lua scripts. It is not safe for concurrent use: a state
// machine owns one and runs one script at a time on it. It keeps one Lua
// state across runs and caches compiled scripts by SHA1.
type Engine struct {
	opt     Options
	scripts map[string]*script

	L   *lua.LState
	gen int // generation of L; compiled functions are bound to one
	sb  *sandbox

	rand     rand48
	cjsonCfg cjsonConfig
	run      runState
	callArgs callArgs            // the command of the current redis.call
	libs     map[string]*Library // function libraries' closures by name (function.go)
	loading  *loading            // the library being loaded
	slowLibs bool                // tests: no libraryHoisted
}

// script is one compiled script.
type script struct {
	proto *lua.FunctionProto
	cost  int64 // static cost of the main chunk
	flags ScriptFlags
	fn    *lua.LFunction
	gen   int
	args  [2]argTable // KEYS and ARGV, kept from run to run
}

// New returns an Engine.
func New(opt Options) *Engine {
	if opt.Budget <= 0 {
		opt.Budget = DefaultBudget
	}
	if opt.MaxStringBytes <= 0 {
		opt.MaxStringBytes = DefaultMaxStringBytes
	}
	e := &Engine{opt: opt, scripts: make(map[string]*script), cjsonCfg: defaultCjsonConfig()}
	e.rand.reset()
	e.newState()
	return e
}

// Close releases the Lua state. The Engine must not be used afterwards.
func (e *Engine) Close() {
	if e.L != nil {
		e.L.Close()
		e.L = nil
	}
	e.scripts = nil
}

// SHA1Hex returns the lowercase hex SHA1 of body, the name Redis gives a
// script.
func SHA1Hex(body []byte) string {
	sum := sha1.Sum(body)
	return hex.EncodeToString(sum[:])
}

// Forget drops every compiled script (SCRIPT FLUSH). Like Redis, it also
// resets the Lua environment (cjson settings), but not math.random.
func (e *Engine) Forget() {
	e.scripts = make(map[string]*script)
	e.cjsonCfg = defaultCjsonConfig()
}

// Has reports whether a script is compiled and cached (SCRIPT EXISTS).
func (e *Engine) Has(sha string) bool {
	_, ok := e.scripts[sha]
	return ok
}

// Flags returns the shebang flags of a cached script.
func (e *Engine) Flags(sha string) (ScriptFlags, bool) {
	s, ok := e.scripts[sha]
	if !ok {
		return 0, false
	}
	return s.flags, true
}

// Compile compiles body and caches it under sha (SHA1Hex(body) when sha is
// empty). It returns resp.NilReply on success, or the error reply Redis
// gives for the script (SCRIPT LOAD, EVAL).
func (e *Engine) Compile(sha string, body []byte) resp.Reply {
	_, r := e.compile(sha, body)
	return r
}

func (e *Engine) compile(sha string, body []byte) (*script, resp.Reply) {
	if sha == "" {
		sha = SHA1Hex(body)
	}
	if s, ok := e.scripts[sha]; ok {
		return s, resp.NilReply
	}
	flags, skip, errMsg := ParseShebang(body)
	if errMsg != "" {
		return nil, resp.Err(errMsg)
	}
	src := make([]byte, len(body))
	copy(src, body)
	for i := 0; i < skip; i++ {
		src[i] = ' ' // keep the line feed, and so the line numbers
	}
	proto, cost, msg := compileChunk(string(src), "@user_script", true)
	if msg != "" {
		return nil, resp.Err("ERR Error compiling script (new function): " + msg)
	}
	s := &script{proto: proto, cost: cost, flags: flags}
	e.scripts[sha] = s
	return s, resp.NilReply
}

// compileChunk parses, instruments and compiles Lua source. source is the
// chunk name as Lua knows it ("@user_script", or the code for loadstring).
// The main script's own cost is charged when it starts; other chunks
// (loadstring) charge it themselves, as functions do.
func compileChunk(src, source string, main bool) (*lua.FunctionProto, int64, string) {
	p, msg := parseChunk(src, chunkID(source, 80))
	if msg != "" {
		return nil, 0, msg
	}
	stmts, cost := instrument(p, !main, true)
	proto, err := lua.Compile(stmts, chunkID(source, 60))
	if err != nil {
		// The hoisted globals take registers, of which gopher-lua has
		// fewer than Lua 5.1: try again without them.
		p, _ = parseChunk(src, chunkID(source, 80))
		stmts, cost = instrument(p, !main, false)
		proto, err = lua.Compile(stmts, chunkID(source, 60))
	}
	if err != nil {
		// gopher-lua has a few limits of its own (registers, constants).
		return nil, 0, fmt.Sprintf("%s:%d: function or expression too complex", chunkID(source, 80), compileErrLine(err))
	}
	// A Lua 5.1 main chunk takes '...' but has no 'arg' table (gopher-lua
	// would build one on every run).
	proto.IsVarArg &^= lua.VarArgNeedsArg | lua.VarArgHasArg
	return proto, cost, ""
}

func compileErrLine(err error) int {
	if ce, ok := err.(*lua.CompileError); ok {
		return ce.Line
	}
	return 1
}

// chunkID renders a chunk name as Lua's luaO_chunkid does, for a buffer of
// size n.
func chunkID(source string, n int) string {
	if len(source) > 0 && source[0] == '=' {
		s := source[1:]
		if len(s) > n-1 {
			s = s[:n-1]
		}
		return cstr(s)
	}
	if len(source) > 0 && source[0] == '@' {
		s := cstr(source[1:])
		max := n - len(" '...' ") - 1
		if len(s) > max {
			s = "..." + s[len(s)-max:]
		}
		return s
	}
	s := cstr(source)
	l := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			l = i
			break
		}
	}
	max := n - len(" [string \"...\"] ") - 1
	if l > max {
		l = max
	}
	if l < len(s) {
		return `[string "` + s[:l] + `..."]`
	}
	return `[string "` + s + `"]`
}

// Run runs a script: sha names it (SHA1Hex(body) when empty); body may be
// nil when the script is cached (EVALSHA). keys and argv become KEYS and
// ARGV. The reply is what EVAL replies.
func (e *Engine) Run(sha string, body []byte, keys, argv [][]byte, c Caller) (reply resp.Reply) {
	if e.run.active {
		// a Caller running EVAL from inside a script: Redis refuses it too
		return resp.Err("ERR This Redis command is not allowed from script")
	}
	if sha == "" {
		if body == nil {
			return resp.Err(msgNoScript)
		}
		sha = SHA1Hex(body)
	}
	s, ok := e.scripts[sha]
	if !ok {
		if body == nil {
			return resp.Err(msgNoScript)
		}
		var r resp.Reply
		if s, r = e.compile(sha, body); s == nil {
			return r
		}
	}
	defer func() {
		if r := recover(); r != nil {
			// Never expected: a bug in luaexec or gopher-lua. Start over with
			// a fresh Lua state so that nothing half-done survives.
			e.newState()
			reply = resp.Err(fmt.Sprintf("ERR internal error running script: %v", r))
		}
	}()
	return e.execute(sha, s, keys, argv, c)
}

const msgNoScript = "NOSCRIPT No matching script. Please use EVAL."

func (e *Engine) execute(sha string, s *script, keys, argv [][]byte, c Caller) resp.Reply {
	L := e.L
	if s.fn == nil || s.gen != e.gen {
		s.fn = L.NewFunctionFromProto(s.proto)
		s.fn.Env = e.sb.env
		s.gen = e.gen
		s.args = [2]argTable{}
	}
	e.run.begin(e, sha, c, s.cost)
	defer e.run.end()

	e.sb.setArgs(L, &s.args, keys, argv)
	L.SetTop(0)
	L.Push(s.fn)
	err := L.PCall(0, 1, e.sb.errHandler)
	return e.result(sha, err)
}

// result is the reply of a run that ended with err: its return value,
// the error it raised (named after what ran: a script's hash, a
// function's name), or the budget's error.
func (e *Engine) result(name string, err error) resp.Reply {
	L := e.L
	e.run.active = false // nothing below may charge the budget
	if e.run.fatal != nil {
		L.SetTop(0)
		return e.run.fatal.reply()
	}
	if err != nil {
		L.SetTop(0)
		if ae, ok := err.(*lua.ApiError); ok && ae.Type == lua.ApiErrorPanic {
			// A Go panic inside the VM: report it and rebuild the state.
			defer e.newState()
			return resp.Err("ERR internal error running script: " + ae.Object.String())
		}
		return e.errorReply(name, err)
	}
	v := L.Get(-1)
	L.SetTop(0)
	return e.toReply(v)
}

// newState (re)creates the Lua state with its sandboxed environment.
func (e *Engine) newState() {
	if e.L != nil {
		e.L.Close()
	}
	e.L = lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    callStackSize,
		RegistrySize:     1024 * 16,
		RegistryMaxSize:  1024 * 1024,
		RegistryGrowStep: 1024 * 128,
	})
	e.gen++
	e.sb = newSandbox(e)
}

func init() {
	// gopher-lua fills the gap with nils when a table gets an integer key
	// past the end of its array part: t[60000000] = 1 would allocate a
	// gigabyte. Keys beyond this bound go to the hash part instead, so one
	// store allocates at most a few kilobytes. (gopher-lua is used by this
	// package only.)
	lua.MaxArrayIndex = 128
}

// Lua 5.1 limits that scripts can observe.
const (
	// callStackSize bounds Lua call depth. Redis allows 20000 (LUAI_MAXCALLS);
	// gopher-lua builds a stack trace in time quadratic in the depth when an
	// error handler overflows a full stack, which at 20000 frames holds the
	// apply path for seconds, so deadbolt stops at 2000.
	callStackSize = 2000
	maxCStack     = 8000 // LUAI_MAXCSTACK: values a C function may push
)
