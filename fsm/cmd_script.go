package fsm

import (
	"bytes"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
)

// Scripting. Script bodies are replicated state (EVAL caches its body,
// SCRIPT LOAD adds one), so EVALSHA works on every node after any
// failover; compiled functions are each node's own cache.
func init() {
	register(
		Spec{Name: "eval", Arity: -3, Flags: Write | Scripting | NoScript, fn: cmdEval},
		Spec{Name: "evalsha", Arity: -3, Flags: Write | Scripting | NoScript, fn: cmdEval},
		Spec{Name: "eval_ro", Arity: -3, Flags: Write | Scripting | NoScript, fn: cmdEval},
		Spec{Name: "evalsha_ro", Arity: -3, Flags: Write | Scripting | NoScript, fn: cmdEval},
		Spec{Name: "script", Arity: -2, Flags: Write | Scripting | NoScript, fn: cmdScript},
	)
}

// scriptRun is the state of the script being run.
type scriptRun struct {
	active   bool // a script is running
	readOnly bool // EVAL_RO, or a no-writes shebang
	allowOOM bool // an allow-oom shebang: no call is refused for memory
	wrote    bool // a write was called (maxmemory.go's scriptOOM)
}

// storedScript is a body in the replicated script cache, with its hash:
// EVALSHA finds it by the hash it is sent and runs it under this string,
// so it need not make one.
type storedScript struct {
	sha  string
	body []byte
}

