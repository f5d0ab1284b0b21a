package server

import (
	"io"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	registerConn(
		connSpec{name: "shutdown", arity: -1, flags: connAdmin | noMulti, fn: cmdShutdown},
	)
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], with Redis 7.0's argument
// rules and replies. What stops the node is the program's: Config.Shutdown.
//
// The modifiers change nothing here. SAVE and NOSAVE: the data is in the
// Raft log and its snapshots (or, on an in-memory node, nowhere), written
// as each command commits, so there is nothing to save on the way out.
// NOW and FORCE: the only step before stopping is a leader's hand-over,
// which the program does whatever was asked (it waits at most an election
// timeout, and a node stops even if it fails). ABORT: once accepted, a
// shutdown is under way and cannot be called back, so ABORT finds none in
// progress, as Redis answers when there is none.
const (
	msgSyntaxError      = "ERR syntax error"
	msgNoShutdown       = "ERR No shutdown in progress."
	msgShutdownEmbedded = "ERR SHUTDOWN is disabled on an embedded deadbolt node: the program that runs it stops it (its Config.Shutdown enables the command)"
)

// shutdownArgs parses SHUTDOWN's modifiers as Redis 7.0's shutdownCommand
// does: any word but the five is a syntax error, and so are ABORT with
// another modifier and SAVE with NOSAVE. Repeating one is allowed.
func shutdownArgs(args [][]byte) (abort bool, errMsg string) {
	var save, nosave, other bool
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave":
			nosave = true
		case "save":
			save = true
		case "now", "force":
			other = true
		case "abort":
			abort = true
		default:
			return false, msgSyntaxError
		}
	}
	if abort && (save || nosave || other) || save && nosave {
		return false, msgSyntaxError
	}
	return abort, ""
}

// cmdShutdown asks the program to stop the node (Config.Shutdown, called
// once however many clients ask). The client gets no reply, as from a
// Redis that exits: it is served nothing more, gets no published message,
// and its connection closes when the server does (after a leader's
// hand-over, in deadbolt's binary). The replies to its requests before
// SHUTDOWN are written. (Redis loses those still in its output buffer
// when it exits, which depends on how the requests were split into reads:
// not something a client can rely on. Here it is the same in every mode.)
func cmdShutdown(c *conn, args [][]byte) {
	abort, msg := shutdownArgs(args)
	switch {
	case msg != "":
		c.reply(resp.Err(msg))
		return
	case abort:
		c.reply(resp.Err(msgNoShutdown))
		return
	case c.srv.cfg.Shutdown == nil:
		c.reply(resp.Err(msgShutdownEmbedded))
		return
	}
	c.srv.cfg.Logger.Warn("server: SHUTDOWN from a client: stopping", "client", c.id, "addr", c.addr)
	c.halted = true
	c.mu.Lock()
	c.dead = true // published messages are dropped
	c.mu.Unlock()
	if c.srv.adm.shutdownAsked.CompareAndSwap(false, true) {
		c.srv.cfg.Shutdown()
	}
}

// waitClosed serves a connection that SHUTDOWN halted, on its own
// goroutine: it writes what was queued before, then reads and drops
// whatever the client sends until the server closes the connection (or
// the client does).
func (c *conn) waitClosed() {
	if c.flush() != nil {
		return
	}
	io.Copy(io.Discard, c.nc)
}
