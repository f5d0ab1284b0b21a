package cluster

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Event is one entry of a node's timeline: a leader learned of or lost,
// or a change of the cluster's members, as this node saw it.
type Event struct {
	Time   time.Time
	Kind   string // "leader", "no-leader", "members", "start"
	Leader string // the leader after the event ("" if none known)
	Term   uint64
	Reason string // one line for people
}

// timelineSize bounds the events a node keeps; older ones are dropped.
const timelineSize = 256

// timeline is a bounded ring of events, fed by the goroutines that
// already watch leadership (watchLeaders) and membership
// (membershipLoop): never by the apply path.
type timeline struct {
	mu      sync.Mutex
	ring    [timelineSize]Event
	next    int    // where the next event goes
	total   uint64 // events ever added
	leader  string // the last leader noted, "" if none
	handing bool   // this node is handing its leadership over
}

func (t *timeline) add(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	t.ring[t.next] = e
	t.next = (t.next + 1) % timelineSize
	t.total++
}

// events returns the events kept, oldest first, and how many were ever
// added (a reader can tell that something happened since it last looked).
func (t *timeline) events() ([]Event, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := int(min(t.total, timelineSize))
	out := make([]Event, 0, n)
	for i := range n {
		out = append(out, t.ring[(t.next-n+i+timelineSize)%timelineSize])
	}
	return out, t.total
}

// noteLeader records a leadership observation when the leader it names
// differs from the last one noted (raft repeats itself).
func (t *timeline) noteLeader(self string, lo raft.LeaderObservation, term uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := string(lo.LeaderID)
	if id == t.leader {
		return
	}
	prev := t.leader
	t.leader = id
	e := Event{Kind: "leader", Leader: id, Term: term}
	term10 := strconv.FormatUint(term, 10)
	switch {
	case id == "" && t.handing:
		e.Kind = "no-leader"
		e.Reason = "no leader: " + self + " is handing its leadership over"
	case id == "" && prev != "":
		e.Kind = "no-leader"
		e.Reason = "no leader: " + prev + " stopped leading or stopped answering; an election follows"
	case id == "":
		e.Kind = "no-leader"
		e.Reason = "no leader known"
	case t.handing && id != self:
		e.Reason = id + " leads in term " + term10 + ": " + self + " handed its leadership over"
		t.handing = false
	case prev == "":
		e.Reason = id + " leads in term " + term10 + " (elected)"
	default:
		e.Reason = id + " leads in term " + term10 + " after " + prev
	}
	if id == self {
		e.Reason += "; this node is the leader"
	}
	t.add(e)
}

// noteMembers records a configuration change.
func (t *timeline) noteMembers(added, removed []string, members int, term uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	t.add(Event{Kind: "members", Leader: t.leader, Term: term,
		Reason: strings.Join(parts, "; ") + " (" + strconv.Itoa(members) + " members)"})
}

// noteStart records the first configuration this node sees.
func (t *timeline) noteStart(servers []raft.Server, term uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]string, len(servers))
	for i, s := range servers {
		ids[i] = string(s.ID)
	}
	t.add(Event{Kind: "start", Leader: t.leader, Term: term, Reason: "node started; members " + strings.Join(ids, ", ")})
}

func (t *timeline) handingOver(on bool) {
	t.mu.Lock()
	t.handing = on
	t.mu.Unlock()
}

// Timeline returns this node's recent leader and membership events
// (at most 256), oldest first, and how many it has ever recorded.
func (n *Node) Timeline() ([]Event, uint64) { return n.timeline.events() }

// TimelineCount is how many events the node has ever recorded: a cheap
// way to tell that the timeline changed.
func (n *Node) TimelineCount() uint64 {
	n.timeline.mu.Lock()
	defer n.timeline.mu.Unlock()
	return n.timeline.total
}
