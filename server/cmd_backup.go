package server

import (
	"context"
	"errors"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/resp"
)

// raftBackup answers RAFT BACKUP with the state machine's snapshot as a
// bulk string: a backup (cluster/backup.go) that a new cluster starts
// from with --restore. It is taken on the leader; a follower asks the
// leader, once (a forwarded request is never forwarded again).
func raftBackup(c *conn, rn *cluster.Node, args [][]byte) {
	if !rn.IsLeader() {
		if c.member {
			c.reply(rn.NotLeaderReply())
			return
		}
		r, err := rn.ToLeader(context.Background(), args)
		if err != nil {
			c.reply(rn.NotLeaderReply())
			return
		}
		c.reply(r)
		return
	}
	data, _, err := rn.Backup(context.Background())
	switch {
	case errors.Is(err, cluster.ErrNotLeaderBackup):
		c.reply(rn.NotLeaderReply())
	case err != nil:
		c.reply(resp.Err("ERR " + err.Error()))
	default:
		c.reply(resp.BulkReply(data))
	}
}
