package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deadbolt/deadbolt/internal/chaos"
)

// A nemesis starts one fault. Healing is the same for all of them (heal):
// resume paused processes, remove every partition, restart dead nodes and
// add removed ones back.
type nemesis struct {
	name  string
	what  string // the fault, for the report
	class string // the failure class it is aimed at (DESIGN.md)
	start func(ctx context.Context, h *harness) (string, error)
}

// faultRecord is one injected fault, for the report.
type faultRecord struct {
	Name   string `json:"name"`
	At     int64  `json:"at"`
	Healed int64  `json:"healed"`
	Detail string `json:"detail"`
	Err    string `json:"err,omitempty"`
}

var nemeses = []nemesis{
	{name: "kill-leader", what: "SIGKILL the leader", class: "lost-on-failover stale-read-after-election",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			l.kill(syscall.SIGKILL)
			return "killed leader " + l.id, nil
		}},
	{name: "kill-random", what: "SIGKILL a random node", class: "lost-on-failover",
		start: func(ctx context.Context, h *harness) (string, error) {
			n := h.pick(h.db.nodes, 1)
			n[0].kill(syscall.SIGKILL)
			return "killed " + n[0].id, nil
		}},
	{name: "kill-majority", what: "SIGKILL a majority", class: "lost-on-failover empty-read-after-restart",
		start: func(ctx context.Context, h *harness) (string, error) {
			ns := h.pick(h.db.nodes, len(h.db.nodes)/2+1)
			for _, n := range ns {
				n.kill(syscall.SIGKILL)
			}
			return "killed " + ids(ns), nil
		}},
	{name: "kill-all", what: "SIGKILL every node", class: "empty-read-after-restart lost-on-failover",
		start: func(ctx context.Context, h *harness) (string, error) {
			var wg sync.WaitGroup
			for _, n := range h.db.nodes {
				wg.Add(1)
				go func(n *node) { defer wg.Done(); n.kill(syscall.SIGKILL) }(n)
			}
			wg.Wait()
			return "killed all", nil
		}},
	{name: "restart-all", what: "SIGTERM every node, start them again at once", class: "empty-read-after-restart",
		start: func(ctx context.Context, h *harness) (string, error) {
			var wg sync.WaitGroup
			for _, n := range h.db.nodes {
				wg.Add(1)
				go func(n *node) { defer wg.Done(); n.kill(syscall.SIGTERM) }(n)
			}
			wg.Wait()
			return "stopped all (SIGTERM); healing restarts them", nil
		}},
	{name: "pause-leader", what: "SIGSTOP the leader", class: "split-brain stale-read-after-election",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			l.signal(syscall.SIGSTOP)
			return "paused leader " + l.id, nil
		}},
	{name: "hostile-peer", what: "a process that is no member sends raft RPCs of a far higher term (AppendEntries carrying a write, RequestVote) to every node's Raft address", class: "members-only",
		start: func(ctx context.Context, h *harness) (string, error) {
			answered, err := hostilePeer(h.db.nodes)
			if err != nil {
				return "", err
			}
			if len(answered) > 0 {
				h.violation(chaos.Violation{Check: "members-only", Detail: hostileDetail(answered)})
			}
			return "stranger's RPCs to every node: " + hostileDetail(answered), nil
		}},
	{name: "pause-leader-reads", what: "SIGSTOP the leader until another node leads, then SIGCONT it while readers send to it", class: "stale-read-after-election",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			l.signal(syscall.SIGSTOP)
			// The old leader wakes believing it still leads, with reads
			// queued on its sockets: each must be confirmed by a quorum
			// that answers after it arrived, which no longer follows it.
			nl, took := h.otherLeader(ctx, l, 10*time.Second)
			l.signal(syscall.SIGCONT)
			if nl == nil {
				return "paused leader " + l.id + "; no other node led; resumed it", nil
			}
			return fmt.Sprintf("paused leader %s until %s led (%v), then resumed it", l.id, nl.id, took), nil
		}},
	{name: "disk-stall-leader", what: "the leader's log syncs wait until healing (a disk that stops answering)", class: "split-brain stale-read-after-election",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(l.stallFile, nil, 0o644); err != nil {
				return "", err
			}
			// A leader whose disk stalls must not hold the cluster: it
			// goes quiet and another node takes over. Waited for here,
			// so the fault lasts at least that long.
			const limit = 10 * time.Second
			if nl, took := h.otherLeader(ctx, l, limit); nl != nil {
				return fmt.Sprintf("stalled leader %s's disk; %s led %v later", l.id, nl.id, took), nil
			}
			h.violation(chaos.Violation{Check: "liveness", Detail: fmt.Sprintf("leader %s's disk stalled, and no other node led within %v", l.id, limit)})
			return "stalled leader " + l.id + "'s disk; no other leader", nil
		}},
	{name: "pause-majority", what: "SIGSTOP a majority", class: "split-brain",
		start: func(ctx context.Context, h *harness) (string, error) {
			ns := h.pick(h.db.nodes, len(h.db.nodes)/2+1)
			for _, n := range ns {
				n.signal(syscall.SIGSTOP)
			}
			return "paused " + ids(ns), nil
		}},
	{name: "partition-leader", what: "isolate the leader from every other node", class: "split-brain stale-read-after-election proxy-crossed-replies",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			err = h.lab.partition([][]int{{l.idx}, idxs(h.db.others(l))})
			return "isolated leader " + l.id, err
		}},
	{name: "partition-halves", what: "split into a random majority and minority", class: "split-brain lost-on-failover",
		start: func(ctx context.Context, h *harness) (string, error) {
			ns := h.pick(h.db.nodes, len(h.db.nodes))
			k := len(ns) / 2
			err := h.lab.partition([][]int{idxs(ns[:k]), idxs(ns[k:])})
			return fmt.Sprintf("minority %s | majority %s", ids(ns[:k]), ids(ns[k:])), err
		}},
	{name: "partition-ring", what: "every node sees a majority, no two the same one (3 nodes: one link cut)", class: "split-brain",
		start: func(ctx context.Context, h *harness) (string, error) {
			ns := h.pick(h.db.nodes, len(h.db.nodes))
			var cut [][2]int
			if len(ns) <= 3 {
				cut = append(cut, [2]int{ns[0].idx, ns[1].idx})
			} else {
				// A ring: each node talks to its two neighbours only.
				for i := range ns {
					for j := i + 1; j < len(ns); j++ {
						if d := j - i; d != 1 && d != len(ns)-1 {
							cut = append(cut, [2]int{ns[i].idx, ns[j].idx})
						}
					}
				}
			}
			err := h.lab.cutLinks(cut)
			return "ring, cut " + h.lab.describe(func(i int) string { return h.db.nodes[i].id }), err
		}},
	{name: "clock-forward-small", what: "the leader's clock jumps forward by lease/10", class: "expiry-by-local-clock",
		start: func(ctx context.Context, h *harness) (string, error) { return h.jumpLeader(ctx, h.cfg.lease/10) }},
	{name: "clock-forward-big", what: "the leader's clock jumps forward by 2 leases (breaks the lease assumption on purpose)", class: "expiry-by-local-clock",
		start: func(ctx context.Context, h *harness) (string, error) { return h.jumpLeader(ctx, 2*h.cfg.lease) }},
	{name: "clock-back", what: "the leader's clock jumps back 5 s", class: "expiry-by-local-clock",
		start: func(ctx context.Context, h *harness) (string, error) { return h.jumpLeader(ctx, -5*time.Second) }},
	{name: "clock-skew-followers", what: "every follower's clock is set up to 10 s ahead or behind", class: "expiry-by-local-clock",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			r := h.rng()
			var d []string
			for _, n := range h.db.others(l) {
				off := time.Duration(r.Intn(20001)-10000) * time.Millisecond
				if err := n.setOffset(off); err != nil {
					return "", err
				}
				d = append(d, fmt.Sprintf("%s %+v", n.id, off))
			}
			return "follower clocks: " + strings.Join(d, ", "), nil
		}},
	{name: "member-remove-partitioned", what: "isolate a follower, remove it through the leader; healing wipes it and adds it back (snapshot install)", class: "membership-split-brain snapshot",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			var f *node
			for _, n := range h.pick(h.db.others(l), len(h.db.nodes)-1) {
				if n.usable() {
					f = n
					break
				}
			}
			if f == nil {
				return "", errors.New("no running follower")
			}
			if err := h.lab.partition([][]int{{f.idx}, idxs(h.db.others(f))}); err != nil {
				return "", err
			}
			_, err = l.do(ctx, 7*time.Second, "RAFT", "REMOVE", f.id)
			gone := err == nil
			if err != nil {
				// Outcome unknown: ask the members.
				if m, merr := l.memberList(ctx); merr == nil && !contains(m, f.id) {
					gone = true
				}
			}
			if gone {
				f.mu.Lock()
				f.removed = true
				f.mu.Unlock()
			}
			return fmt.Sprintf("isolated %s, RAFT REMOVE %s via %s: err=%v removed=%v", f.id, f.id, l.id, err, gone), nil
		}},
	{name: "member-remove-via-old-leader", what: "isolate the leader, then ask it at once to remove a follower", class: "membership-split-brain",
		start: func(ctx context.Context, h *harness) (string, error) {
			l, err := h.db.leader(ctx)
			if err != nil {
				return "", err
			}
			f := h.pick(h.db.others(l), 1)[0]
			if err := h.lab.partition([][]int{{l.idx}, idxs(h.db.others(l))}); err != nil {
				return "", err
			}
			_, err = l.do(ctx, 7*time.Second, "RAFT", "REMOVE", f.id)
			if err == nil {
				h.violation(chaos.Violation{Check: "membership", Detail: fmt.Sprintf("isolated old leader %s answered OK to RAFT REMOVE %s", l.id, f.id)})
			}
			return fmt.Sprintf("isolated leader %s; RAFT REMOVE %s sent to it: %v", l.id, f.id, err), nil
		}},
	{name: "snapshot-kill", what: "RAFT SNAPSHOT on a node and SIGKILL it 0-30 ms later", class: "snapshot",
		start: func(ctx context.Context, h *harness) (string, error) {
			n := h.pick(h.db.nodes, 1)[0]
			go n.do(ctx, 5*time.Second, "RAFT", "SNAPSHOT")
			time.Sleep(time.Duration(h.rng().Intn(30)) * time.Millisecond)
			n.kill(syscall.SIGKILL)
			return "snapshot then kill " + n.id, nil
		}},
	{name: "snapshot-storm", what: "RAFT SNAPSHOT on every node, then kill the leader", class: "snapshot lost-on-failover",
		start: func(ctx context.Context, h *harness) (string, error) {
			var wg sync.WaitGroup
			for _, n := range h.db.nodes {
				if n.usable() {
					wg.Add(1)
					go func(n *node) { defer wg.Done(); n.do(ctx, 5*time.Second, "RAFT", "SNAPSHOT") }(n)
				}
			}
			wg.Wait()
			l, err := h.db.leader(ctx)
			if err != nil {
				return "snapshots taken; no leader to kill", nil
			}
			l.kill(syscall.SIGKILL)
			return "snapshots on all, killed leader " + l.id, nil
		}},
}

