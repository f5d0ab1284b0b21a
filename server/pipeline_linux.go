//go:build linux

package server

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
)

// The event loop's side of pipelined writes (pipeline.go).

// joinGroup adds the write being dispatched to c's group, opening one
// when more requests are buffered, and reports whether it did; the write
// is then answered when the group is (run leaves its end to groupApplied).
func (c *conn) joinGroup(cmd fsm.Command) bool {
	l := c.lc.lp
	if l.grouper == nil || !groupSpec(c.adm.spec) || c.capture != nil || c.adm.quiet() || c.adm.skipNext {
		return false
	}
	if c.lc.group == nil {
		if c.rd.Buffered() == 0 {
			return false // nothing follows: the write goes alone
		}
		if argsBytes(cmd.Args) > c.groupBytes() {
			return false // too big to share an entry: alone, checked as itself
		}
		c.lc.group = &writeGroup{}
	}
	g := c.lc.group
	cmd.Args = copyArgs(cmd.Args)
	g.bytes += argsBytes(cmd.Args)
	g.cmds++
	g.items = append(g.items, groupItem{cmd: cmd, spec: c.adm.spec, name: c.lastCmd, stat: c.adm.stat})
	c.lc.grouped = true // run leaves its end to groupApplied
	return true
}

// sendGroup hands c's group to the backend; c is busy until its outcome
// comes back as taskGroupApplied.
func (l *eventLoop) sendGroup(c *conn) {
	g := c.lc.group
	cmds := make([]fsm.Command, 0, g.cmds)
	for _, it := range g.items {
		if !it.made {
			cmds = append(cmds, it.cmd)
		}
	}
	c.lc.busy = true
	g.sent = time.Now()
	done := func(rs []fsm.Result, err error) {
		l.post(loopTask{kind: taskGroupApplied, c: c, group: rs, err: err})
	}
	if l.grouper.StartApplyGroup(cmds, done) {
		return
	}
	l.s.wg.Add(1)
	go func() {
		defer l.s.wg.Done()
		rs, err := []fsm.Result(nil), errInternal
		defer func() {
			if p := recover(); p != nil {
				c.srv.cfg.Logger.Error("server: panic applying a pipeline",
					"client", c.id, "panic", p, "stack", string(debug.Stack()))
			}
			done(rs, err)
		}()
		rs, err = l.grouper.ApplyGroup(context.Background(), cmds)
	}()
}

// longRead reports whether a request is a long read (KEYS over a large
// database) of a synchronous backend, which would hold the loop.
func (c *conn) longRead(args [][]byte) bool {
	l := c.lc.lp
	return l.long != nil && c.multi == nil && fsm.MayBeLongRead(args) &&
		l.long.LongRead(fsm.Command{DB: c.db, Args: args})
}