// script finds a cached script by its hash, in any case. Cached hashes are
// lowercase hex, which ASCII lowering finds as strings.ToLower would.
func (f *FSM) script(sha []byte) (storedScript, bool) {
	var buf [40]byte
	if len(sha) != len(buf) {
		s, ok := f.scripts[strings.ToLower(string(sha))]
		return s, ok
	}
	for i, ch := range sha {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	s, ok := f.scripts[string(buf[:])]
	return s, ok
}

const (
	msgNegativeKeys   = "ERR Number of keys can't be negative"
	msgTooManyKeys    = "ERR Number of keys can't be greater than number of args"
	msgScriptUnknown  = "ERR Unknown Redis command called from script"
	msgScriptDenied   = "ERR This Redis command is not allowed from script"
	msgScriptArity    = "ERR Wrong number of args calling Redis command from script"
	msgScriptReadOnly = "ERR Write commands are not allowed from read-only scripts."
	msgNotBusy        = "NOTBUSY No scripts in execution right now."
)

func cmdEval(c *Ctx, args [][]byte) resp.Reply {
	var nameBuf [32]byte
	name, _ := LowerName(&nameBuf, args[0])
	bySHA := bytes.HasPrefix(name, []byte("evalsha"))
	roCmd := bytes.HasSuffix(name, []byte("_ro"))
	if bySHA && len(args[1]) != 40 {
		// Redis answers a hash that cannot match before it reads numkeys.
		return resp.Err(msgNoScript)
	}
	numKeys, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	if numKeys < 0 {
		return resp.Err(msgNegativeKeys)
	}
	if numKeys > int64(len(args)-3) {
		return resp.Err(msgTooManyKeys)
	}
	if c.f.lua == nil {
		return resp.Err("ERR scripting is not available")
	}
	var sha string
	var body []byte
	if bySHA {
		s, ok := c.f.script(args[1])
		if !ok {
			return resp.Err(msgNoScript)
		}
		sha, body = s.sha, s.body
	} else {
		body = args[1]
		sha = SHA1Hex(body)
		if _, cached := c.f.scripts[sha]; !cached {
			if r := c.f.lua.Compile(sha, body); r.IsError() {
				return r
			}
			if !c.readOnly {
				c.f.scripts[sha] = storedScript{sha: sha, body: append([]byte(nil), body...)}
			}
		}
	}
	noWrites, msg := c.f.lua.ReadOnly(body)
	if msg != "" {
		return resp.Err(msg)
	}
	if roCmd && !noWrites && hasShebang(body) {
		return resp.Err("ERR Can not execute a script with write flag using *_ro command.")
	}
	if c.oom && scriptDeniesOOM(body) {
		return resp.Err(msgScriptOOM)
	}
	keys := args[3 : 3+numKeys]
	argv := args[3+numKeys:]
	saved := c.script
	savedDB := c.dbIndex
	c.script = scriptRun{active: true, readOnly: noWrites || roCmd, allowOOM: scriptAllowsOOM(body)}
	defer func() {
		// SELECT inside a script does not change the caller's database.
		c.script = saved
		c.selectDB(savedDB)
	}()
	return c.f.lua.Run(sha, body, keys, argv, (*scriptCaller)(c))
}

// scriptCaller is a Ctx as the script engine's caller: a pointer, so
// handing it over allocates nothing.
type scriptCaller Ctx

func (s *scriptCaller) Call(args [][]byte) resp.Reply { return (*Ctx)(s).scriptCall(args) }

func hasShebang(body []byte) bool { return len(body) >= 2 && body[0] == '#' && body[1] == '!' }

// scriptCall runs one redis.call from a script, with the checks Redis
// makes for scripts. The error texts are Redis's; luaexec adds the
// "script: <sha>, on @user_script:N." part where Redis does.
func (c *Ctx) scriptCall(args [][]byte) resp.Reply {
	if len(args) == 0 {
		return resp.Err("ERR Please specify at least one argument for this redis lib call")
	}
	if len(args) >= 3 && optEq(args[0], "memory") && optEq(args[1], "usage") {
		// The server's MEMORY container; its USAGE is the state
		// machine's (memusage.go).
		if r, ok := c.scriptACL(args); !ok {
			return r
		}
		c.f.calls++
		return cmdMemoryUsage(c, MemoryUsageArgs(args[2:]))
	}
	spec, ok := Lookup(args[0])
	if !ok || spec.Flags&Internal != 0 {
		return serverCommandFromScript(args) // script_servercmd.go
	}
	// Arity first, then noscript, as Redis's scriptCall checks them.
	if !spec.arityOK(len(args)) {
		return resp.Err(msgScriptArity)
	}
	if spec.Flags&NoScript != 0 {
		return resp.Err(msgScriptDenied)
	}
	if r, ok := c.scriptACL(args); !ok {
		return r
	}
	if spec.Flags&Write != 0 && (c.script.readOnly || c.readOnly) {
		if c.writeRefusal != "" && !c.script.readOnly {
			return resp.Err(c.writeRefusal) // writesrefused.go
		}
		return resp.Err(msgScriptReadOnly)
	}
	if r, ok := c.scriptOOM(args); !ok {
		return r
	}
	c.f.calls++
	return spec.fn(c, args)
}

// scriptSubArity is each SCRIPT subcommand's arity, as COMMAND INFO has it.
var scriptSubArity = map[string]int{"load": 3, "exists": -3, "flush": -2, "kill": 2, "help": 2, "debug": 3}

func cmdScript(c *Ctx, args [][]byte) resp.Reply {
	sub := strings.ToLower(string(args[1]))
	arity, known := scriptSubArity[sub]
	if !known {
		return resp.Err("ERR unknown subcommand '" + sanitize(string(args[1][:min(len(args[1]), 128)])) + "'. Try SCRIPT HELP.")
	}
	if (arity > 0 && len(args) != arity) || (arity < 0 && len(args) < -arity) {
		return resp.Err("ERR wrong number of arguments for 'script|" + sub + "' command")
	}
	switch {
	case sub == "load" && len(args) == 3:
		if c.f.lua == nil {
			return resp.Err("ERR scripting is not available")
		}
		sha := SHA1Hex(args[2])
		if _, ok := c.f.scripts[sha]; !ok {
			if r := c.f.lua.Compile(sha, args[2]); r.IsError() {
				return r
			}
			c.mustWrite()
			c.f.scripts[sha] = storedScript{sha: sha, body: append([]byte(nil), args[2]...)}
		}
		return resp.BulkString(sha)
	case sub == "exists" && len(args) >= 3:
		out := make([]resp.Reply, len(args)-2)
		for i, a := range args[2:] {
			if _, ok := c.f.script(a); ok {
				out[i] = resp.One
			} else {
				out[i] = resp.Zero
			}
		}
		return resp.ArrayReply(out...)
	case sub == "flush":
		if len(args) > 3 || len(args) == 3 && !optEq(args[2], "async") && !optEq(args[2], "sync") {
			return resp.Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		}
		c.mustWrite()
		c.f.scripts = make(map[string]storedScript)
		if c.f.lua != nil {
			c.f.lua.Forget()
		}
		return resp.OK
	case sub == "kill" && len(args) == 2:
		return resp.Err(msgNotBusy)
	case sub == "help" && len(args) == 2:
		lines := []string{
			"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DEBUG (YES|SYNC|NO)",
			"    Set the debug mode for subsequent scripts executed.",
			"EXISTS <sha1> [<sha1> ...]",
			"    Return information about the existence of the scripts in the script cache.",
			"FLUSH [ASYNC|SYNC]",
			"    Flush the Lua scripts cache. Very dangerous on replicas.",
			"    When called without the optional mode argument, the behavior is determined by the",
			"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
			"    * ASYNC: Asynchronously flush the scripts cache.",
			"    * SYNC: Synchronously flush the scripts cache.",
			"KILL",
			"    Kill the currently executing Lua script.",
			"LOAD <script>",
			"    Load a script into the scripts cache without executing it.",
			"HELP",
			"    Prints this help.",
		}
		out := make([]resp.Reply, len(lines))
		for i, l := range lines {
			out[i] = resp.StatusReply(l)
		}
		return resp.ArrayReply(out...)
	case sub == "debug":
		return resp.Err("ERR SCRIPT DEBUG is not supported")
	}
	return resp.Err(msgSyntax)
}

// ScriptCount is the number of cached script bodies (INFO memory).
func (f *FSM) ScriptCount() int { return len(f.scripts) }
