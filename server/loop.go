package server

import "sync/atomic"

// The event loop's types that the rest of the server names; the loop
// itself is in loop_linux.go.

type taskKind uint8

const (
	taskAdd    taskKind = iota // register a new connection
	taskWrite                  // write queued output (pub/sub)
	taskResume                 // a busy command finished
	taskKill                   // close the connection
	taskStop                   // the server is closing: close everything, exit
	taskCall                   // run fn on the loop (tests inspect its state)
)

type loopTask struct {
	kind taskKind
	c    *conn
	fn   func()
}

// loopConn is a connection's event loop state.
type loopConn struct {
	lp      *eventLoop
	fd      int    // the socket; never changes, closed once
	wbuf    []byte // output taken from out, not yet accepted by the socket
	woff    int    // how much of wbuf has been written
	busy    bool   // a mayBlock command runs on its own goroutine
	dirty   bool   // in lp.dirty
	wantOut bool   // the socket was full: waiting for EPOLLOUT
	// throttled: more than maxPendingOutput unwritten, requests wait.
	throttled bool
	eof       bool   // the client shut down its sending side
	events    uint32 // the epoll interest registered now
	closed    bool
	unsent    atomic.Int64 // len(wbuf)-woff, for CLIENT LIST's omem
}
