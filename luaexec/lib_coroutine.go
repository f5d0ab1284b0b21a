package luaexec

import (
	lua "github.com/yuin/gopher-lua"
)

// The coroutine library, on gopher-lua's threads. Creating a coroutine is
// charged heavily (each one is a whole Lua thread), and errors that must
// stop the script (work budget) pass through resume.

const costCoroutine = 20000

func (sb *sandbox) openCoroutine(L *lua.LState) *lua.LTable {
	e := sb.e
	lua.OpenCoroutine(L)
	gl := L.Get(-1).(*lua.LTable)
	L.Pop(1)
	return sb.newLib(L, 6,
		fnEntry("create", e.coCreate),
		fnEntry("resume", e.coResume),
		valEntry("running", gl.RawGetString("running")),
		fnEntry("status", coStatus),
		fnEntry("wrap", e.coWrap),
		valEntry("yield", gl.RawGetString("yield")),
	)
}

func (e *Engine) newCoroutine(L *lua.LState) *lua.LState {
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok || fn.IsG {
		argError(L, 1, "Lua function expected")
	}
	e.charge(L, costCoroutine)
	saved := L.Options
	L.Options.RegistrySize = 256
	L.Options.RegistryMaxSize = 1024 * 64
	L.Options.MinimizeStackMemory = true
	th, _ := L.NewThread()
	L.Options = saved
	th.Env = e.sb.env
	return th
}

type coroutineState struct {
	fn      *lua.LFunction
	started bool
}

func (e *Engine) coCreate(L *lua.LState) int {
	th := e.newCoroutine(L)
	e.sb.coroutines[th] = &coroutineState{fn: L.Get(1).(*lua.LFunction)}
	L.Push(th)
	return 1
}

func coStatus(L *lua.LState) int {
	th, ok := L.Get(1).(*lua.LState)
	if !ok {
		argError(L, 1, "coroutine expected")
	}
	L.Push(lua.LString(L.Status(th)))
	return 1
}

// resume runs a coroutine; it returns its results or an error value.
func (e *Engine) resume(L *lua.LState, th *lua.LState, args []lua.LValue) ([]lua.LValue, lua.LValue, bool) {
	st := e.sb.coroutines[th]
	status := L.Status(th)
	if st == nil || status != "suspended" {
		if status == "" {
			status = "dead"
		}
		return nil, lua.LString("cannot resume " + status + " coroutine"), false
	}
	if e.run.cdepth+1 >= maxCCalls {
		return nil, lua.LString("C stack overflow"), false
	}
	fn := st.fn
	if st.started {
		fn = nil
	}
	st.started = true
	e.run.cdepth++
	state, err, values := L.Resume(th, fn, args...)
	e.run.cdepth--
	e.checkFatal(L)
	if state == lua.ResumeError {
		if err != nil {
			obj := errorObject(err)
			e.chargeCaught(L, obj)
			return nil, obj, false
		}
		return nil, lua.LNil, false
	}
	return values, nil, true
}

func (e *Engine) coResume(L *lua.LState) int {
	th, ok := L.Get(1).(*lua.LState)
	if !ok {
		argError(L, 1, "coroutine expected")
	}
	args := make([]lua.LValue, 0, L.GetTop()-1)
	for i := 2; i <= L.GetTop(); i++ {
		args = append(args, L.Get(i))
	}
	values, errv, ok := e.resume(L, th, args)
	if !ok {
		L.Push(lua.LFalse)
		L.Push(errv)
		return 2
	}
	L.Push(lua.LTrue)
	for _, v := range values {
		L.Push(v)
	}
	return 1 + len(values)
}

func (e *Engine) coWrap(L *lua.LState) int {
	th := e.newCoroutine(L)
	e.sb.coroutines[th] = &coroutineState{fn: L.Get(1).(*lua.LFunction)}
	L.Push(L.NewClosure(func(L *lua.LState) int {
		args := make([]lua.LValue, 0, L.GetTop())
		for i := 1; i <= L.GetTop(); i++ {
			args = append(args, L.Get(i))
		}
		values, errv, ok := e.resume(L, th, args)
		if !ok {
			if isStrNum(errv) {
				errv = lua.LString(where(L, 1) + e.tostring(L, errv))
			}
			L.Error(errv, 0)
		}
		for _, v := range values {
			L.Push(v)
		}
		return len(values)
	}, th)) // the thread as an upvalue shows the closure keeps state (function_state.go)
	return 1
}
