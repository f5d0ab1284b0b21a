package cluster

import (
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Following this node's place in the Raft configuration (membershipLoop):
// whether it is in it or was removed, the changes it logs and records in
// the timeline, and its client address registered while it is a member.

// membershipLoop keeps outOfConfig current and makes sure this node's
// client address is registered once a leader is known.
func (n *Node) membershipLoop() {
	defer n.wg.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var m membership
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		f := n.raft.GetConfiguration()
		if f.Error() != nil {
			continue
		}
		servers := f.Configuration().Servers
		first := m.known == nil && len(servers) > 0
		if added, removed := m.changes(servers); len(added)+len(removed) > 0 {
			n.cfg.Logger.Info("cluster: membership changed", "id", n.cfg.ID, "added", added, "removed", removed, "members", len(servers))
			n.timeline.noteMembers(added, removed, len(servers), n.raft.CurrentTerm())
		} else if first {
			n.timeline.noteStart(servers, n.raft.CurrentTerm())
		}
		in, out := m.observe(n.cfg.ID, servers)
		n.inConfig.Store(in)
		n.outOfConfig.Store(out)
		if in {
			n.register()
		}
	}
}

// membership follows this node's place in the configurations it sees.
type membership struct {
	seen, removed bool
	known         map[raft.ServerID]bool // the members last seen, nil before the first
}

// changes returns the ids added to and removed from the configuration
// since the last call (none on the first: the start-up log names them).
func (m *membership) changes(servers []raft.Server) (added, removed []string) {
	if len(servers) == 0 {
		return nil, nil
	}
	now := make(map[raft.ServerID]bool, len(servers))
	for _, s := range servers {
		now[s.ID] = true
		if m.known != nil && !m.known[s.ID] {
			added = append(added, string(s.ID))
		}
	}
	for id := range m.known {
		if !now[id] {
			removed = append(removed, string(id))
		}
	}
	slices.Sort(removed)
	m.known = now
	return added, removed
}

// observe takes the newest configuration and says whether this node is in
// it, and whether it counts as removed: out of it after having been in one.
// A joining node is not yet in the configuration it has, so that is not
// removal. Nor is removal final: a node catching up from a snapshot older
// than its removal passes through that removal on its way to being added
// back, and must then serve again.
func (m *membership) observe(id string, servers []raft.Server) (in, removed bool) {
	if len(servers) == 0 {
		return false, m.removed // says nothing
	}
	for _, s := range servers {
		if string(s.ID) == id {
			in = true
		}
	}
	m.seen = m.seen || in
	m.removed = m.seen && !in
	return in, m.removed
}
