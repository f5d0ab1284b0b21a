package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// The other voters' disks. A leader with room on its own disk, whose
// followers are short of space, would take writes that no quorum can
// store: each would wait for a commit that does not come and end as
// "outcome unknown" (rightly: the entry is in the leader's log and may yet
// be committed). So the leader asks every other voter for its disk status
// (DEADBOLT.FORWARD d, as the hand-over for space does) every
// peerDiskEvery, and while the voters known to be short of space ("low"
// or "full") leave fewer than a quorum with room, it refuses client
// writes before proposing them, with MISCONF, as for its own disk. A voter
// that does not answer counts as having room: refusing is for what is
// known.
const peerDiskEvery = time.Second

// watchPeerDisks runs while the node does, asking only while it leads.
func (n *Node) watchPeerDisks() {
	defer n.wg.Done()
	t := time.NewTicker(peerDiskEvery)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.IsLeader() {
			n.disk.peers.Store(nil)
			continue
		}
		n.askPeerDisks()
	}
}

// askPeerDisks asks the other voters for their disk status and sets or
// clears the refusal.
func (n *Node) askPeerDisks() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	var voters []raft.Server
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, s)
		}
	}
	var (
		mu    sync.Mutex
		short []string
		wg    sync.WaitGroup
	)
	for _, s := range voters {
		if string(s.ID) == n.cfg.ID {
			continue
		}
		wg.Add(1)
		go func(s raft.Server) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), peerDiskEvery)
			defer cancel()
			res, err := n.member.forward(ctx, string(s.Address), modeDisk, fsm.Command{Args: [][]byte{[]byte("disk")}})
			if err != nil {
				return
			}
			if st := string(res.Reply.Str); st == "low" || st == "full" {
				mu.Lock()
				short = append(short, string(s.ID)+" "+st)
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	quorum := len(voters)/2 + 1
	if len(voters)-len(short) >= quorum || !n.IsLeader() {
		if n.disk.peers.Swap(nil) != nil {
			n.cfg.Logger.Info("enough members have disk space again: writes are taken", "id", n.cfg.ID)
		}
		return
	}
	sort.Strings(short)
	msg := fmt.Sprintf("MISCONF writes are refused: too few members have disk space to store them (%s; %d of %d voters needed); nothing was written, reads keep working, writes resume when space returns",
		strings.Join(short, ", "), quorum, len(voters))
	if n.disk.peers.Swap(&msg) == nil {
		n.cfg.Logger.Warn("a majority of the members are short of disk space: writes are refused", "id", n.cfg.ID, "short", strings.Join(short, ", "))
	}
}
