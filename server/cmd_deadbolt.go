package server

import (
	"context"
	"strings"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// DEADBOLT is deadbolt's own command family. DEADBOLT LOCKS lists the
// keys shaped as the locks of the clients deadbolt serves (fsm/locks.go):
// a read through the backend's read path (forwarded to the leader and
// read-indexed in a cluster, like GET), to which this node adds the
// waiters it sees subscribed.
func init() {
	registerConn(connSpec{name: "deadbolt", arity: -2, flags: mayBlock, fn: cmdDeadbolt})
}

var deadboltHelp = []string{
	"LOCKS [MATCH <pattern>] [KIND <kind>] [COUNT <count>]",
	"    List the locks held, in (db, name) order: name, kind, db, holders (id, count),",
	"    held-since-ms, lease-ms, channels, waiters and queue (fair locks).",
	"    Kinds: " + strings.Join(fsm.LockKindNames(), ", ") + ". COUNT defaults to 100.",
}

func cmdDeadbolt(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "help":
		c.reply(helpReply("DEADBOLT", deadboltHelp))
	case "locks":
		c.reply(deadboltLocks(c, args[2:]))
	}
}

// deadboltLocks reads the locks through the backend and replaces each
// lock's channels with the number of this node's subscribers to them.
func deadboltLocks(c *conn, opts [][]byte) resp.Reply {
	cmd := fsm.Command{DB: c.db, Args: append([][]byte{[]byte(fsm.LocksCommand)}, opts...)}
	res, err := c.srv.backend.Read(context.Background(), cmd)
	if err != nil {
		return resp.Err(errorText(err))
	}
	r := res.Reply
	if r.Type != resp.Array {
		return r // an error reply
	}
	for i := range r.Elems {
		r.Elems[i] = withWaiters(c.srv.hub, r.Elems[i])
	}
	return r
}

// withWaiters adds "waiters" to a lock's map after "channels": how many
// of this node's clients subscribe (SUBSCRIBE or SSUBSCRIBE) to its
// channels, or -1 for a kind whose clients poll (no channel). Waiters
// subscribed on other nodes are not counted.
func withWaiters(h *Hub, lock resp.Reply) resp.Reply {
	kv := lock.Elems
	out := make([]resp.Reply, 0, len(kv)+2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kv[i], kv[i+1])
		if string(kv[i].Str) != "channels" {
			continue
		}
		n := int64(-1)
		if len(kv[i+1].Elems) > 0 {
			n = 0
			for _, ch := range kv[i+1].Elems {
				n += int64(h.numSub(subChannel, string(ch.Str)) + h.numSub(subShard, string(ch.Str)))
			}
		}
		out = append(out, resp.BulkString("waiters"), resp.IntReply(n))
	}
	lock.Elems = out
	return lock
}
