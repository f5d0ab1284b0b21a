package fsm

import (
	"slices"
	"sort"
	"strings"

	"github.com/deadbolt/deadbolt/internal/glob"
	"github.com/deadbolt/deadbolt/resp"
)

// Functions (FUNCTION, FCALL, FCALL_RO), Redis 7.0's. A library's code is
// replicated state (through the log, in snapshots); the script engine
// keeps the closures a load made, and the state machine loads a library
// again when the engine no longer has it (a new Lua state, a restore).
// Loading runs Lua under the same deterministic budget as EVAL, so every
// node registers the same functions or refuses the same library.

func init() {
	register(
		Spec{Name: "function", Arity: -2, Flags: Write | Scripting | NoScript, fn: cmdFunction},
		Spec{Name: "fcall", Arity: -3, Flags: Write | Scripting | NoScript, fn: cmdFcall},
		Spec{Name: "fcall_ro", Arity: -3, Flags: Write | Scripting | NoScript, fn: cmdFcall},
	)
}

// library is a loaded library as the state machine keeps it.
type library struct {
	name      string
	code      []byte
	functions []FunctionMeta
}

// FunctionMeta describes a registered function.
type FunctionMeta struct {
	Name        string
	Description string
	HasDesc     bool
	Flags       []string
}

func (m FunctionMeta) noWrites() bool {
	for _, f := range m.Flags {
		if f == "no-writes" {
			return true
		}
	}
	return false
}

// functionSubArity is each FUNCTION subcommand's arity, as COMMAND INFO has it.
var functionSubArity = map[string]int{
	"load": -3, "delete": 3, "flush": -2, "list": -2, "stats": 2, "kill": 2, "dump": 2, "restore": -3, "help": 2,
}

