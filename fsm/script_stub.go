package fsm

// scriptRun is the state of a script being run; filled in with the
// scripting commands.
type scriptRun struct{}
