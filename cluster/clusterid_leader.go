package cluster

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// How a leader settles the cluster's id (ensureClusterID). The state's id
// is the authority once one is committed. A leader whose state holds none
// (a new cluster; one an older build made; a state restored from a
// snapshot written with --preserve-downgrade, at version 2, which leaves
// the id out) must not make a second id while any member knows one: it
// takes the id its own data directory and its voters' hellos name (each
// voter answers this node's dial with its id, clusterHello.seen). If they
// name different ids it proposes nothing and says so. It makes a new id
// only once a quorum of voters, itself included, said they know none: at
// once when every voter did, or after clusterIDMintWait when only a
// quorum did (a minority that is down may know one; it is then refused,
// and says so, when it comes back).

var (
	clusterIDRetry    = 100 * time.Millisecond
	clusterIDMintWait = 3 * time.Second
	clusterIDLogEvery = 10 * time.Second
)

// ensureClusterID runs on a leader once it is ready, for its term: it
// proposes the cluster's id (again, where the state holds it: the first
// applied wins, so that changes nothing, and gives the id back to a state
// that lost it). Not with --preserve-downgrade: members on an older build
// may be in the cluster, which would not keep it, so a cluster being
// upgraded gets its id once the flag is dropped, when every member runs
// this build.
func (n *Node) ensureClusterID(term uint64) {
	if n.cfg.PreserveDowngrade {
		return
	}
	start := time.Now()
	var logged time.Time
	for {
		if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
			return
		}
		id, err := n.chooseClusterID(time.Since(start) >= clusterIDMintWait)
		if id != "" {
			n.proposeInternal(fsm.ClusterIDCommand(id))
			return
		}
		if err != nil && time.Since(logged) >= clusterIDLogEvery {
			logged = time.Now()
			n.cfg.Logger.Error("cluster: the members name different cluster ids, and the state holds none: proposing none; every member's data directory should belong to one cluster (move the other cluster's directories away, give those nodes empty ones and add them with --join)",
				"id", n.cfg.ID, "dir", n.cfg.DataDir, "err", err)
		}
		select {
		case <-n.stop:
			return
		case <-time.After(clusterIDRetry):
		}
	}
}

// chooseClusterID is the id a leader proposes: the state's; else the one
// id this node's data directory and its voters know; else, if a quorum
// of voters (all of them unless waited) said they know none, a new one.
// "" with a nil error: not yet (voters not heard from). "" with an error:
// the voters name different ids.
func (n *Node) chooseClusterID(waited bool) (string, error) {
	n.fsm.mu.Lock()
	id := n.state.ClusterID()
	n.fsm.mu.Unlock()
	if id != "" {
		return id, nil
	}
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return "", nil
	}
	var seen map[string]string
	if n.hello != nil {
		seen = n.hello.seen()
	}
	known := map[string][]string{}
	voters, none := 0, 0
	if own := n.ClusterID(); own != "" { // the data directory's
		known[own] = append(known[own], n.cfg.ID)
	}
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		var theirs string
		if string(s.ID) == n.cfg.ID {
			theirs = n.ClusterID()
		} else {
			var ok bool
			if theirs, ok = seen[string(s.Address)]; !ok {
				continue // not heard from
			}
		}
		if theirs == "" {
			none++
		} else if string(s.ID) != n.cfg.ID {
			known[theirs] = append(known[theirs], string(s.ID))
		}
	}
	switch {
	case len(known) == 1:
		for id := range known {
			return id, nil
		}
	case len(known) > 1:
		var parts []string
		for id, who := range known {
			parts = append(parts, id+" ("+strings.Join(who, ",")+")")
		}
		sort.Strings(parts)
		return "", errors.New("cluster ids " + strings.Join(parts, ", "))
	}
	if voters > 0 && (none == voters || (waited && none >= voters/2+1)) {
		return newClusterID(), nil
	}
	return "", nil
}
