package httpapi

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/resp"
)

// The status page's state (GET /api/status, and each push of /events):
// the members with their Raft state as each reported it, this node's
// timeline of leader and membership changes, and the locks held and
// waited on (DEADBOLT LOCKS).
type status struct {
	Node     string       `json:"node"`
	TimeMs   int64        `json:"time_ms"`
	Single   bool         `json:"single"` // a single node without a log
	Role     string       `json:"role"`
	Leader   string       `json:"leader"`
	Term     uint64       `json:"term"`
	Ready    bool         `json:"ready"`
	Why      string       `json:"ready_reason"`
	Members  []memberView `json:"members"`
	Timeline []eventView  `json:"timeline"`
	Events   uint64       `json:"timeline_total"` // events ever recorded (the timeline keeps the last 256)
	Locks    []any        `json:"locks"`
	// LocksLimit is how many locks the page is sent at most: when Locks
	// has that many, there may be more (GET /api/locks filters on the
	// server).
	LocksLimit int    `json:"locks_limit"`
	LocksError string `json:"locks_error,omitempty"`
	LocksAgeMs int64  `json:"locks_age_ms"` // how old the lock list is
}

type memberView struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	RESPAddr string `json:"resp_addr"`
	Voter    bool   `json:"voter"`
	Self     bool   `json:"self"`
	// Role, Term and the indexes are as the member reported them; empty
	// and zero when it did not answer.
	Role          string `json:"role"`
	Term          uint64 `json:"term"`
	LastIndex     uint64 `json:"last_index"`
	CommitIndex   uint64 `json:"commit_index"`
	Applied       uint64 `json:"applied_index"`
	LastContactMs int64  `json:"last_contact_ms"`
	// Lag is how many entries the member has yet to apply of the highest
	// commit index any member reported.
	Lag    uint64 `json:"lag"`
	Health string `json:"health"` // ok, behind, no leader, unreachable
}

type eventView struct {
	TimeMs int64  `json:"time_ms"`
	Kind   string `json:"kind"`
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
	Reason string `json:"reason"`
}

// Bounds of what building the state asks of the node and the others.
const (
	peerTimeout  = 400 * time.Millisecond // each member's answer
	locksTimeout = 2 * time.Second        // the DEADBOLT LOCKS read
	pageLocks    = 200                    // locks sent to the page
	behindLag    = 100                    // entries behind before a member counts as behind
)

// remote is what building the state fetches from elsewhere: the other
// members' statuses and the lock list. The page's loop refreshes them on
// goroutines of their own, one of each at a time, so a dead leader or a
// slow member never holds up a push; a push uses the last answers.
type remote struct {
	src Source

	mu         sync.Mutex
	peers      []cluster.MemberStatus
	peersBusy  bool
	locks      []any
	locksErr   string
	locksAt    time.Time
	locksBusy  bool
	background sync.WaitGroup
}

// refresh starts fetching whatever is not already being fetched.
func (r *remote) refresh(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.peersBusy && r.src.Raft != nil {
		r.peersBusy = true
		r.background.Add(1)
		go func() {
			defer r.background.Done()
			r.fetchPeers(ctx, true)
		}()
	}
	if !r.locksBusy {
		r.locksBusy = true
		r.background.Add(1)
		go func() {
			defer r.background.Done()
			r.fetchLocks(ctx, true)
		}()
	}
}

// fetchPeers asks the other members for their statuses; async is the
// loop's own fetch (refresh), which clears its busy mark.
func (r *remote) fetchPeers(ctx context.Context, async bool) {
	peers := r.src.Raft.PeerStatuses(ctx, peerTimeout)
	r.mu.Lock()
	r.peers = peers
	if async {
		r.peersBusy = false
	}
	r.mu.Unlock()
}

func (r *remote) fetchLocks(ctx context.Context, async bool) {
	ctx, cancel := context.WithTimeout(ctx, locksTimeout)
	defer cancel()
	locks, errText := readLocks(ctx, r.src, [][]byte{[]byte("COUNT"), []byte("200")})
	r.mu.Lock()
	defer r.mu.Unlock()
	if async {
		r.locksBusy = false
	}
	if errText != "" {
		r.locksErr = errText // the last list stays, with its age
		return
	}
	r.locks, r.locksErr, r.locksAt = locks, "", time.Now()
}

