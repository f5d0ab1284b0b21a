package luaexec

import lua "github.com/yuin/gopher-lua"

func (sb *sandbox) openCmsgpack(L *lua.LState) *lua.LTable { return L.NewTable() }
