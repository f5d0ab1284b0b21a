package luaexec

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A library's environment is released with the library: FUNCTION LOAD
// REPLACE in a loop, FUNCTION DELETE and FLUSH, and loads that fail or are
// never kept leave nothing behind (before, the sandbox kept every
// environment ever made, in a set of read-only tables).
func TestLibraryEnvReleased(t *testing.T) {
	e := newEngine(t, Options{})
	var made, freed atomic.Int64
	load := func(name string, code string, keep bool) {
		t.Helper()
		lib, r := e.LoadLibrary(name, []byte(code))
		if r.IsError() {
			return
		}
		made.Add(1)
		runtime.SetFinalizer(lib.env, func(any) { freed.Add(1) })
		if keep {
			e.Keep(lib)
		}
	}
	const n = 300
	for i := range n {
		// REPLACE: the same name again, kept
		load("lib", fmt.Sprintf("#!lua name=lib\nredis.register_function('f', function() return %d end)", i), true)
		// loaded, never kept (a failed FUNCTION LOAD without REPLACE)
		load("other", fmt.Sprintf("#!lua name=other\nredis.register_function('g', function() return %d end)", i), false)
		// an error during the load
		load("bad", "#!lua name=bad\nerror('no')", false)
	}
	load("gone", "#!lua name=gone\nredis.register_function('h', function() return 1 end)", true)
	e.Drop("gone")
	if got := replyString(e.CallFunction("lib", "f", nil, nil, nopCaller{})); got != fmt.Sprintf(":%d\r\n", n-1) {
		t.Fatalf("FCALL f after %d replacements: %v", n, got)
	}
	// Every environment but the kept library's must become garbage.
	want := made.Load() - 1
	deadline := time.Now().Add(10 * time.Second)
	for freed.Load() < want && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := freed.Load(); got < want {
		t.Fatalf("%d of %d environments of replaced, dropped or unkept libraries released", got, want)
	}
	runtime.KeepAlive(e)
}
