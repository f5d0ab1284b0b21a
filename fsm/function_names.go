package fsm

import (
	"slices"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
)

// Function names, exact and folded. Redis 7.0 looks function names up
// without case (functions.c's functions dictionary compares with
// strcasecmp): FCALL abc calls 'Abc', and a library may not register
// 'aBC' while another holds 'Abc'. deadbolt compared them with case until
// 2026-11-27, and the log still holds entries written so: applied again
// (a restart replays the log; an older member applies the same entries),
// each must do what it did when it was written. So the rule is part of
// the entry: Command.FoldFunctionNames, set by the leader on what it
// writes under the new rule (cluster's envelope version 4), decides for
// FCALL, FCALL_RO, FUNCTION LOAD and FUNCTION RESTORE; without it they
// compare with case, exactly as before.
//
// The registry keeps two indexes. f.functions, by exact name, serves the
// old rule and is kept exactly as the build before did, quirks included
// (dropLibrary takes a library's names out even where another library
// holds the same name: FUNCTION RESTORE REPLACE moving a function to a
// library restored before the one it left lost it, and so do old-rule
// commands still; TestFunctionRestoreMoveExact). The folding rule never
// reads it: it reads f.folded, by lower-case name (names are ASCII
// letters, digits and '_': ParseLibraryMeta and register_function check),
// which names the first library in name order holding the name in any
// case, and looks past it only where two libraries hold names that
// differ only in case (functionClash: left by old-rule commands, or
// restored from them). So what a folding command finds depends on the set
// of libraries alone: a node that replayed the log and one restored from
// a snapshot (which loads libraries in name order) agree. Old-rule
// look-ups of a name the quirk touched may not, in any build
// (warnSharedFunctionNames).
//
// A folding look-up takes the first library in name order that holds the
// exact name (the function a caller of that name reached before the
// rule), else the first holding it in any case; in that library the exact
// name, else the first function registered under it in any case.

// nameRule is how a library's function names are checked as it loads.
type nameRule uint8

const (
	exactNames    nameRule = iota // commands without FoldFunctionNames
	foldedNames                   // commands with it
	restoredNames                 // a snapshot's libraries: no check
)

func ruleOf(fold bool) nameRule {
	if fold {
		return foldedNames
	}
	return exactNames
}

// funcKey is a function name's key in f.folded.
func funcKey(name string) string { return strings.ToLower(name) }

// clearLibraries forgets every library (FUNCTION FLUSH, RESTORE FLUSH).
func (f *FSM) clearLibraries() {
	f.libraries, f.functions, f.folded = nil, nil, nil
	f.functionClash = false
}

// loadLibrary checks and loads a library and, when it loads, keeps it.
// Under exactNames a function name another library holds in the same
// case is refused, under foldedNames one it holds in any case; a
// snapshot's libraries restore without a check (one written before the
// rule may hold names that differ only in case: a node that refused its
// own snapshot would not start).
func (f *FSM) loadLibrary(code []byte, replace bool, rule nameRule) (string, resp.Reply) {
	name, msg := f.lua.ParseLibraryMeta(code)
	if msg != "" {
		return "", resp.Err(msg)
	}
	if !replace && f.libraries[name] != nil {
		return "", resp.Err("ERR Library '" + name + "' already exists")
	}
	fns, r := f.lua.LoadLibrary(name, code)
	if r.IsError() {
		return "", r
	}
	if rule != restoredNames {
		own := func(owner string) bool { return owner == name } // replaced: skipped
		for _, fn := range fns {
			if _, ok := f.functionHolder(fn.Name, rule == foldedNames, own); ok {
				return "", resp.Err("ERR Function " + fn.Name + " already exists")
			}
		}
	}
	f.dropLibrary(name)
	f.lua.KeepLibrary(name)
	f.addLibrary(&library{name: name, code: append([]byte(nil), code...), functions: fns})
	return name, resp.NilReply
}

// functionHolder returns a library that holds a function named fnName,
// other than those skip passes: by the exact index (the old rule's
// check), or with fold a library holding it in any case.
func (f *FSM) functionHolder(fnName string, fold bool, skip func(string) bool) (string, bool) {
	if !fold {
		owner, ok := f.functions[fnName]
		return owner, ok && !skip(owner)
	}
	k := funcKey(fnName)
	if owner, ok := f.folded[k]; ok && !skip(owner) {
		return owner, true
	}
	if f.functionClash { // another library may hold it too
		for _, lib := range f.sortedLibraries() {
			if !skip(lib.name) && holdsFolded(lib, k) {
				return lib.name, true
			}
		}
	}
	return "", false
}

func holdsFolded(lib *library, k string) bool {
	return slices.ContainsFunc(lib.functions, func(m FunctionMeta) bool { return funcKey(m.Name) == k })
}

