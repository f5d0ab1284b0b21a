package cluster

import "github.com/hashicorp/raft"

// capCommit lowers an AppendEntries request's commit index to the index of
// its last entry, or to its PrevLogEntry when it carries none: the Raft
// paper's rule, "commitIndex = min(leaderCommit, index of last new entry)".
// hashicorp/raft's follower takes min(leaderCommit, its own last index)
// instead. A follower whose log still holds a suffix of a deposed leader's
// never-committed entries, past the entries a request carried that all
// matched its log, would then commit and apply that stale suffix: the
// request must only start below where the logs diverge (the leader walks
// its next index down on every refused append, a disk-full follower's
// included) and end before it (cut by MaxAppendEntries or trimAppend).
// With the cap a follower commits only entries this leader has sent it,
// and learns the rest of the commit index from the requests that carry
// them. Heartbeats carry no commit index and are not touched.
func capCommit(req *raft.AppendEntriesRequest) {
	last := req.PrevLogEntry
	if n := len(req.Entries); n > 0 {
		last = req.Entries[n-1].Index
	}
	if req.LeaderCommitIndex > last {
		req.LeaderCommitIndex = last
	}
}
