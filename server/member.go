package server

import (
	"net"

	"github.com/deadbolt/deadbolt/resp"
)

// Connections from the other members of a cluster.
//
// A cluster node sends the others the commands that only members may send
// (DEADBOLT.FORWARD, DEADBOLT.APPLIED, RAFT REMOVED, and WAIT on behalf of
// a client) on connections it opens to their Raft address, which
// authenticate it as a member (cluster/demux.go, transport.PeerAuth)
// before the cluster hands them here. Such a connection is a member's: it
// needs no AUTH, whatever the client password is, so a password changed
// on one node, or a node restarted after the change, strands no member.

// msgMembersOnly refuses a members' command on a client connection of a
// node whose members authenticate each other.
const msgMembersOnly = "ERR only cluster members may send this, on the Raft address (this node's members authenticate each other: cluster secret or TLS)"

// ServeMember serves a connection from another member of the cluster,
// already authenticated by the cluster's transport, on a goroutine of its
// own (the event loop serves client sockets only).
func (s *Server) ServeMember(nc net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	c := newConn(s, nc, s.nextID.Add(1), nil, -1)
	c.member = true
	c.rd.SkipAbove = 0 // a member's forwarded envelope is checked by the backend
	c.setAuthed(true)
	s.conns[c.id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	go s.serveConn(c)
}

// membersOnly refuses a command that only members may send when it comes
// from a client connection and the members authenticate each other; it
// reports whether it refused. Without member authentication
// (--insecure-cluster), the client port accepts them as before, so that
// nodes of an older version can still forward.
func (c *conn) membersOnly() bool {
	if c.member || !c.srv.cfg.MembersOnly {
		return false
	}
	c.reply(resp.Err(msgMembersOnly))
	return true
}
