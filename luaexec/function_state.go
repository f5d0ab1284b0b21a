package luaexec

import (
	"github.com/deadbolt/deadbolt/resp"
	lua "github.com/yuin/gopher-lua"
)

// Libraries that keep state between calls.
//
// Redis 7.0 replicates what an FCALL did; deadbolt replicates the FCALL,
// and every node runs the function. A library's functions are closures
// over its chunk's locals, which live in each node's Lua state: a
// function that changed one (`local n = 0 ... n = n + 1`), or a table or
// closure held in one (`seen[k] = true`), would let a node that loaded
// the library again (a restart, a snapshot install, a node that joined
// later) answer otherwise than a node that kept its state, from the same
// log.
//
// So a call must not see anything an earlier call left. When a library
// loads, markStateful decides for each function, from the bytecode and
// from what the chunk left behind (both the same on every node, since a
// load sees nothing but redis), whether a call of it could change anything
// a later call sees. For most it cannot: they keep the closures of the
// load, as before, at no cost. A function that could ("stateful") runs,
// at each call, in a fresh copy: the library's chunk runs again and the
// call goes to that copy's function, so every call starts from the state
// right after a load, on every node, whatever the node's history. That
// costs one run of the chunk per call, for those functions only.
//
// A call can change state kept by the library in these ways only:
//   - assigning a variable the chunk made (SETUPVAL on an upvalue whose
//     cell outlives the call);
//   - changing a table, coroutine or userdata the chunk left reachable
//     (a table that is not read-only: the sandbox's proxies refuse writes);
//   - the globals and the libraries' environments are read-only, and the
//     engine's own state (math.random, cjson's settings) is in snapshots
//     (State), so neither counts here.
// The check is conservative: a library it calls stateful may not be, and
// only runs slower.

// markStateful decides, for each function lib registered, whether its
// calls run from a fresh copy (see above); top is the chunk's prototype.
// A function is judged by what it can reach alone: the functions of the
// library that need a fresh copy never change the kept closures, so a
// function that cannot change them itself always finds them as the load
// left them.
func (sb *sandbox) markStateful(lib *Library, top *lua.FunctionProto) {
	lib.stateful = false
	for _, f := range lib.fns {
		f.fresh = sb.keepsState(lib, f.fn, top)
		lib.stateful = lib.stateful || f.fresh
	}
}

// keepsState reports whether a call of fn, a function of lib, could
// change what a later call sees.
func (sb *sandbox) keepsState(lib *Library, fn *lua.LFunction, top *lua.FunctionProto) bool {
	// the values the function reaches: closures and their upvalues
	live := map[*lua.FunctionProto]bool{}
	seen := map[*lua.LFunction]bool{}
	var mutable func(v lua.LValue) bool
	mutable = func(v lua.LValue) bool {
		switch x := v.(type) {
		case *lua.LNilType, lua.LBool, lua.LNumber, lua.LString:
			return false
		case *lua.LTable:
			return !sb.isProtected(x)
		case *lua.LFunction:
			if x.IsG || seen[x] {
				return false // Go functions keep nothing of their own
			}
			seen[x] = true
			if x.Proto == nil || x.Env != lib.env {
				return true
			}
			live[x.Proto] = true
			for _, uv := range x.Upvalues {
				if uv != nil && mutable(uv.Value()) {
					return true
				}
			}
			return false
		}
		return true // a coroutine, a userdata, a channel
	}
	if mutable(fn) {
		return true
	}
	// the code: an assignment to a variable that outlives the call
	return setsKeptUpvalue(top, live)
}

// setsKeptUpvalue reports whether a function of the chunk top assigns
// an upvalue whose cell may outlive a call. live holds the prototypes of
// the closures the registered functions reach once the load is over.
//
// Every cell of such a closure outlives calls. A closure made during a
// call (its prototype not in live: none of its closures outlived the
// load) gets its cells when its CLOSURE instruction runs, one per
// upvalue: a local of the function running it (a MOVE after the
// CLOSURE), which is that call's own and new, or an upvalue of that
// function (a GETUPVAL), which outlives calls if that one does.
func setsKeptUpvalue(top *lua.FunctionProto, live map[*lua.FunctionProto]bool) bool {
	type key struct {
		p *lua.FunctionProto
		i int
	}
	memo := map[key]bool{}
	var kept func(p, parent *lua.FunctionProto, i int) bool
	parents := map[*lua.FunctionProto]*lua.FunctionProto{}
	kept = func(p, parent *lua.FunctionProto, i int) bool {
		if live[p] {
			return true
		}
		if parent == nil {
			return false // the chunk has no upvalues
		}
		k := key{p, i}
		if v, ok := memo[k]; ok {
			return v
		}
		memo[k] = true // a cycle cannot happen; assume the worst if it did
		v := true
		for pc := 0; pc < len(parent.Code); pc++ {
			in := parent.Code[pc]
			if opCode(in) != lua.OP_CLOSURE || opBx(in) >= len(parent.FunctionPrototypes) ||
				parent.FunctionPrototypes[opBx(in)] != p {
				continue
			}
			if pc+1+i >= len(parent.Code) {
				break
			}
			capture := parent.Code[pc+1+i]
			switch opCode(capture) {
			case lua.OP_MOVE:
				v = false
			case lua.OP_GETUPVAL:
				v = kept(parent, parents[parent], opB(capture))
			}
			break
		}
		memo[k] = v
		return v
	}
	var walk func(p *lua.FunctionProto) bool
	walk = func(p *lua.FunctionProto) bool {
		for _, child := range p.FunctionPrototypes {
			parents[child] = p
		}
		for _, child := range p.FunctionPrototypes {
			for _, in := range child.Code {
				if opCode(in) == lua.OP_SETUPVAL && kept(child, p, opB(in)) {
					return true
				}
			}
			if walk(child) {
				return true
			}
		}
		return false
	}
	return walk(top)
}

// freshFunction runs lib's chunk again into a copy of its own and returns
// the copy's function fname, for one call of a stateful library.
func (e *Engine) freshFunction(lib *Library, fname string) (*libFunction, resp.Reply) {
	fresh := &Library{Name: lib.Name, fns: make(map[string]*libFunction, len(lib.fns)), gen: e.gen}
	if r := e.runLibrary(lib, fresh); r.IsError() {
		return nil, r
	}
	e.sb.bindLibrary(e.L, fresh)
	f := fresh.fns[fname]
	if f == nil {
		return nil, resp.Err("ERR Function not found")
	}
	return f, resp.NilReply
}
