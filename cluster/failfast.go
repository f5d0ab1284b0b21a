package cluster

import (
	"errors"
	"net"
	"sort"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// A leader whose process died leaves its followers waiting out raft's
// heartbeat timeout, which is long on purpose: a leader that is only slow
// (a pause, a full CPU, a slow disk) must not be replaced. But a dead
// process is not slow. Its host's kernel refuses connections to its Raft
// address at once, and that answer cannot come from a leader that is
// alive. So a follower that has not heard from its leader for the leader
// lease dials the leader's Raft address; if the connection is refused,
// the follower shortens its own heartbeat and election timeouts to the
// lease (raft.ReloadConfig), which makes raft start an election at once,
// and puts them back once a leader is known again.
//
// Nothing here is needed for safety: an election may start at any time
// in Raft (with --read-mode lease it is off: see watchLeaderGone), and pre-vote keeps an election that starts too early from
// disturbing a leader the other members still hear (they refuse a
// pre-vote while they have a leader). A leader that is paused, cut off
// by the network or on a dead host still takes the full timeouts: its
// address does not refuse connections, or cannot be reached to ask.
//
// Two followers that found the leader gone at the same moment would both
// stand, split the vote and wait an election timeout. So the surviving
// voters go in the order of their IDs, failFastStagger apart: the first
// stands, the others' pre-vote refusal holds it back (they still have a
// leader) until the next one stands; that one wins, since a candidate
// grants votes.

// failFastStagger separates the voters that stand after a refused leader.
const failFastStagger = 100 * time.Millisecond

// failFastProbe is how long the dial to a silent leader may take.
const failFastProbe = 50 * time.Millisecond

// watchLeaderGone runs on every node (see above).
func (n *Node) watchLeaderGone() {
	defer n.wg.Done()
	fast := n.cfg.LeaderLease
	if fast >= n.cfg.HeartbeatTimeout {
		return // no shorter timeout to switch to
	}
	if n.cfg.ReadMode == ReadModeLease {
		// A leader in lease mode serves reads for as long as its followers
		// promise not to elect another (a heartbeat timeout, lease.go):
		// standing early would break that promise if the leader lived on
		// with its Raft address refusing connections.
		return
	}
	tick := time.NewTicker(fast / 8)
	defer tick.Stop()
	var (
		lastAddr  raft.ServerAddress
		lastID    raft.ServerID
		expedited bool
		saved     raft.ReloadableConfig // the timeouts before shortening them
		probed    time.Time
	)
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		addr, id := n.raft.LeaderWithID()
		state := n.raft.State()
		if expedited {
			if state == raft.Leader || (addr != "" && time.Since(n.raft.LastContact()) < fast) {
				n.setTimeouts(saved.HeartbeatTimeout, saved.ElectionTimeout)
				expedited = false
			}
			continue
		}
		if addr != "" {
			lastAddr, lastID = addr, id
		}
		if state != raft.Follower || lastAddr == "" || lastID == raft.ServerID(n.cfg.ID) {
			continue
		}
		silent := time.Since(n.raft.LastContact())
		if silent < fast || time.Since(probed) < fast/2 {
			continue
		}
		wait, voter := n.failFastRank(lastID)
		if !voter || silent < fast+wait {
			continue
		}
		probed = time.Now()
		if !refused(string(lastAddr)) {
			continue
		}
		saved = n.raft.ReloadableConfig()
		if err := n.setTimeouts(fast, fast); err != nil {
			continue
		}
		expedited = true
		n.metrics.leaderGone.Add(1)
		n.cfg.Logger.Info("cluster: the leader's Raft address refuses connections: standing for election now",
			"id", n.cfg.ID, "leader", string(lastID), "leader_raft_addr", string(lastAddr),
			"silent", silent.Round(time.Millisecond))
	}
}

// failFastRank is how long this node waits after the lease before it
// stands when the leader named gone is refused, and whether it votes.
func (n *Node) failFastRank(gone raft.ServerID) (time.Duration, bool) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 0, false
	}
	var ids []string
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter && s.ID != gone {
			ids = append(ids, string(s.ID))
		}
	}
	sort.Strings(ids)
	for i, id := range ids {
		if id == n.cfg.ID {
			return time.Duration(i) * failFastStagger, true
		}
	}
	return 0, false
}

// refused reports whether a TCP connection to addr is refused: nobody
// listens there on a host that is up.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, failFastProbe)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// setTimeouts sets raft's heartbeat and election timeouts.
func (n *Node) setTimeouts(heartbeat, election time.Duration) error {
	rc := n.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = heartbeat, election
	err := n.raft.ReloadConfig(rc)
	if err != nil {
		n.cfg.Logger.Warn("cluster: could not set the election timeouts", "err", err)
	}
	return err
}

// LeaderGoneElections is how many times this node stood for election at
// once because its leader's Raft address refused connections.
func (n *Node) LeaderGoneElections() uint64 { return n.metrics.leaderGone.Load() }

// LeaderChanges is how many times this node learned of a leader other
// than the last one it knew.
func (n *Node) LeaderChanges() uint64 { return n.metrics.leaderChanges.Load() }
