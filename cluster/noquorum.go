package cluster

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A node that has no leader for long (a quorum of voters is down or cut
// off) said only that its writes failed ("no leader"), and raft's own log,
// which names the peers it cannot reach, is not the node's. watchQuorum
// says why, in the node's own log: which voters there are, how many a
// leader needs, and what dialing each one last gave.

// noLeaderWarnEvery is how often the node repeats it while the leader is
// missing; the first comes after three election timeouts without one.
const noLeaderWarnEvery = 30 * time.Second

// dialRecord keeps, for each raft address this node dialed, how the last
// dial ended (demuxStream.Dial: connection, authentication and cluster id).
type dialRecord struct {
	mu   sync.Mutex
	last map[string]dialOutcome
}

type dialOutcome struct {
	at  time.Time
	err error // nil: it connected
}

func (r *dialRecord) note(addr string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = make(map[string]dialOutcome)
	}
	r.last[addr] = dialOutcome{at: time.Now(), err: err}
}

func (r *dialRecord) get(addr string) (dialOutcome, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.last[addr]
	return o, ok
}

// watchQuorum logs a warning while the node knows no leader: after three
// election timeouts without one, then every noLeaderWarnEvery.
func (n *Node) watchQuorum() {
	defer n.wg.Done()
	after := 3 * n.cfg.ElectionTimeout
	tick := time.NewTicker(min(after/4, time.Second))
	defer tick.Stop()
	var since, warned time.Time // since: when the leader went missing
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		if addr, _ := n.raft.LeaderWithID(); addr != "" || n.removed() {
			since, warned = time.Time{}, time.Time{}
			continue
		}
		now := time.Now()
		if since.IsZero() {
			since = now
		}
		if now.Sub(since) < after || !warned.IsZero() && now.Sub(warned) < noLeaderWarnEvery {
			continue
		}
		warned = now
		n.warnNoLeader(now.Sub(since))
	}
}

// warnNoLeader logs the voters and what this node knows of each.
func (n *Node) warnNoLeader(missing time.Duration) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	var voters []raft.Server
	self := false
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, s)
			self = self || string(s.ID) == n.cfg.ID
		}
	}
	if !self {
		return // not a voter (yet): a node waiting to join has nobody to elect
	}
	var peers []string
	for _, s := range voters {
		if string(s.ID) == n.cfg.ID {
			continue
		}
		peers = append(peers, fmt.Sprintf("%s=%s (%s)", s.ID, s.Address, n.dialState(string(s.Address))))
	}
	n.cfg.Logger.Warn(fmt.Sprintf("cluster: no leader for %v: a leader needs the votes of %d of the %d voters; this node is %s in term %d; its peers: %s; check that those members run and that this node can reach their raft addresses",
		missing.Round(time.Second), len(voters)/2+1, len(voters), strings.ToLower(n.raft.State().String()), n.raft.CurrentTerm(), strings.Join(peers, ", ")),
		"id", n.cfg.ID)
}

// dialState says how this node's last dial of addr ended.
func (n *Node) dialState(addr string) string {
	if n.dials == nil {
		return "not dialed"
	}
	o, ok := n.dials.get(addr)
	switch {
	case !ok:
		return "not dialed yet"
	case o.err != nil:
		return fmt.Sprintf("its last dial, %v ago, failed: %v", time.Since(o.at).Round(100*time.Millisecond), o.err)
	}
	return fmt.Sprintf("connected %v ago", time.Since(o.at).Round(100*time.Millisecond))
}
