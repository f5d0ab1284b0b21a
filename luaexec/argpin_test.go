package luaexec

import (
	"bytes"
	"testing"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// A run with a big argument cuts its strings from a buffer of their own; a
// short key of that run, cached (argCache) and kept for the next run
// (argTable.vals), must not be a slice of that buffer, or it would keep
// the big argument alive as long as the key is reused (found in review:
// 200 FCALLs of a 7-byte key and a 1 MiB value kept 186 MiB).
func TestBigArgumentNotPinnedByShortStrings(t *testing.T) {
	sb := &sandbox{argCache: newArgCache()}
	var at [2]argTable
	big := bytes.Repeat([]byte("x"), 64<<10)
	sb.argStrings(&at, [][]byte{[]byte("lock:1")}, [][]byte{[]byte("30000"), big})
	key := string(at[0].vals[0].(lua.LString))
	lease := string(at[1].vals[0].(lua.LString))
	arg := string(at[1].vals[1].(lua.LString))
	if key != "lock:1" || lease != "30000" || arg != string(big) {
		t.Fatalf("strings %q %q (%d bytes)", key, lease, len(arg))
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(arg))) - uintptr(len("lock:1")+len("30000"))
	hi := uintptr(unsafe.Pointer(unsafe.StringData(arg))) + uintptr(len(arg))
	for _, s := range []string{key, lease} {
		if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); p >= lo && p < hi {
			t.Errorf("%q shares the big argument's buffer", s)
		}
	}
	// A small run still cuts everything from the shared chunk, copying
	// nothing twice.
	sb.argStrings(&at, [][]byte{[]byte("lock:2")}, [][]byte{[]byte("30000"), []byte("v")})
	if got := string(at[0].vals[0].(lua.LString)); got != "lock:2" {
		t.Errorf("key %q", got)
	}
}
