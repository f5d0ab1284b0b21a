package server

import (
	"crypto/tls"
	"sync/atomic"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
)

// The event loop's types that the rest of the server names; the loop
// itself is in loop_linux.go.

type taskKind uint8

const (
	taskAdd          taskKind = iota // register a new connection
	taskWrite                        // write queued output (pub/sub)
	taskResume                       // a busy command finished
	taskKill                         // close the connection
	taskStop                         // the server is closing: close everything, exit
	taskCall                         // run fn on the loop (tests inspect its state)
	taskApplied                      // an asynchronous write's outcome (res, err)
	taskGroupApplied                 // a group of pipelined writes' outcome (group, err)
)

type loopTask struct {
	kind  taskKind
	c     *conn
	fn    func()
	res   fsm.Result
	group []fsm.Result
	err   error
	raw   []byte // taskApplied: the reply, already encoded (a big read's)
}

// loopConn is a connection's event loop state.
type loopConn struct {
	lp   *eventLoop
	fd   int    // the socket; never changes, closed once
	wbuf []byte // output taken from out, not yet accepted by the socket
	woff int    // how much of wbuf has been written
	busy bool   // a command runs on its own goroutine, or waits for its write
	// async: the command being dispatched may start its write with the
	// backend's StartApply; pending: it did, and the connection is busy
	// until taskApplied, which finishes the command begun at started.
	async, pending bool
	started        time.Time
	// applyDone posts a write's outcome to the loop as taskApplied: made
	// once for the connection, not once per command (applyAsync).
	applyDone func(fsm.Result, error)
	// group: pipelined writes gathered, or handed over and not yet
	// answered (pipeline.go); grouped: the command being dispatched
	// joined it; held: the request that ended it, run once it is
	// answered.
	group   *writeGroup
	grouped bool
	held    [][]byte
	dirty   bool // in lp.dirty
	wantOut bool // the socket was full: waiting for EPOLLOUT
	// throttled: more than maxPendingOutput unwritten, requests wait.
	throttled bool
	eof       bool   // the client shut down its sending side
	events    uint32 // the epoll interest registered now
	closed    bool
	unsent    atomic.Int64 // len(wbuf)-woff, for CLIENT LIST's omem

	// A TLS connection's session and the pipe under it (tlspipe.go): the
	// loop decrypts what it reads and encrypts what it writes; wbuf
	// holds ciphertext.
	tls   *tls.Conn
	pipe  *tlsPipe
	plain []byte // the emptied output buffer, given back to out
}
