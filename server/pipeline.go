package server

import (
	"errors"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// Pipelined writes on a cluster's event loop. A write that must wait for
// its commit keeps its connection busy: one command per commit round, so
// a client pipelining a thousand SETs got them at a few thousand per
// second. Instead, while more requests are buffered, the loop gathers a
// connection's run of plain writes into a group and hands the group to
// the backend at once (GroupApplier: one proposal, applied in order in
// one log entry, each command with its own result; cluster/pipeline.go).
// The run ends at the first request that is not such a write (a read,
// MULTI, a script, a connection command: it is held, and runs once the
// group is answered, as it would have after the writes), when nothing
// complete is buffered, or at groupMaxCommands or groupMaxBytes. Replies
// go out in request order: a request of the run refused before it
// reached the backend (arity, ACL, NOAUTH, a protocol error) has its
// reply kept in the group, in its place.

//
// Long reads: a read whose reply is big (KEYS over a large database) has
// it encoded by the goroutine that finished the read, not by the loop
// (bigReply), and on a synchronous backend such a read runs on a
// goroutine of its own (longRead, pipeline_linux.go).

// Group bounds: the proposer's batch bounds, so a group fills one entry.
const (
	groupMaxCommands = 512
	groupMaxBytes    = 256 << 10
)

// writeGroup is a connection's pipelined writes not yet handed over, or
// handed over and not yet answered, and the replies that come between.
type writeGroup struct {
	items []groupItem
	cmds  int // writes among items
	bytes int // their arguments' size
	// sent is when the group was handed over: a write's time, for its
	// statistics and SLOWLOG, is the group's commit from then, not the
	// wait for the pipeline's later requests to be read.
	sent time.Time
}

// groupItem is a write of the group or a reply made without the backend.
type groupItem struct {
	cmd   fsm.Command // a write (args copied), unless made
	spec  *fsm.Spec
	name  string // lastCmd
	stat  *cmdStat
	made  bool       // a reply made at once
	reply resp.Reply // if made
}

// errInternal answers a command whose backend call panicked.
var errInternal = errors.New("internal error")

// groupSpec reports whether a command may join a group: a plain write,
// not a script (which may change the connection's database) nor a
// publish (whose receivers the connection counts).
func groupSpec(spec *fsm.Spec) bool {
	return spec != nil && spec.Flags&(fsm.Write|fsm.Internal|fsm.Scripting|fsm.PubSub) == fsm.Write
}

// groupBytes is how many argument bytes a group may carry: groupMaxBytes,
// and at most half the node's --max-entry-bytes, so that the group's log
// entry (the commands' envelopes, a few bytes more each) stays under the
// limit the backend checks it against (cluster's refuseGroup). A command
// larger than that goes alone, where it is checked as itself.
func (c *conn) groupBytes() int {
	b := groupMaxBytes
	if limit := c.srv.maxEntryBytes(); limit > 0 && limit/2 < int64(b) {
		b = int(limit / 2)
	}
	return b
}

// argsBytes is the size of a command's arguments.
func argsBytes(args [][]byte) int {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n
}

// groupable reports whether a request may join c's open group.
func (c *conn) groupable(args [][]byte) bool {
	g := c.lc.group
	if g == nil || g.cmds >= groupMaxCommands || g.bytes+argsBytes(args) > c.groupBytes() || c.multi != nil {
		return false
	}
	if _, isConn := lookupConn(args[0]); isConn {
		return false
	}
	spec, ok := fsm.Lookup(args[0])
	return ok && groupSpec(spec)
}

// groupReply keeps a reply made while c's group is open, in its place,
// and reports whether it did.
func (c *conn) groupReply(r resp.Reply) bool {
	g := c.lc.group
	if g == nil {
		return false
	}
	g.items = append(g.items, groupItem{made: true, reply: r})
	return true
}

// groupApplied answers c's group, in request order: each write with its
// result (or the group's error), each kept reply as it was made.
func (c *conn) groupApplied(rs []fsm.Result, err error) {
	g := c.lc.group
	c.lc.group = nil
	if err == nil && len(rs) != g.cmds {
		err = errInternal
	}
	i := 0
	for _, it := range g.items {
		if it.made {
			c.mu.Lock()
			c.out = it.reply.AppendProto(c.out, c.proto)
			c.mu.Unlock()
			continue
		}
		var res fsm.Result
		if err == nil {
			res = rs[i]
		}
		i++
		c.lastCmd, c.adm.spec, c.adm.stat, c.adm.args = it.name, it.spec, it.stat, it.cmd.Args
		c.adm.rejected, c.adm.errPrefix, c.adm.skipThis = false, "", false
		func() {
			defer c.recoverCommand()
			c.keyspaceReply(it.spec, res, err)
		}()
		c.endCommand(time.Since(g.sent))
	}
}

// bigReply reports whether a read's reply is large enough to encode off
// the loop (readAsync): an aggregate of many elements, from a read whose
// reply keyspaceReply would send as it is.
func bigReply(spec *fsm.Spec, res fsm.Result) bool {
	switch res.Reply.Type {
	case resp.Array, resp.Set, resp.Map:
	default:
		return false
	}
	return len(res.Reply.Elems) >= 4096 && len(res.Denials) == 0 && spec != nil && spec.Flags&fsm.PubSub == 0
}