func cmdFunction(c *Ctx, args [][]byte) resp.Reply {
	sub := strings.ToLower(string(args[1]))
	arity, known := functionSubArity[sub]
	if !known {
		return resp.Err("ERR unknown subcommand '" + sanitize(string(args[1][:min(len(args[1]), 128)])) + "'. Try FUNCTION HELP.")
	}
	if (arity > 0 && len(args) != arity) || (arity < 0 && len(args) < -arity) {
		return resp.Err("ERR wrong number of arguments for 'function|" + sub + "' command")
	}
	if c.f.lua == nil {
		return resp.Err("ERR scripting is not available")
	}
	switch sub {
	case "load":
		return functionLoad(c, args[2:])
	case "delete":
		lib := c.f.libraries[string(args[2])]
		if lib == nil {
			return resp.Err("ERR Library not found")
		}
		c.mustWrite()
		c.f.dropLibrary(lib.name)
		return resp.OK
	case "flush":
		if len(args) > 3 {
			return functionSyntaxError(args)
		}
		if len(args) == 3 && !optEq(args[2], "sync") && !optEq(args[2], "async") {
			return resp.Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		}
		c.mustWrite()
		c.f.clearLibraries()
		c.f.lua.DropLibrary("")
		return resp.OK
	case "list":
		return functionList(c, args[2:])
	case "stats":
		n := 0
		for _, lib := range c.f.libraries {
			n += len(lib.functions)
		}
		return resp.MapReply(
			resp.BulkString("running_script"), resp.NilReply,
			resp.BulkString("engines"), resp.MapReply(resp.BulkString("LUA"), resp.MapReply(
				resp.BulkString("libraries_count"), resp.IntReply(int64(len(c.f.libraries))),
				resp.BulkString("functions_count"), resp.IntReply(int64(n)),
			)),
		)
	case "kill":
		return resp.Err(msgNotBusy)
	case "dump":
		return resp.BulkReply(dumpLibraries(c.f.sortedLibraries()))
	case "restore":
		if len(args) > 4 {
			return functionSyntaxError(args)
		}
		return functionRestore(c, args[2:])
	}
	return resp.ArrayReply(
		resp.StatusReply("FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
		resp.StatusReply("LOAD [REPLACE] <FUNCTION CODE>"),
		resp.StatusReply("    Create a new library with the given library name and code."),
		resp.StatusReply("DELETE <LIBRARY NAME>"),
		resp.StatusReply("    Delete the given library."),
		resp.StatusReply("LIST [LIBRARYNAME PATTERN] [WITHCODE]"),
		resp.StatusReply("    Return general information on all the libraries:"),
		resp.StatusReply("    * Library name"),
		resp.StatusReply("    * The engine used to run the Library"),
		resp.StatusReply("    * Library description"),
		resp.StatusReply("    * Functions list"),
		resp.StatusReply("    * Library code (if WITHCODE is given)"),
		resp.StatusReply("    It also possible to get only function that matches a pattern using LIBRARYNAME argument."),
		resp.StatusReply("STATS"),
		resp.StatusReply("    Return information about the current function running:"),
		resp.StatusReply("    * Function name"),
		resp.StatusReply("    * Command used to run the function"),
		resp.StatusReply("    * Duration in MS that the function is running"),
		resp.StatusReply("    If no function is running, return nil"),
		resp.StatusReply("    In addition, returns a list of available engines."),
		resp.StatusReply("KILL"),
		resp.StatusReply("    Kill the current running function."),
		resp.StatusReply("FLUSH [ASYNC|SYNC]"),
		resp.StatusReply("    Delete all the libraries."),
		resp.StatusReply("    When called without the optional mode argument, the behavior is determined by the"),
		resp.StatusReply("    lazyfree-lazy-user-flush configuration directive. Valid modes are:"),
		resp.StatusReply("    * ASYNC: Asynchronously flush the libraries."),
		resp.StatusReply("    * SYNC: Synchronously flush the libraries."),
		resp.StatusReply("DUMP"),
		resp.StatusReply("    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command"),
		resp.StatusReply("RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]"),
		resp.StatusReply("    Restore the libraries represented by the given payload, it is possible to give a restore policy to"),
		resp.StatusReply("    control how to handle existing libraries (default APPEND):"),
		resp.StatusReply("    * FLUSH: delete all existing libraries."),
		resp.StatusReply("    * APPEND: appends the restored libraries to the existing libraries. On collision, abort."),
		resp.StatusReply("    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old"),
		resp.StatusReply("      libraries with the new libraries (notice that even on this option there is a chance of failure"),
		resp.StatusReply("      in case of functions name collision with another library)."),
		resp.StatusReply("HELP"),
		resp.StatusReply("    Prints this help."),
	)
}

// functionLoad is FUNCTION LOAD [REPLACE] code.
func functionLoad(c *Ctx, args [][]byte) resp.Reply {
	replace := false
	for len(args) > 1 {
		if !optEq(args[0], "replace") {
			return resp.Err("ERR Unknown option given: " + sanitize(string(args[0])))
		}
		replace = true
		args = args[1:]
	}
	var code []byte
	if len(args) == 1 {
		code = args[0]
	}
	name, r := c.f.loadLibrary(code, replace, ruleOf(c.foldNames))
	if r.IsError() {
		return r
	}
	c.mustWrite()
	return resp.BulkString(name)
}

func (f *FSM) sortedLibraries() []*library {
	out := make([]*library, 0, len(f.libraries))
	for _, lib := range f.libraries {
		out = append(out, lib)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func functionList(c *Ctx, args [][]byte) resp.Reply {
	var pattern []byte
	withCode, hasPattern := false, false
	for i := 0; i < len(args); i++ {
		switch {
		case optEq(args[i], "withcode") && !withCode:
			withCode = true
		case optEq(args[i], "libraryname") && !hasPattern:
			if i+1 >= len(args) {
				return resp.Err("ERR library name argument was not given")
			}
			pattern, hasPattern = args[i+1], true
			i++
		default:
			return resp.Err("ERR Unknown argument " + sanitize(string(args[i])))
		}
	}
	out := []resp.Reply{}
	for _, lib := range c.f.sortedLibraries() {
		if hasPattern && !glob.Match(pattern, []byte(lib.name)) {
			continue
		}
		// Redis lists a library's functions in its hash order, which
		// nothing should depend on; by name here.
		sorted := append([]FunctionMeta(nil), lib.functions...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		fns := make([]resp.Reply, len(sorted))
		for i, fn := range sorted {
			desc := resp.NilReply
			if fn.HasDesc {
				desc = resp.BulkString(fn.Description)
			}
			flags := make([]resp.Reply, len(fn.Flags))
			for j, fl := range fn.Flags {
				flags[j] = resp.StatusReply(fl)
			}
			fns[i] = resp.MapReply(
				resp.BulkString("name"), resp.BulkString(fn.Name),
				resp.BulkString("description"), desc,
				resp.BulkString("flags"), resp.SetReply(flags...),
			)
		}
		entry := []resp.Reply{
			resp.BulkString("library_name"), resp.BulkString(lib.name),
			resp.BulkString("engine"), resp.BulkString("LUA"),
			resp.BulkString("functions"), resp.ArrayReply(fns...),
		}
		if withCode {
			entry = append(entry, resp.BulkString("library_code"), resp.BulkReply(lib.code))
		}
		out = append(out, resp.MapReply(entry...))
	}
	return resp.ArrayReply(out...)
}

// functionSyntaxError is Redis's reply to a known FUNCTION subcommand
// given more arguments than it takes.
func functionSyntaxError(args [][]byte) resp.Reply {
	return resp.Err("ERR unknown subcommand or wrong number of arguments for '" + sanitize(string(args[1][:min(len(args[1]), 128)])) + "'. Try FUNCTION HELP.")
}

// cmdFcall is FCALL and FCALL_RO function numkeys key... arg....
func cmdFcall(c *Ctx, args [][]byte) resp.Reply {
	roCmd := optEq(args[0], "fcall_ro")
	if c.f.lua == nil {
		return resp.Err("ERR scripting is not available")
	}
	// Redis looks the function up before it reads numkeys.
	meta, libName, ok := c.f.lookupFunction(args[1], c.foldNames)
	if !ok {
		return resp.Err("ERR Function not found")
	}
	numKeys, ok := parseInt64(args[2])
	if !ok {
		return resp.Err("ERR Bad number of keys provided")
	}
	if numKeys < 0 {
		return resp.Err(msgNegativeKeys)
	}
	if numKeys > int64(len(args)-3) {
		return resp.Err(msgTooManyKeys)
	}
	lib := c.f.libraries[libName]
	if roCmd && !meta.noWrites() {
		return resp.Err("ERR Can not execute a script with write flag using *_ro command.")
	}
	allowOOM := slices.Contains(meta.Flags, "allow-oom")
	if c.oom && !allowOOM && !meta.noWrites() {
		return resp.Err(msgScriptOOM)
	}
	if !c.f.lua.HasLibrary(libName, lib.code) {
		// Loaded before this Lua state (a restore, a new state): load it
		// again, as it loaded the first time.
		if _, r := c.f.lua.LoadLibrary(libName, lib.code); r.IsError() {
			return r
		}
		c.f.lua.KeepLibrary(libName)
	}
	saved := c.script
	savedDB := c.dbIndex
	c.script = scriptRun{active: true, readOnly: meta.noWrites() || roCmd, allowOOM: allowOOM}
	defer func() {
		c.script = saved
		c.selectDB(savedDB)
	}()
	if c.readOnly {
		// outside the log (a no-writes function while writes are
		// refused): the kept closures are not touched (writesrefused.go)
		return c.f.lua.CallFunctionApart(libName, meta.Name, args[3:3+numKeys], args[3+numKeys:], (*scriptCaller)(c))
	}
	return c.f.lua.CallFunction(libName, meta.Name, args[3:3+numKeys], args[3+numKeys:], (*scriptCaller)(c)) // meta.Name: no copy of args[1]
}
