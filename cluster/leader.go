package cluster

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Leadership as this node sees it: the events that wake commands waiting
// for a leader (leaderEvents, watchLeaders), the barrier and first entry a
// new leader commits before it serves (becomeLeader), the time base it
// stamps entries with (leaderTime, stamp), and its periodic proposals
// (leaderDuties: active expiry and clock ticks).

// leaderTime is how a leader stamps entries: it continues from the state
// machine's clock at the moment it became leader, so that time does not
// run while there is no leader (a lock does not expire because an
// election took a while).
type leaderTime struct {
	ready bool
	term  uint64
	base  int64     // state machine time when leadership began, ms
	since time.Time // local clock at that moment
}

// leaderEvents returns a channel closed at the next leadership event.
func (n *Node) leaderEvents() <-chan struct{} {
	n.evMu.Lock()
	defer n.evMu.Unlock()
	if n.events == nil {
		n.events = make(chan struct{})
	}
	return n.events
}

// leaderEvent wakes whoever waits on leaderEvents.
func (n *Node) leaderEvent() {
	n.evMu.Lock()
	defer n.evMu.Unlock()
	if n.events != nil {
		close(n.events)
		n.events = nil
	}
}

// watchLeaders reports each leader raft learns of as a leadership event.
func (n *Node) watchLeaders() {
	defer n.wg.Done()
	ch := make(chan raft.Observation, 1)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	defer n.raft.DeregisterObserver(obs)
	for {
		select {
		case <-n.stop:
			return
		case o := <-ch:
			prev, changed := n.metrics.noteLeader(o)
			if lo, ok := o.Data.(raft.LeaderObservation); ok {
				n.timeline.noteLeader(n.cfg.ID, lo, n.raft.CurrentTerm())
				if changed {
					n.cfg.Logger.Info("cluster: leader changed", "id", n.cfg.ID, "leader", string(lo.LeaderID),
						"leader_raft_addr", string(lo.LeaderAddr), "previous", string(prev), "term", n.raft.CurrentTerm())
				}
			}
			n.leaderEvent()
		}
	}
}

// watchLeadership tracks leadership changes. A new leader first waits for
// a barrier (every earlier entry, and the no-op of its own term, applied:
// from then on its commit index is current), then takes the state
// machine's clock as its time base and registers its client address.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	ch := n.raft.LeaderCh()
	for {
		select {
		case <-n.stop:
			return
		case isLeader := <-ch:
			n.tmu.Lock()
			n.lead = leaderTime{}
			n.tmu.Unlock()
			if !isLeader {
				continue
			}
			n.becomeLeader()
		}
	}
}

func (n *Node) becomeLeader() {
	term := n.raft.CurrentTerm()
	for n.raft.State() == raft.Leader {
		err := n.raft.Barrier(n.cfg.CommandTimeout).Error()
		if err == nil {
			break
		}
		select {
		case <-n.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return
	}
	n.fsm.mu.Lock()
	base := n.state.Now()
	n.fsm.mu.Unlock()
	now := n.cfg.Clock.Now()
	if base == 0 {
		// A new cluster: its clock starts at the wall clock, so absolute
		// times (EXPIREAT, SET ... PXAT, TIME) mean what clients expect.
		// From then on it runs only while there is a leader.
		base = now.UnixMilli()
	}
	// Commit one entry the state machine sees before serving: the no-op and
	// the barrier of this term are not passed to the state machine, so
	// until a command follows them the commit index is ahead of what a
	// read could ever wait for.
	f := n.raft.Apply(AppendEntry(nil, Entry{Time: base, Cmd: fsm.TickCommand()}), n.cfg.CommandTimeout)
	if err := f.Error(); err != nil {
		n.cfg.Logger.Warn("first entry of the term failed", "term", term, "err", err)
		return
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return
	}
	n.tmu.Lock()
	n.lead = leaderTime{ready: true, term: term, base: base, since: now}
	n.lastProp = now
	n.tmu.Unlock()
	n.leaderEvent()
	n.cfg.Logger.Info("leader ready", "id", n.cfg.ID, "term", term, "time_base", base)
	go n.register()
	go n.ensureClusterID(term) // clusterid_leader.go
}

// leaderNow is the leader's current time for entries, and false if this
// node is not a ready leader.
func (n *Node) leaderNow() (int64, bool) {
	n.tmu.Lock()
	defer n.tmu.Unlock()
	if !n.lead.ready {
		return 0, false
	}
	return n.lead.base + n.cfg.Clock.Now().Sub(n.lead.since).Milliseconds(), true
}

// stamp returns the time for the next entry, and false if this node is
// not a ready leader.
func (n *Node) stamp() (int64, bool) {
	n.tmu.Lock()
	defer n.tmu.Unlock()
	if !n.lead.ready {
		return 0, false
	}
	now := n.cfg.Clock.Now()
	n.lastProp = now
	return n.lead.base + now.Sub(n.lead.since).Milliseconds(), true
}

// tickInterval is how often an idle leader proposes an empty entry so
// that the state machine's clock stays close to the leader's; a new leader
// continues from it.
const tickInterval = 250 * time.Millisecond

// leaderDuties runs the leader's periodic proposals: active expiry and
// clock ticks.
func (n *Node) leaderDuties() {
	defer n.wg.Done()
	t := time.NewTicker(min(reapInterval, tickInterval))
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.IsLeader() {
			continue
		}
		if n.disk != nil && n.disk.status() != "ok" {
			// Short of space: the log is kept for what must be
			// written (diskspace.go). Reads judge expiry by the
			// leader's clock, not the state machine's.
			n.handOverForSpace()
			continue
		}
		n.fsm.mu.Lock()
		next, ok := n.state.NextDeadline()
		n.fsm.mu.Unlock()
		now, _ := n.leaderNow()
		switch {
		case ok && next <= now:
			n.proposeInternal(fsm.ReapCommand(reapBatch))
		default:
			n.tmu.Lock()
			idle := n.cfg.Clock.Now().Sub(n.lastProp) >= tickInterval
			n.tmu.Unlock()
			if idle {
				n.proposeInternal(fsm.TickCommand())
			}
		}
	}
}

func (n *Node) proposeInternal(cmd fsm.Command) {
	ts, ok := n.stamp()
	if !ok {
		return
	}
	f := n.raft.Apply(AppendEntry(nil, Entry{Time: ts, Cmd: cmd}), n.cfg.CommandTimeout)
	if err := f.Error(); err != nil {
		n.cfg.Logger.Debug("internal proposal failed", "err", err)
	}
}
