package luaexec

import "sync/atomic"

// missStateForTest: MissStateForTest.
var missStateForTest atomic.Bool

// MissStateForTest makes libraries loaded until restore is called keep
// every function's closures, as if the check of function_state.go had
// found none that keeps state: a test of a caller that must not depend
// on that check (fsm runs FCALL outside the log through
// CallFunctionApart) loads a stateful function with it and sees whether
// the kept closures changed. Not for use outside tests.
func MissStateForTest() (restore func()) {
	missStateForTest.Store(true)
	return func() { missStateForTest.Store(false) }
}
