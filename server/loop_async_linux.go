//go:build linux

package server

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// The event loop's keyspace commands that do not wait (loop_linux.go): a
// write started with the backend's StartApply, a read with its StartRead,
// or either on a goroutine of its own, and the reply once it is done.

// asyncKeyspace reports whether a request is a keyspace command outside
// MULTI that the event loop starts without waiting: a write, with the
// backend's StartApply, or a read, with its StartRead.
func (c *conn) asyncKeyspace(isConn bool, args [][]byte) bool {
	if isConn || c.multi != nil {
		return false
	}
	spec, ok := fsm.Lookup(args[0])
	if !ok || spec.Flags&fsm.Internal != 0 {
		return false
	}
	return spec.Flags&fsm.Write != 0 || c.lc.lp.reader != nil && spec.Flags&fsm.Read != 0
}

// answeredLocally reports whether a request is answered from the
// connection's own state, without the backend: a command flagged
// connLocal, or inside MULTI anything that is queued or refused rather
// than run (all but the MULTI controls: EXEC, WATCH, ...).
func (c *conn) answeredLocally(cs *connSpec, isConn bool) bool {
	if isConn && cs.flags&connLocal != 0 {
		return true
	}
	return c.multi != nil && (!isConn || cs.flags&multiCtl == 0)
}

// applyAsync starts a write (runKeyspace on an AsyncApplier's loop): the
// connection is busy until its outcome comes back as taskApplied. A
// backend that cannot start it without waiting gets it on a goroutine.
func (c *conn) applyAsync(cmd fsm.Command) {
	if c.joinGroup(cmd) {
		return // answered with its pipeline's group (pipeline.go)
	}
	done := c.lc.applyDone
	if done == nil {
		l := c.lc.lp
		done = func(res fsm.Result, err error) {
			l.post(loopTask{kind: taskApplied, c: c, res: res, err: err})
		}
		c.lc.applyDone = done
	}
	if c.startApply(cmd, done) {
		return
	}
	c.onGoroutine(done, "applying a command", func() (fsm.Result, error) {
		return c.srv.backend.Apply(context.Background(), cmd)
	})
}

// onGoroutine runs a keyspace command that cannot start on the loop on a
// goroutine of its own, and hands done its outcome (errInternal if it
// panicked). The connection is busy meanwhile; the request's arguments
// stay valid, since the reader's arena is reused only for the
// connection's next request.
func (c *conn) onGoroutine(done func(fsm.Result, error), what string, run func() (fsm.Result, error)) {
	l := c.lc.lp
	c.lc.busy, c.lc.pending = true, true
	l.s.wg.Add(1)
	go func() {
		defer l.s.wg.Done()
		res, err := fsm.Result{}, errInternal
		defer func() {
			if p := recover(); p != nil {
				c.srv.cfg.Logger.Error("server: panic "+what,
					"client", c.id, "command", c.lastCmd, "panic", p, "stack", string(debug.Stack()))
			}
			done(res, err)
		}()
		res, err = run()
	}()
}

// readerAsync reports whether c's loop starts reads with StartRead.
func (c *conn) readerAsync() bool { return c.lc.lp != nil && c.lc.lp.reader != nil }

// readAsync starts a read (runKeyspace on an AsyncReader's loop), as
// applyAsync starts a write: its outcome comes back as taskApplied.
func (c *conn) readAsync(cmd fsm.Command) {
	l := c.lc.lp
	spec := c.adm.spec
	done := func(res fsm.Result, err error) {
		t := loopTask{kind: taskApplied, c: c, res: res, err: err}
		if err == nil && bigReply(spec, res) {
			// Encoded here, off the loop: a million keys' KEYS took the
			// loop some 100 ms to encode, every other client waiting.
			t.raw = res.Reply.AppendProto(nil, c.protocol())
			t.res.Reply = resp.Reply{}
		}
		l.post(t)
	}
	c.lc.busy, c.lc.pending = true, true
	ok := false
	func() {
		defer func() {
			if !ok {
				c.lc.busy, c.lc.pending = false, false
			}
		}()
		ok = l.reader.StartRead(cmd, done)
	}()
	if ok {
		return
	}
	c.onGoroutine(done, "reading", func() (fsm.Result, error) {
		return c.srv.backend.Read(context.Background(), cmd)
	})
}

// startApply calls the backend's StartApply; the connection is busy if it
// accepted. (A panic in it leaves the connection as it was, for run's
// recovery to answer.)
func (c *conn) startApply(cmd fsm.Command, done func(fsm.Result, error)) bool {
	c.lc.busy, c.lc.pending = true, true
	ok := false
	defer func() {
		if !ok {
			c.lc.busy, c.lc.pending = false, false
		}
	}()
	ok = c.lc.lp.async.StartApply(cmd, done)
	return ok
}

// applied finishes a write that applyAsync started, with run's recovery.
func (c *conn) applied(res fsm.Result, err error, raw []byte) {
	defer func() { c.endCommand(time.Since(c.lc.started)) }()
	defer c.recoverCommand()
	if raw != nil {
		c.db = res.DB
		c.replyEncoded(raw)
		return
	}
	c.keyspaceReply(c.adm.spec, res, err)
}
