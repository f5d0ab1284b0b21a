package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
)

// hostilePeer speaks raft's own RPCs to every node's Raft address from a
// process that is no member (this harness, with raft's transport): an
// AppendEntries of a far higher term carrying a write, and a RequestVote
// of a far higher term. The nodes hold a cluster secret, so each RPC must
// fail before a node reads it; it returns what was answered, if anything.
func hostilePeer(nodes []*node) (answered []string, err error) {
	t, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("hostile-peer"), Addr: []byte(t.LocalAddr())}
	const term = 1 << 40
	write := cluster.AppendEntry(nil, cluster.Entry{Time: 1, Cmd: fsm.Command{Args: [][]byte{[]byte("SET"), []byte("hostile"), []byte("peer")}}})
	for _, n := range nodes {
		ae := &raft.AppendEntriesRequest{RPCHeader: hdr, Term: term,
			Entries:           []*raft.Log{{Index: 1 << 40, Term: term, Type: raft.LogCommand, Data: write}},
			LeaderCommitIndex: 1 << 40}
		var aer raft.AppendEntriesResponse
		if e := t.AppendEntries(raft.ServerID(n.id), raft.ServerAddress(n.raft), ae, &aer); e == nil {
			answered = append(answered, fmt.Sprintf("%s answered AppendEntries (term %d, success %v)", n.id, aer.Term, aer.Success))
		}
		rv := &raft.RequestVoteRequest{RPCHeader: hdr, Term: term, LastLogIndex: 1 << 40, LastLogTerm: term}
		var rvr raft.RequestVoteResponse
		if e := t.RequestVote(raft.ServerID(n.id), raft.ServerAddress(n.raft), rv, &rvr); e == nil {
			answered = append(answered, fmt.Sprintf("%s answered RequestVote (term %d, granted %v)", n.id, rvr.Term, rvr.Granted))
		}
	}
	return answered, nil
}

func hostileDetail(answered []string) string {
	if len(answered) == 0 {
		return "no node answered"
	}
	return strings.Join(answered, "; ")
}
