package server

import "github.com/deadbolt/deadbolt/cluster"

// INFO raft is deadbolt's own section, shown like a Redis module's: asked
// for by name or by INFO everything, never in INFO, INFO default or INFO
// all, so that those keep Redis's sections.
const infoRaftSection = "raft"

func (s *Server) infoRaft() []string {
	rn, ok := s.backend.(*cluster.Node)
	if !ok {
		return kv("raft_enabled", 0)
	}
	st := rn.Status()
	return kv(
		"raft_enabled", 1,
		"raft_id", st.ID,
		"raft_state", st.State,
		"raft_term", st.Term,
		"raft_leader_id", st.Leader,
		"raft_last_index", st.LastIndex,
		"raft_commit_index", st.CommitIndex,
		"raft_applied_index", st.Applied,
		"raft_synced_mark", rn.SyncedMark(),
		"raft_last_contact_ms", st.LastContactMs,
		"raft_leader_changes", rn.LeaderChanges(),
		"raft_leader_gone_elections", rn.LeaderGoneElections(),
	)
}