// combos are faults injected together.
var combos = [][]string{
	{"partition-ring", "pause-leader"},
	{"partition-halves", "kill-random"},
	{"partition-leader", "clock-forward-small"},
	{"pause-leader", "snapshot-kill"},
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func nemesisByName(name string) (nemesis, bool) {
	for _, n := range nemeses {
		if n.name == name {
			return n, true
		}
	}
	return nemesis{}, false
}

// jumpLeader moves the leader's clock by d (and leaves it there: a clock
// set back to where it was would be a forward jump for every lease granted
// meanwhile).
func (h *harness) jumpLeader(ctx context.Context, d time.Duration) (string, error) {
	l, err := h.db.leader(ctx)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	off := l.offset + d
	l.mu.Unlock()
	if err := l.setOffset(off); err != nil {
		return "", err
	}
	h.mu.Lock()
	h.jumps = append(h.jumps, chaos.ClockJump{At: h.clock.Now(), Delta: int64(d), Node: l.id})
	h.mu.Unlock()
	return fmt.Sprintf("leader %s clock %+v (offset now %v)", l.id, d, off), nil
}

// heal ends every fault: processes resumed, partitions removed, dead nodes
// restarted, and every node the leader's configuration lacks wiped and
// joined again. That configuration decides, not the nemesis's record: a
// removal answered with an error may have been committed by a later
// leader, and one seen in an uncommitted configuration may have been lost.
func (h *harness) heal(ctx context.Context) error {
	var errs []string
	if err := h.lab.heal(); err != nil {
		errs = append(errs, err.Error())
	}
	for _, n := range h.db.nodes {
		n.signal(syscall.SIGCONT)
		if err := os.Remove(n.stallFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err.Error())
		}
	}
	errs = append(errs, h.healDisks(ctx)...)
	for _, n := range h.db.nodes {
		n.mu.Lock()
		removed := n.removed
		n.mu.Unlock()
		if !removed {
			if err := h.db.start(n, ""); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	l, err := h.db.waitLeader(ctx, 20*time.Second)
	var members []string
	if err == nil {
		members, err = l.memberList(ctx)
	}
	if err != nil {
		errs = append(errs, "no configuration to heal to: "+err.Error())
		return errors.New(strings.Join(errs, "; "))
	}
	for _, n := range h.db.nodes {
		if contains(members, n.id) {
			n.mu.Lock()
			n.removed = false
			n.mu.Unlock()
			if err := h.db.start(n, ""); err != nil {
				errs = append(errs, err.Error())
			}
			continue
		}
		if err := h.rejoin(ctx, n); err != nil {
			errs = append(errs, err.Error())
		}
	}
	h.healedDisks()
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// rejoin wipes a removed node and starts it again, joining through the
// leader: it comes back empty and catches up by snapshot installation.
func (h *harness) rejoin(ctx context.Context, n *node) error {
	n.kill(syscall.SIGKILL)
	if err := os.RemoveAll(n.dataDir); err != nil {
		return err
	}
	for try := 0; try < 5 && ctx.Err() == nil; try++ {
		l, err := h.db.waitLeader(ctx, 10*time.Second)
		if err != nil {
			return fmt.Errorf("rejoin %s: %w", n.id, err)
		}
		if err := h.db.start(n, l.addr); err != nil {
			return err
		}
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			if m, err := l.memberList(ctx); err == nil && contains(m, n.id) {
				n.mu.Lock()
				n.removed = false
				n.mu.Unlock()
				return nil
			}
			if !n.alive() {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		n.kill(syscall.SIGKILL)
		os.RemoveAll(n.dataDir)
	}
	return fmt.Errorf("rejoin %s: not a member after 5 tries", n.id)
}

// pick returns k of ns in random order.
func (h *harness) pick(ns []*node, k int) []*node {
	cp := append([]*node(nil), ns...)
	r := h.rng()
	r.Shuffle(len(cp), func(i, j int) { cp[i], cp[j] = cp[j], cp[i] })
	return cp[:min(k, len(cp))]
}

// schedule is the order of faults: every nemesis alone and the combos,
// in an order fixed by the seed (mixed, so that a run too short for all of
// them still has some of each); a longer run continues at random.
func schedule(r *rand.Rand) [][]string {
	var s [][]string
	for _, n := range nemeses {
		s = append(s, []string{n.name})
	}
	s = append(s, combos...)
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

func randomStep(r *rand.Rand) []string {
	if r.Intn(3) == 0 {
		return combos[r.Intn(len(combos))]
	}
	names := make([]string, 0, len(nemeses))
	for _, n := range nemeses {
		names = append(names, n.name)
	}
	sort.Strings(names)
	return []string{names[r.Intn(len(names))]}
}

// otherLeader waits up to limit for a leader other than l, and returns it
// and how long it took (nil if none came).
func (h *harness) otherLeader(ctx context.Context, l *node, limit time.Duration) (*node, time.Duration) {
	start := time.Now()
	for time.Since(start) < limit && ctx.Err() == nil {
		if nl, err := h.db.leader(ctx); err == nil && nl != l {
			return nl, time.Since(start).Round(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, time.Since(start)
}