// readLocks runs DEADBOLT LOCKS with opts and returns its entries as JSON
// values, or the error reply's text.
func readLocks(ctx context.Context, src Source, opts [][]byte) ([]any, string) {
	rep := src.Server.Locks(ctx, opts)
	if rep.Type == resp.Error {
		return nil, string(rep.Str)
	}
	out := make([]any, 0, len(rep.Elems))
	for _, e := range rep.Elems {
		out = append(out, jsonValue(e))
	}
	return out, ""
}

// jsonValue turns a reply into what encoding/json writes: maps as
// objects, arrays as arrays, numbers as numbers, the rest as strings
// (bytes that are not UTF-8 are replaced).
func jsonValue(r resp.Reply) any {
	switch r.Type {
	case resp.Nil, resp.NilArray:
		return nil
	case resp.Int, resp.Bool:
		return r.Int
	case resp.Map:
		m := make(map[string]any, len(r.Elems)/2)
		for i := 0; i+1 < len(r.Elems); i += 2 {
			m[string(r.Elems[i].Str)] = jsonValue(r.Elems[i+1])
		}
		return m
	case resp.Array, resp.Set, resp.Push, resp.Pairs:
		out := make([]any, len(r.Elems))
		for i, e := range r.Elems {
			out[i] = jsonValue(e)
		}
		return out
	case resp.Error:
		return map[string]any{"error": string(r.Str)}
	}
	return string(r.Str)
}

// build assembles the state from this node's own figures (cheap: no
// state machine scan) and the last remote answers.
func (r *remote) build() *status {
	now := time.Now()
	st := &status{TimeMs: now.UnixMilli(), Timeline: []eventView{}, Members: []memberView{}, LocksLimit: pageLocks}
	r.mu.Lock()
	peers := r.peers
	st.Locks, st.LocksError = r.locks, r.locksErr
	if !r.locksAt.IsZero() {
		st.LocksAgeMs = now.Sub(r.locksAt).Milliseconds()
	}
	r.mu.Unlock()
	if st.Locks == nil {
		st.Locks = []any{}
	}
	if r.src.Raft == nil {
		st.Single, st.Node, st.Role, st.Ready, st.Why = true, "local", "single", true, "ok"
		st.Members = append(st.Members, memberView{ID: "local", RESPAddr: r.src.Server.Addr().String(), Self: true,
			Voter: true, Role: "single", Health: "ok", LastContactMs: 0})
		return st
	}
	rn := r.src.Raft
	self := rn.Status()
	st.Node, st.Role, st.Term, st.Leader = self.ID, self.State, self.Term, self.Leader
	st.Ready, st.Why = rn.Ready()
	events, total := rn.Timeline()
	st.Events = total
	for _, e := range events {
		st.Timeline = append(st.Timeline, eventView{TimeMs: e.Time.UnixMilli(), Kind: e.Kind, Leader: e.Leader, Term: e.Term, Reason: e.Reason})
	}
	byID := map[string]cluster.MemberStatus{self.ID: self}
	for _, p := range peers {
		byID[p.ID] = p
	}
	var commit uint64
	for _, p := range byID {
		commit = max(commit, p.CommitIndex)
	}
	members, _ := rn.Members()
	for _, m := range members {
		v := memberView{ID: m.ID, RaftAddr: m.RaftAddr, RESPAddr: m.RESPAddr, Voter: m.Voter, Self: m.ID == self.ID,
			LastContactMs: -1, Health: "unreachable"}
		if p, ok := byID[m.ID]; ok {
			v.Role, v.Term, v.LastIndex, v.CommitIndex, v.Applied, v.LastContactMs = p.State, p.Term, p.LastIndex, p.CommitIndex, p.Applied, p.LastContactMs
			if commit > p.Applied {
				v.Lag = commit - p.Applied
			}
			switch {
			case p.Leader == "":
				v.Health = "no leader"
			case v.Lag > behindLag:
				v.Health = "behind"
			default:
				v.Health = "ok"
			}
		}
		st.Members = append(st.Members, v)
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	return st
}

// changeMark is what the page's loop compares to push at once when
// something visible changed, rather than at the next second.
type changeMark struct {
	leader string
	term   uint64
	events uint64
	role   string
}

func (r *remote) mark() changeMark {
	if r.src.Raft == nil {
		return changeMark{}
	}
	s := r.src.Raft.Status()
	return changeMark{leader: s.Leader, term: s.Term, events: r.src.Raft.TimelineCount(), role: s.State}
}
