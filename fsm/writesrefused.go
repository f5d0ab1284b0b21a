package fsm

import (
	"strings"

	"github.com/deadbolt/deadbolt/luaexec"
	"github.com/deadbolt/deadbolt/resp"
)

// Scripts while writes are refused (a full disk: cluster/diskspace.go).
//
// Redis 7.0 refuses a command flagged write while it cannot persist
// (MISCONF), before running it. The script commands are not flagged write
// unless the script says so: EVAL of a script without a shebang (Redis's
// eval compatibility mode) runs, and only a write command it calls is
// refused, with the same MISCONF error (script.c's
// scriptVerifyWriteCommandAllow); a script or function that declared flags
// runs only if one of them is no-writes, and EVAL_RO / FCALL_RO are read
// only. deadbolt proposes every script command through the log, so a
// leader that refuses writes runs these, instead of refusing them, as a
// read (ReadWritesRefused), in a mode where a write call raises the
// leader's refusal.

// RunsWhileWritesRefused reports whether Redis would run cmd, a script
// command (EVAL, EVALSHA, FCALL and their _RO forms), while writes are
// refused: not for a script or function whose declared flags lack
// no-writes (Redis flags that command line write and refuses it before it
// runs). A script Redis runs to find an error in (an unknown hash or
// function, a bad shebang) runs too, and answers that error.
func (f *FSM) RunsWhileWritesRefused(cmd Command) bool {
	if cmd.Args == nil {
		return false
	}
	spec, ok := Lookup(cmd.Args[0])
	if !ok || spec.Flags&Scripting == 0 || !spec.arityOK(len(cmd.Args)) {
		return false
	}
	args := cmd.Args
	switch spec.Name {
	case "eval", "eval_ro":
		return !scriptDeclaresWrites(args[1])
	case "evalsha", "evalsha_ro":
		s, ok := f.script(args[1])
		return !ok || !scriptDeclaresWrites(s.body)
	case "fcall", "fcall_ro":
		// Redis flags the call write unless the function declared
		// no-writes (fcallGetCommandFlags), FCALL_RO too, and refuses it
		// before it runs; an unknown function runs, to answer its error.
		// A no-writes function runs here outside the log, in a fresh copy
		// of its library (cmdFcall, luaexec's CallFunctionApart), so it
		// cannot change the library's kept closures on this node only.
		meta, ok := f.functionMeta(args[1], cmd.FoldFunctionNames)
		return !ok || meta.noWrites()
	case "script":
		// SCRIPT LOAD of a script already cached changes nothing (Redis
		// runs SCRIPT under MISCONF); one that would add it is a write.
		if len(args) == 3 && strings.EqualFold(string(args[1]), "load") {
			_, ok := f.scripts[SHA1Hex(args[2])]
			return ok
		}
		return ReadOnlyCall(args)
	}
	return false
}

// ReadOnlyCall reports whether args, a command whose spec is flagged
// Write, changes nothing and can be served as a read: SCRIPT EXISTS (the
// SCRIPT container's other subcommands load or flush).
func ReadOnlyCall(args [][]byte) bool {
	return len(args) >= 3 && strings.EqualFold(string(args[0]), "script") && strings.EqualFold(string(args[1]), "exists")
}

// scriptDeclaresWrites reads a script's shebang as Redis's
// scriptFlagsToCmdFlags does: flags declared without no-writes make the
// command a write.
func scriptDeclaresWrites(body []byte) bool {
	flags, _, msg := luaexec.ParseShebang(body)
	return msg == "" && flags&luaexec.FlagEvalCompat == 0 && flags&luaexec.FlagNoWrites == 0
}

// ReadWritesRefused runs cmd, for which RunsWhileWritesRefused holds, as
// Read does (changing nothing, not even the clock or the script engine's
// random generator), except that the script may run: a write command it calls gets refusal (a MISCONF text) as its
// error, raised by redis.call and returned by redis.pcall as Redis does.
// A read-only script (EVAL_RO, no-writes) still gets Redis's read-only
// script error, which Redis checks first. An EVAL body is not added to
// the replicated script cache (that is a write); Redis, which caches it
// in its own memory, would find it by EVALSHA later.
func (f *FSM) ReadWritesRefused(now int64, cmd Command, refusal string) Result {
	if now < f.now {
		now = f.now
	}
	if cmd.DB < 0 || cmd.DB >= NumDBs {
		return Result{Reply: resp.Err(msgDBIndex), DB: cmd.DB}
	}
	c := &Ctx{f: f, now: now, readOnly: true, writeRefusal: refusal}
	c.selectDB(cmd.DB)
	c.user = cmd.User
	c.foldNames = cmd.FoldFunctionNames
	spec, ok := Lookup(cmd.Args[0])
	if !ok || spec.Flags&Scripting == 0 || !spec.arityOK(len(cmd.Args)) {
		return Result{Reply: resp.Err(msgWriteInRead), DB: cmd.DB}
	}
	if f.lua != nil {
		// The engine's lasting state (math.random's generator, cjson's
		// settings) is replicated: a script run outside the log must
		// leave it as it found it, or this node's next scripts would
		// draw other numbers than the other nodes'.
		saved := f.lua.State()
		defer func() {
			if err := f.lua.SetState(saved); err != nil {
				panic("fsm: restoring the script engine's state: " + err.Error())
			}
		}()
	}
	f.calls++
	r := spec.fn(c, cmd.Args)
	// A script's SELECT does not change the caller's database.
	return Result{Reply: r, DB: cmd.DB, Denials: c.denials}
}
