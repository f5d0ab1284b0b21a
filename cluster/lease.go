package cluster

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Read modes (Config.ReadMode, --read-mode).
const (
	// ReadModeIndex: every read, or batch of reads, waits for a
	// confirmation round (readindex.go). The default.
	ReadModeIndex = "readindex"
	// ReadModeLease: a leader serves reads without a round while its
	// lease holds; it depends on bounded clock drift (LeaseClockDrift).
	ReadModeLease = "lease"
)

// LeaseClockDrift is the clock-drift bound lease reads depend on: over
// one heartbeat timeout, the clocks of any two nodes measure elapsed time
// within this fraction of each other (rate, not offset: the lease uses
// only monotonic intervals). A lease lasts the heartbeat timeout shortened
// by this fraction.
const LeaseClockDrift = 0.1

func checkReadMode(m string) error {
	switch m {
	case "", ReadModeIndex, ReadModeLease:
		return nil
	}
	return fmt.Errorf("cluster: read mode %q: want %s or %s", m, ReadModeIndex, ReadModeLease)
}

// Lease reads (the Raft thesis §6.4.1), with hashicorp/raft's rules.
//
// A follower of raft 1.7 refuses to vote for a candidate other than its
// leader while it knows a leader (unless the vote comes from a leadership
// transfer), and forgets its leader only once a heartbeat timeout has
// passed since its last successful AppendEntries. So a follower that
// accepted an AppendEntries the leader sent at time s (by the leader's
// clock) votes for no other candidate before s + HeartbeatTimeout, in its
// own clock's measure. The leader notes, per voter, the send time of the
// newest AppendEntries (heartbeats included) accepted in its term; while a
// quorum (itself counting as one) has such a time within
// HeartbeatTimeout × (1 − LeaseClockDrift) of now, no other leader can
// have been elected, and the leader serves a read at its commit index
// without a round. The "election timeout" is raft's heartbeat
// timeout here: that is the one a hashicorp follower waits before it
// forgets its leader (deadbolt sets both to 1 s).
//
// What the lease does not cover, and so what lease mode assumes:
//   - clocks advance at rates within LeaseClockDrift of each other over a
//     heartbeat timeout (a VM paused and resumed stops no monotonic
//     clock, so a paused leader finds its lease run out; a clock that
//     jumps is not monotonic time and is not used);
//   - a voter that restarts forgets its leader and may vote at once: a
//     voter must not crash and come back within a heartbeat timeout while
//     the leader is cut off from the others (with a quorum of restarts in
//     that window a new leader could be elected inside the lease);
//   - a leadership transfer lets followers vote for its target at once,
//     so a leader that sends TimeoutNow holds no lease for the rest of
//     its term (transferStarted).
// With --read-mode readindex (the default) reads depend on none of this.

// leaseState is a leader's lease: the send times of the AppendEntries its
// voters accepted in its term.
type leaseState struct {
	n    *Node
	mu   sync.Mutex
	term uint64
	acks map[raft.ServerID]time.Time
	// noLease: a term in which this node sent TimeoutNow; no lease for it.
	noLease uint64
}

func newLeaseState(n *Node) *leaseState {
	return &leaseState{n: n, acks: map[raft.ServerID]time.Time{}}
}

// ack notes that id accepted an AppendEntries sent at sent, in term.
func (l *leaseState) ack(id raft.ServerID, term uint64, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if term < l.term {
		return
	}
	if term > l.term {
		l.term = term
		clear(l.acks)
	}
	if sent.After(l.acks[id]) {
		l.acks[id] = sent
	}
}

// transferStarted ends the lease for the rest of term.
func (l *leaseState) transferStarted(term uint64) {
	l.mu.Lock()
	l.noLease = max(l.noLease, term)
	l.mu.Unlock()
}

// valid reports whether this node, leading in term, holds its lease now.
func (l *leaseState) valid(term uint64) bool {
	f := l.n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	span := time.Duration(float64(l.n.cfg.HeartbeatTimeout) * (1 - LeaseClockDrift))
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term != term || l.noLease >= term {
		return false
	}
	voters, fresh := 0, 0
	self := false
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if string(s.ID) == l.n.cfg.ID {
			self = true
			fresh++
			continue
		}
		if t, ok := l.acks[s.ID]; ok && now.Sub(t) < span {
			fresh++
		}
	}
	return self && fresh >= voters/2+1
}

// leased reports whether reads of a leader in term may skip the round.
func (c *confirmer) leased(term uint64) bool {
	if c.lease == nil {
		return false
	}
	return c.lease.valid(term)
}

// leaseAck is the transport's hook: a follower accepted an AppendEntries
// sent at sent.
func (n *Node) leaseAck(id raft.ServerID, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, sent time.Time) {
	if n.confirm == nil || n.confirm.lease == nil || !resp.Success || resp.Term != args.Term {
		return
	}
	n.confirm.lease.ack(id, args.Term, sent)
}

// leaseTransfer is the transport's hook: this leader is sending TimeoutNow.
func (n *Node) leaseTransfer() {
	if n.confirm == nil || n.confirm.lease == nil {
		return
	}
	if r := n.raftRef.Load(); r != nil {
		n.confirm.lease.transferStarted(r.CurrentTerm())
	}
}

// TimeoutNow starts a leadership transfer: the lease ends first.
func (t *durableTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if t.transfer != nil {
		t.transfer()
	}
	return t.NetworkTransport.TimeoutNow(id, target, args, resp)
}
