package luaexec

import lua "github.com/yuin/gopher-lua"

type cjsonState struct{}

func (sb *sandbox) openCjson(L *lua.LState) *lua.LTable {
	sb.cjsonNull = L.NewUserData()
	t := L.NewTable()
	t.RawSetString("null", sb.cjsonNull)
	return t
}
func (sb *sandbox) openCmsgpack(L *lua.LState) *lua.LTable { return L.NewTable() }
func openBit(L *lua.LState) *lua.LTable                     { return L.NewTable() }
func openStruct(L *lua.LState) *lua.LTable                  { return L.NewTable() }
