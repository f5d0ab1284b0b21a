package server

import (
	"context"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/resp"
)

// Commands between cluster nodes.
func init() {
	registerConn(
		connSpec{name: cluster.ForwardCommand, arity: 3, flags: connAdmin, fn: cmdForward},
	)
}

// cmdForward runs a command a follower forwarded to this node (the
// leader), locally: a forwarded command is never forwarded again.
func cmdForward(c *conn, args [][]byte) {
	t, ok := c.srv.backend.(cluster.ForwardTarget)
	if !ok {
		c.reply(resp.Err("ERR this node is not part of a cluster"))
		return
	}
	c.reply(cluster.ServeForward(context.Background(), t, args[1], args[2]))
}
