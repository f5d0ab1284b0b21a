package cluster

import (
	"context"
	"strconv"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// StatusCommand is the command a member sends another to learn its Raft
// state for the status page (httpapi): StatusReply's answer.
const StatusCommand = "deadbolt.status"

// MemberStatus is one member's Raft state as it reported it.
type MemberStatus struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Term        uint64 `json:"term"`
	LastIndex   uint64 `json:"last_index"`
	CommitIndex uint64 `json:"commit_index"`
	Applied     uint64 `json:"applied_index"`
	Leader      string `json:"leader"`
	// LastContactMs is, on a follower, how long ago it heard from the
	// leader (-1: never; 0 on the leader).
	LastContactMs int64 `json:"last_contact_ms"`
}

// Status is this node's MemberStatus.
func (n *Node) Status() MemberStatus {
	_, leader := n.raft.LeaderWithID()
	st := MemberStatus{ID: n.cfg.ID, State: n.raft.State().String(), Term: n.raft.CurrentTerm(),
		LastIndex: n.raft.LastIndex(), CommitIndex: n.raft.CommitIndex(), Applied: n.raft.AppliedIndex(),
		Leader: string(leader), LastContactMs: -1}
	if st.State == "Leader" {
		st.LastContactMs = 0
	} else if lc := n.raft.LastContact(); !lc.IsZero() {
		st.LastContactMs = time.Since(lc).Milliseconds()
	}
	return st
}

// SyncedMark is the highest log index this node's log store has held
// synced, as recorded in its stable store (raftlog's synced mark); 0 when
// the log is not in a raftlog store (in memory, or the bolt and WAL stores
// of old builds' data dirs).
func (n *Node) SyncedMark() uint64 {
	if n.logStore == nil {
		return 0
	}
	return n.logStore.SyncedMarkRecorded()
}

// StatusReply is the answer to StatusCommand: Status as field, value
// pairs.
func (n *Node) StatusReply() resp.Reply {
	st := n.Status()
	u := func(v uint64) resp.Reply { return resp.BulkString(strconv.FormatUint(v, 10)) }
	return resp.ArrayReply(
		resp.BulkString("id"), resp.BulkString(st.ID),
		resp.BulkString("state"), resp.BulkString(st.State),
		resp.BulkString("term"), u(st.Term),
		resp.BulkString("last-index"), u(st.LastIndex),
		resp.BulkString("commit-index"), u(st.CommitIndex),
		resp.BulkString("applied-index"), u(st.Applied),
		resp.BulkString("leader"), resp.BulkString(st.Leader),
		resp.BulkString("last-contact-ms"), resp.BulkString(strconv.FormatInt(st.LastContactMs, 10)),
	)
}

// parseStatus reads a StatusReply.
func parseStatus(r resp.Reply) (MemberStatus, bool) {
	var st MemberStatus
	if r.Type != resp.Array && r.Type != resp.Map {
		return st, false
	}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		v := string(r.Elems[i+1].Str)
		u, _ := strconv.ParseUint(v, 10, 64)
		switch string(r.Elems[i].Str) {
		case "id":
			st.ID = v
		case "state":
			st.State = v
		case "term":
			st.Term = u
		case "last-index":
			st.LastIndex = u
		case "commit-index":
			st.CommitIndex = u
		case "applied-index":
			st.Applied = u
		case "leader":
			st.Leader = v
		case "last-contact-ms":
			st.LastContactMs, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return st, st.ID != ""
}

// PeerStatuses asks every other member for its status, each within
// timeout; a member that does not answer is left out.
func (n *Node) PeerStatuses(ctx context.Context, timeout time.Duration) []MemberStatus {
	replies, _ := n.AskOthers(ctx, [][]byte{[]byte(StatusCommand)}, timeout)
	var out []MemberStatus
	for _, r := range replies {
		if st, ok := parseStatus(r); ok {
			out = append(out, st)
		}
	}
	return out
}
