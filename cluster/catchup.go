package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
)

// A node whose log lost entries it had synced (raftlog.Options.RepairLost:
// the log is cut at the first damaged record, the synced mark stays where
// it was) catches up in place instead of refusing to start, and takes no
// part in elections until it has: to raft its shorter log is a log that
// never received the lost entries, and a vote cast on it could elect a
// leader without entries this node acknowledged. Until raft's last index
// reaches the synced mark:
//   - a RequestVote or RequestPreVote is refused here, before raft sees
//     it, unless the candidate's log is at least as up to date as the one
//     the node had synced (raft's own rule, applied to the synced mark and
//     the term of its entry, which the mark records). So a cluster whose
//     majority lost entries still elects a node that has them, and never
//     one that has not;
//   - TimeoutNow (a leadership transfer to this node) is refused;
//   - its own RequestVote and RequestPreVote are not sent: with pre-vote
//     its term does not move, so it does not disturb the leader.
// It catches up from the leader by log or snapshot, as any follower that
// fell behind; then the mark is passed and it votes again. A sole voter
// has no one to catch up from: it refuses to start instead.

// errCatchingUp refuses what a node that is catching up does not do.
var errCatchingUp = errors.New("cluster: this node's log lost entries it had synced; it takes no part in elections until it has caught up from the leader")

type catchUp struct {
	store    *raftlog.Store
	term     uint64 // the current term when the store opened
	raft     func() *raft.Raft
	header   func() raft.RPCHeader
	done     atomic.Bool
	onDone   func()
	doneOnce sync.Once
	refused  func(what string) // told of each refusal
}

// active reports whether the node still has to catch up.
func (c *catchUp) active() bool {
	if c == nil || c.done.Load() {
		return false
	}
	r := c.raft()
	if r == nil || r.LastIndex() < c.store.SyncedMark() {
		return true
	}
	c.done.Store(true)
	c.doneOnce.Do(c.onDone)
	return false
}

// grantable reports whether a candidate with this log may have the node's
// vote considered by raft while it catches up: its log is at least as up
// to date as the one the node had synced (raft's rule, against the synced
// mark and the term of its entry). With that term unknown, the candidate
// must reach the mark and have a last term no lower than the node's
// current term when it opened (no lost entry had a higher one).
func (c *catchUp) grantable(lastIndex, lastTerm uint64) bool {
	mark, term := c.store.SyncedMarkAt()
	if term == 0 {
		return lastIndex >= mark && lastTerm >= c.term
	}
	return lastTerm > term || lastTerm == term && lastIndex >= mark
}

func (c *catchUp) currentTerm() uint64 {
	if r := c.raft(); r != nil {
		return r.CurrentTerm()
	}
	return c.term
}

// intercept answers an RPC raft must not see while the node catches up;
// it reports whether it did.
func (c *catchUp) intercept(rpc raft.RPC) bool {
	if !c.active() {
		return false
	}
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		if c.grantable(req.LastLogIndex, req.LastLogTerm) {
			return false
		}
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: c.header(), Term: c.currentTerm()}, nil)
		c.refused("vote")
	case *raft.RequestPreVoteRequest:
		if c.grantable(req.LastLogIndex, req.LastLogTerm) {
			return false
		}
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: c.header(), Term: c.currentTerm()}, nil)
		c.refused("pre-vote")
	case *raft.TimeoutNowRequest:
		rpc.Respond(nil, errCatchingUp)
		c.refused("leadership transfer")
	default:
		return false
	}
	return true
}

// filter passes in's RPCs on to out, but those intercept answers.
func (c *catchUp) filter(in <-chan raft.RPC, out chan<- raft.RPC, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case rpc := <-in:
			if c.intercept(rpc) {
				continue
			}
			select {
			case out <- rpc:
			case <-stop:
				return
			}
		}
	}
}

// Consumer is raft's RPC channel, filtered while the node catches up.
func (t *durableTransport) Consumer() <-chan raft.RPC {
	if t.catchUp == nil {
		return t.NetworkTransport.Consumer()
	}
	return t.filtered
}

// RequestVote is not sent while the node catches up.
func (t *durableTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.catchUp.active() {
		return errCatchingUp
	}
	return t.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote is not sent while the node catches up.
func (t *durableTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.catchUp.active() {
		return errCatchingUp
	}
	return t.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// startCatchUp keeps the node out of elections until its log is past the
// synced mark again.
func (n *Node) startCatchUp(rl *raftlog.Store, lost error) {
	term, _ := rl.GetUint64([]byte("CurrentTerm"))
	var lastWarn atomic.Int64
	n.catchUp = &catchUp{
		store: rl,
		term:  term,
		raft:  n.raftRef.Load,
		header: func() raft.RPCHeader {
			return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(n.cfg.ID), Addr: []byte(n.transport.LocalAddr())}
		},
		onDone: func() {
			n.cfg.Logger.Info("the log has caught up past its synced mark: the node takes part in elections again", "mark", rl.SyncedMark())
		},
		refused: func(what string) {
			now := time.Now().UnixNano()
			if last := lastWarn.Load(); now-last > int64(time.Second) && lastWarn.CompareAndSwap(last, now) {
				n.cfg.Logger.Warn("refused while catching up: the log lost entries it had synced", "refused", what, "mark", rl.SyncedMark())
			}
		},
	}
	n.cfg.Logger.Warn("the log lost entries it had synced; it was cut at the damage, and the node takes no part in elections until it has caught up from the leader", "err", lost)
}

// soleVoterLost refuses a node that must catch up but is its cluster's
// only voter: nobody holds the entries it lost.
func (n *Node) soleVoterLost() error {
	if !n.catchUp.active() {
		return nil
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if voters > 1 {
		return nil
	}
	return fmt.Errorf("cluster: %w; the node is its cluster's only voter, so nobody holds them: restore %s from a copy", n.logStore.Lost(), n.cfg.DataDir)
}
