package server

import (
	"context"
	"errors"
	"strings"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// connFlag classifies a command the server answers itself.
type connFlag uint8

const (
	noAuth     connFlag = 1 << iota // allowed before AUTH
	inSubMode                       // allowed in RESP2 subscribed mode
	multiCtl                        // MULTI EXEC DISCARD WATCH UNWATCH: not queued
	connAdmin                       // administrative (CLIENT, CONFIG, ...)
	connPubSub                      // SUBSCRIBE family
	mayBlock                        // may wait (WAIT, DEBUG SLEEP): never run on the event loop
	connLocal                       // answered from the connection's own state: on the event loop even in a cluster
	noMulti                         // refused inside MULTI, not queued (Redis's no_multi: SAVE, SHUTDOWN)
)

type connHandler func(c *conn, args [][]byte)

// connSpec is a command answered by the server without the keyspace:
// connection state, pub/sub, transactions, introspection.
type connSpec struct {
	name  string
	arity int
	flags connFlag
	fn    connHandler
	id    int // dense, in registration order (cmdstats.go)
}

var connCommands = map[string]*connSpec{}

func registerConn(specs ...connSpec) {
	for i := range specs {
		s := specs[i]
		s.name = strings.ToLower(s.name)
		if _, dup := connCommands[s.name]; dup {
			panic("server: command registered twice: " + s.name)
		}
		s.id = len(connCommands)
		connCommands[s.name] = &s
	}
}

func lookupConn(name []byte) (*connSpec, bool) {
	var buf [32]byte
	lower, ok := fsm.LowerName(&buf, name)
	if !ok {
		return nil, false
	}
	s, ok := connCommands[string(lower)]
	return s, ok
}

func arityOK(arity, argc int) bool {
	if arity >= 0 {
		return argc == arity
	}
	return argc >= -arity
}

const (
	msgNoAuth      = "NOAUTH Authentication required."
	msgExecAbort   = "EXECABORT Transaction discarded because of previous errors."
	msgNestedMulti = "ERR MULTI calls can not be nested"
	msgWatchInMult = "ERR WATCH inside MULTI is not allowed"
	msgExecNoMulti = "ERR EXEC without MULTI"
	msgDiscardNoMu = "ERR DISCARD without MULTI"
	msgNoMulti     = "ERR Command not allowed inside a transaction"
)

// oomExempt are the commands Redis lets through in MULTI while over
// maxmemory (EXEC is then refused in the state machine if its transaction
// holds a denyoom command).
var oomExempt = map[string]bool{"exec": true, "discard": true, "quit": true, "reset": true}

// dispatch runs one client request.
func (c *conn) dispatch(args [][]byte) {
	cs, isConn := lookupConn(args[0])
	if isConn && c.multi != nil && cs.name == "waitaof" {
		isConn = false // Redis 7.0 has no WAITAOF: unknown inside MULTI (multi_conn.go)
	}
	var spec *fsm.Spec
	if !isConn || (c.multi != nil && cs.flags&multiCtl == 0) {
		if s, ok := fsm.Lookup(args[0]); ok && s.Flags&fsm.Internal == 0 {
			spec, isConn = s, false
		}
	}
	name := ""
	switch {
	case spec != nil:
		name = spec.Name
	case isConn:
		name = cs.name
	}
	// Containers (CLIENT, CONFIG, ...) are known by their subcommand:
	// "client|list", as Redis reports it.
	c.lastCmd = fullName(name, args)
	c.adm.spec = spec
	c.countAs(spec, cs, isConn, args) // statistics and SLOWLOG (cmdstats.go)

	// Redis 7.0's order: unknown command, arity, authentication, then
	// no_multi.
	if spec == nil && !isConn {
		c.failQueue()
		c.reply(resp.Err(fsm.UnknownCommand(args)))
		return
	}
	arity := 0
	if spec != nil {
		arity = spec.Arity
	} else {
		arity = cs.arity
	}
	if !arityOK(arity, len(args)) {
		c.reject(name, fsm.WrongArity(name))
		return
	}
	if c.multi != nil && isConn && cs.name == "debug" {
		// Refused when queued: protected, or waiting (multi_conn.go).
		c.reject(name, c.debugInMulti())
		return
	}
	if !c.authed && len(args) > 1 && hasSubcommands(name) {
		// Redis finds an unknown subcommand, or a known one's wrong
		// number of arguments, before it asks for authentication.
		d := docs()[name+"|"+strings.ToLower(string(args[1]))]
		if d == nil || len(args[1]) > 64 {
			c.reject(name, "ERR unknown subcommand '"+truncate(string(args[1]), 128)+"'. Try "+strings.ToUpper(string(args[0]))+" HELP.")
			return
		}
		if !arityOK(d.arity, len(args)) {
			c.reject(name, fsm.WrongArity(d.name))
			return
		}
	}
	if !c.authed && (!isConn || cs.flags&noAuth == 0) {
		c.reject(name, msgNoAuth)
		return
	}
	if c.multi != nil && isConn && cs.flags&noMulti != 0 {
		c.reject(name, msgNoMulti)
		return
	}
	if !c.aclAllows(name, args) {
		return
	}
	if c.multi != nil && !oomExempt[name] && c.srv.overMaxmemory() {
		// Redis refuses to queue anything while over maxmemory, and EXEC
		// then aborts. Which node's view decides only answers this
		// client: nothing is applied either way.
		c.reject(name, fsm.OOMError)
		return
	}
	if c.subscribed() && c.protocol() < 3 && (!isConn || cs.flags&inSubMode == 0) {
		c.reject(name, "ERR Can't execute '"+c.lastCmd+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return
	}
	if c.multi != nil && spec != nil && spec.Flags&fsm.Write != 0 {
		if msg := c.srv.queuedWriteRefused(args); msg != "" {
			// Redis refuses a write command under MISCONF before it
			// queues it, and EXEC then aborts.
			c.reject(name, msg)
			return
		}
	}
	if c.multi != nil && (spec != nil || cs.flags&multiCtl == 0) {
		c.queue(spec, cs, name, args) // multi.go
		return
	}
	if isConn {
		cs.fn(c, args)
		return
	}
	c.runKeyspace(spec, args)
}

// reject answers a command refused before it ran. Inside MULTI it makes
// EXEC fail; a refused EXEC itself answers EXECABORT and discards any
// transaction and WATCH, as Redis's execCommandAbort does.
func (c *conn) reject(name, msg string) {
	c.adm.rejected = true
	if name == "exec" {
		c.multi = nil
		c.watches = nil
		c.reply(resp.Err("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR ")))
		return
	}
	c.failQueue()
	c.reply(resp.Err(msg))
}

func (c *conn) failQueue() {
	if c.multi != nil {
		c.multi.dirty = true
	}
}

func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// runKeyspace sends a command to the state machine: writes through Apply
// (the log, in a cluster), reads through Read.
func (c *conn) runKeyspace(spec *fsm.Spec, args [][]byte) {
	cmd := fsm.Command{DB: c.db, Args: args, User: c.scriptUser()}
	var (
		res fsm.Result
		err error
	)
	if spec.Flags&fsm.Write != 0 && !fsm.ReadOnlyCall(args) { // SCRIPT EXISTS: a read
		if c.lc.async {
			c.applyAsync(cmd) // keyspaceReply comes with taskApplied
			return
		}
		res, err = c.srv.backend.Apply(context.Background(), cmd)
	} else {
		// A long read's reply may come encoded, in pieces (fsm.Walk),
		// unless EXEC collects it.
		cmd.Encoded = c.capture == nil && c.multi == nil
		if c.lc.async && c.readerAsync() {
			c.readAsync(cmd) // keyspaceReply comes with taskApplied
			return
		}
		res, err = c.srv.backend.Read(context.Background(), cmd)
	}
	c.keyspaceReply(spec, res, err)
}

// keyspaceReply answers a keyspace command with its outcome.
func (c *conn) keyspaceReply(spec *fsm.Spec, res fsm.Result, err error) {
	if err != nil {
		c.reply(resp.Err(errorText(err)))
		return
	}
	c.db = res.DB
	if len(res.Denials) > 0 {
		c.logScriptDenials(res.Denials)
	}
	if spec.Flags&fsm.PubSub != 0 && !res.Reply.IsError() {
		res.Reply = resp.IntReply(int64(res.Receivers))
	}
	c.reply(res.Reply)
}

// errorText turns a backend error into an error reply's text.
func errorText(err error) string {
	var re ReplyError
	if errors.As(err, &re) {
		return re.RedisError()
	}
	return "ERR " + err.Error()
}
