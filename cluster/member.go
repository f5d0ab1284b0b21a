package cluster

import (
	"context"
	"net"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// The commands only members send each other — DEADBOLT.FORWARD from a
// follower to the leader, WAIT on behalf of a follower's client,
// DEADBOLT.APPLIED from the leader to the followers, RAFT REMOVED to a
// removed node — travel on connections to the other node's Raft address,
// told apart from raft's by their first byte (memberMagic) and
// authenticated as raft's are (transport.PeerAuth). The receiving node
// hands them to its server (SetMemberServer), which serves them as a
// member's: no client password is involved, so a password changed on one
// node, or a node restarted after the change, strands no member, and a
// client of the RESP port cannot pass for a member. RAFT JOIN is sent by a
// node that is not a member yet, to the client address an operator gives
// it (--join), and keeps the client password; with --tls-cluster that
// connection is TLS too (Config.JoinConn), to a TLS client address.

// SetMemberServer sets what serves the members' connections (the
// server's ServeMember); until then they are closed.
func (n *Node) SetMemberServer(serve func(net.Conn)) { n.memberServe.Store(&serve) }

func (n *Node) serveMember(c net.Conn) {
	if f := n.memberServe.Load(); f != nil {
		(*f)(c)
		return
	}
	c.Close()
}

// leaderRaftAddr returns the current leader's Raft address, if it is
// known and is not this node.
func (n *Node) leaderRaftAddr() (string, bool) {
	addr, id := n.raft.LeaderWithID()
	if id == "" || string(id) == n.cfg.ID || addr == "" {
		return "", false
	}
	return string(addr), true
}

// memberRoundTrip sends one command to the member at raftAddr.
func (n *Node) memberRoundTrip(ctx context.Context, raftAddr string, args [][]byte) (resp.Reply, error) {
	return n.member.roundTrip(ctx, raftAddr, args)
}

// ToLeader sends an administrative command (RAFT JOIN, REMOVE, TRANSFER)
// to the leader as a member, and returns the leader's reply: an operator
// may send it to any node.
func (n *Node) ToLeader(ctx context.Context, args [][]byte) (resp.Reply, error) {
	addr, ok := n.leaderRaftAddr()
	if !ok {
		return resp.Reply{}, ErrNoLeader
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CommandTimeout)
	defer cancel()
	return n.memberRoundTrip(ctx, addr, args)
}

// AskOthers sends one command to every other member, as a member, at
// once, and returns the replies of those that answered within timeout
// (an error reply counts as no answer) and how many did not answer.
// DEADBOLT LOCKS asks them how many waiters they have (PUBSUB NUMSUB).
func (n *Node) AskOthers(ctx context.Context, args [][]byte, timeout time.Duration) (replies []resp.Reply, unanswered int) {
	members, err := n.Members()
	if err != nil {
		return nil, 0
	}
	ch := make(chan *resp.Reply, len(members))
	asked := 0
	for _, m := range members {
		if m.ID == n.cfg.ID {
			continue
		}
		asked++
		if m.RaftAddr == "" {
			ch <- nil
			continue
		}
		go func(addr string) {
			qctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			r, err := n.memberRoundTrip(qctx, addr, args)
			if err != nil || r.IsError() {
				ch <- nil
				return
			}
			ch <- &r
		}(m.RaftAddr)
	}
	for i := 0; i < asked; i++ {
		if r := <-ch; r != nil {
			replies = append(replies, *r)
		} else {
			unanswered++
		}
	}
	return replies, unanswered
}