// warnSharedFunctionNames logs, after a snapshot restore, each function
// name two libraries hold in the same case (left by the build before's
// RESTORE REPLACE quirk, see above). Old-rule look-ups of such a name may
// answer otherwise than on a node that replayed the log (the exact index
// is rebuilt in library-name order: the last library holding it wins);
// TestFunctionExactQuirkReplayVsRestore pins the case.
func (f *FSM) warnSharedFunctionNames() {
	if f.opt.Logger == nil || !f.functionClash {
		return
	}
	first := map[string]string{}
	for _, lib := range f.sortedLibraries() {
		for _, fn := range lib.functions {
			if o, ok := first[fn.Name]; ok {
				f.opt.Logger.Warn("restored function libraries share a function name: commands written before names were case-insensitive may find it in another library than on a node that replayed the log",
					"function", fn.Name, "libraries", o+", "+lib.name)
				continue
			}
			first[fn.Name] = lib.name
		}
	}
}

// addLibrary keeps lib, checked, and indexes its functions.
func (f *FSM) addLibrary(lib *library) {
	if f.libraries == nil {
		f.libraries, f.functions, f.folded = map[string]*library{}, map[string]string{}, map[string]string{}
	}
	f.libraries[lib.name] = lib
	for _, fn := range lib.functions {
		f.functions[fn.Name] = lib.name
		k := funcKey(fn.Name)
		switch owner, ok := f.folded[k]; {
		case !ok:
			f.folded[k] = lib.name
		case owner != lib.name:
			// a name two libraries hold, in the same case or not: left
			// by old-rule commands, or restored from them
			f.functionClash = true
			if lib.name < owner {
				f.folded[k] = lib.name
			}
		}
	}
}

// dropLibrary forgets a library and its functions.
func (f *FSM) dropLibrary(name string) {
	lib := f.libraries[name]
	if lib == nil {
		return
	}
	delete(f.libraries, name)
	var freed []string
	for _, fn := range lib.functions {
		delete(f.functions, fn.Name) // whoever holds it: as before the rule
		if k := funcKey(fn.Name); f.folded[k] == name {
			delete(f.folded, k)
			freed = append(freed, k)
		}
	}
	f.lua.DropLibrary(name)
	if !f.functionClash {
		return
	}
	// another library may hold a freed name: the first in name order
	// takes it (the same on every node)
	for _, o := range f.sortedLibraries() {
		for _, k := range freed {
			if _, taken := f.folded[k]; !taken && holdsFolded(o, k) {
				f.folded[k] = o.name
			}
		}
	}
	f.functionClash = f.sharesFoldedName()
}

// sharesFoldedName reports whether two libraries hold a function name in
// any case: functionClash as a snapshot restore of the same libraries
// would set it, so that it clears once the last such pair is gone.
func (f *FSM) sharesFoldedName() bool {
	holder := make(map[string]string, len(f.folded))
	for _, lib := range f.libraries {
		for _, fn := range lib.functions {
			k := funcKey(fn.Name)
			if h, ok := holder[k]; ok && h != lib.name {
				return true
			}
			holder[k] = lib.name
		}
	}
	return false
}

// functionMeta returns the registered function of that name under the
// rule fold says (lookupFunction).
func (f *FSM) functionMeta(name []byte, fold bool) (FunctionMeta, bool) {
	fn, _, ok := f.lookupFunction(name, fold)
	return fn, ok
}

// lookupFunction returns the registered function of that name and its
// library's name: by the exact index, or with fold as the comment above
// says.
func (f *FSM) lookupFunction(name []byte, fold bool) (FunctionMeta, string, bool) {
	if !fold {
		libName, ok := f.functions[string(name)] // no copy
		if !ok {
			return FunctionMeta{}, "", false
		}
		for _, fn := range f.libraries[libName].functions {
			if fn.Name == string(name) {
				return fn, libName, true
			}
		}
		return FunctionMeta{}, "", false
	}
	if f.functionClash {
		for _, lib := range f.sortedLibraries() {
			for _, fn := range lib.functions {
				if fn.Name == string(name) {
					return fn, lib.name, true
				}
			}
		}
	}
	var libName string
	var ok bool
	if hasUpper(name) {
		libName, ok = f.folded[funcKey(string(name))]
	} else {
		libName, ok = f.folded[string(name)] // no copy
	}
	if !ok {
		return FunctionMeta{}, "", false
	}
	fns := f.libraries[libName].functions
	for _, fn := range fns {
		if fn.Name == string(name) {
			return fn, libName, true
		}
	}
	for _, fn := range fns {
		if strings.EqualFold(fn.Name, string(name)) {
			return fn, libName, true
		}
	}
	return FunctionMeta{}, "", false
}

func hasUpper(b []byte) bool {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// NamesFunctions reports whether cmd's outcome can depend on the rule for
// function names (Command.FoldFunctionNames): it is, or queues in MULTI,
// FCALL, FCALL_RO, FUNCTION LOAD or FUNCTION RESTORE. The leader marks
// only these, so every other entry keeps the envelope an older build reads.
func NamesFunctions(cmd Command) bool {
	if namesFunctions(cmd.Args) {
		return true
	}
	for _, args := range cmd.Tx {
		if namesFunctions(args) {
			return true
		}
	}
	return false
}

func namesFunctions(args [][]byte) bool {
	if len(args) == 0 {
		return false
	}
	switch {
	case optEq(args[0], "fcall"), optEq(args[0], "fcall_ro"):
		return true
	case optEq(args[0], "function"):
		return len(args) > 1 && (optEq(args[1], "load") || optEq(args[1], "restore"))
	}
	return false
}
