package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/resp"
)

// Commands between cluster nodes, and Raft administration.
func init() {
	registerConn(
		connSpec{name: cluster.ForwardCommand, arity: 3, flags: connAdmin, fn: cmdForward},
		connSpec{name: cluster.AppliedCommand, arity: 1, flags: connAdmin, fn: cmdApplied},
		connSpec{name: cluster.StatusCommand, arity: 1, flags: connAdmin, fn: cmdMemberStatus},
		connSpec{name: "raft", arity: -2, flags: connAdmin, fn: cmdRaft},
	)
}

// cmdForward runs a command a follower forwarded to this node (the
// leader), locally: a forwarded command is never forwarded again.
func cmdForward(c *conn, args [][]byte) {
	if c.membersOnly() {
		return
	}
	t, ok := c.srv.backend.(cluster.ForwardTarget)
	if !ok {
		c.reply(resp.Err(msgNotClustered))
		return
	}
	c.reply(cluster.ServeForward(context.Background(), t, args[1], args[2]))
}

const msgNotClustered = "ERR this node is not part of a Raft cluster"

func cmdApplied(c *conn, _ [][]byte) {
	if c.membersOnly() {
		return
	}
	rn, ok := c.srv.backend.(*cluster.Node)
	if !ok {
		c.reply(resp.Err(msgNotClustered))
		return
	}
	c.reply(resp.BulkString(strconv.FormatUint(rn.AppliedIndex(), 10)))
}

// cmdMemberStatus answers another member's status page (httpapi) with
// this node's Raft state.
func cmdMemberStatus(c *conn, _ [][]byte) {
	if c.membersOnly() {
		return
	}
	rn, ok := c.srv.backend.(*cluster.Node)
	if !ok {
		c.reply(resp.Err(msgNotClustered))
		return
	}
	c.reply(rn.StatusReply())
}

// cmdRaft: RAFT JOIN id raftaddr | REMOVE id | MEMBERS | LEADER | TRANSFER
// | SNAPSHOT | BACKUP (cmd_backup.go). Membership changes run on the leader; a follower answers
// with the leader's address.
func cmdRaft(c *conn, args [][]byte) {
	rn, ok := c.srv.backend.(*cluster.Node)
	if !ok {
		c.reply(resp.Err(msgNotClustered))
		return
	}
	sub := strings.ToLower(string(args[1]))
	leaderOnly := func(fn func() error) {
		if !rn.IsLeader() {
			if c.member {
				// Forwarded once already: never again, so nothing circles.
				c.reply(rn.NotLeaderReply())
				return
			}
			// An operator may ask any node: it goes to the leader.
			r, err := rn.ToLeader(context.Background(), args)
			if err != nil {
				c.reply(rn.NotLeaderReply())
				return
			}
			c.reply(r)
			return
		}
		if err := fn(); err != nil {
			c.reply(resp.Err(errorText(err)))
			return
		}
		c.reply(resp.OK)
	}
	switch {
	case sub == "join" && len(args) == 4:
		leaderOnly(func() error { return rn.AddVoter(string(args[2]), string(args[3])) })
	case sub == "remove" && len(args) == 3:
		leaderOnly(func() error { return rn.RemoveServer(string(args[2])) })
	case sub == "transfer" && len(args) == 2:
		leaderOnly(rn.TransferLeadership)
	case sub == "removed" && len(args) == 3:
		if c.membersOnly() {
			return
		}
		if !rn.MarkRemoved(string(args[2])) {
			c.reply(resp.Err("ERR not this node"))
			return
		}
		c.reply(resp.OK)
	case sub == "backup" && len(args) == 2:
		raftBackup(c, rn, args)
	case sub == "snapshot" && len(args) == 2:
		if err := rn.Snapshot(); err != nil {
			c.reply(resp.Err("ERR " + err.Error()))
			return
		}
		c.reply(resp.OK)
	case sub == "members" && len(args) == 2:
		members, err := rn.Members()
		if err != nil {
			c.reply(resp.Err("ERR " + err.Error()))
			return
		}
		out := make([]resp.Reply, len(members))
		for i, m := range members {
			role := "follower"
			switch {
			case m.Leader:
				role = "leader"
			case !m.Voter:
				role = "nonvoter"
			}
			out[i] = resp.ArrayReply(resp.BulkString(m.ID), resp.BulkString(m.RaftAddr), resp.BulkString(m.RESPAddr), resp.BulkString(role),
				resp.BulkString(m.Health), resp.IntReply(contactMs(m.Contact)))
		}
		c.reply(resp.ArrayReply(out...))
	case sub == "leader" && len(args) == 2:
		id, addr, ok := rn.Leader()
		if !ok {
			c.reply(resp.NilReply)
			return
		}
		c.reply(resp.ArrayReply(resp.BulkString(id), resp.BulkString(addr)))
	default:
		c.reply(resp.Err("ERR unknown RAFT subcommand or wrong number of arguments; try RAFT JOIN id raftaddr | REMOVE id | MEMBERS | LEADER | TRANSFER | SNAPSHOT | BACKUP"))
	}
}

// contactMs is a member's last contact as RAFT MEMBERS shows it, in
// milliseconds; -1 when unknown.
func contactMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}
