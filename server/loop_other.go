//go:build !linux

package server

import (
	"errors"
	"net"

	"github.com/deadbolt/deadbolt/fsm"
)

// eventLoop does not exist without epoll: every connection has a
// goroutine of its own.
type eventLoop struct{}

var errNoLoop = errors.New("server: no event loop on this platform")

func newEventLoop(*Server) (*eventLoop, error) { return nil, errNoLoop }
func (*eventLoop) run()                        {}
func (*eventLoop) post(loopTask)               {}
func detach(net.Conn) (int, error)             { return -1, errNoLoop }
func (*conn) applyAsync(fsm.Command)           {}
func (*conn) readAsync(fsm.Command)            {}
func (*conn) readerAsync() bool                { return false }

// tlsToLoop: without a loop, TLS connections keep their goroutines.
func (*Server) tlsToLoop(*conn) bool { return false }
