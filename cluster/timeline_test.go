package cluster

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// The ring keeps the last 256 events, oldest first, and counts them all;
// a leader raft repeats is noted once.
func TestTimelineRing(t *testing.T) {
	var tl timeline
	for i := range 300 {
		id := "n" + strconv.Itoa(i%2+1)
		tl.noteLeader("n1", raft.LeaderObservation{LeaderID: raft.ServerID(id)}, uint64(i))
		tl.noteLeader("n1", raft.LeaderObservation{LeaderID: raft.ServerID(id)}, uint64(i)) // repeated
	}
	events, total := tl.events()
	if total != 300 || len(events) != timelineSize {
		t.Fatalf("kept %d of %d events, want %d of 300", len(events), total, timelineSize)
	}
	if events[0].Term != 300-timelineSize || events[len(events)-1].Term != 299 {
		t.Errorf("kept terms %d..%d, want %d..299", events[0].Term, events[len(events)-1].Term, 300-timelineSize)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Time.Before(events[i-1].Time) {
			t.Fatalf("events out of order at %d", i)
		}
	}
}

// Each kind of event says why it happened.
func TestTimelineReasons(t *testing.T) {
	var tl timeline
	tl.noteLeader("n1", raft.LeaderObservation{LeaderID: "n1"}, 2)
	tl.handingOver(true)
	tl.noteLeader("n1", raft.LeaderObservation{}, 2) // raft steps down first
	tl.noteLeader("n1", raft.LeaderObservation{LeaderID: "n2"}, 3)
	tl.noteLeader("n1", raft.LeaderObservation{}, 3)
	tl.noteLeader("n1", raft.LeaderObservation{LeaderID: "n3"}, 4)
	tl.noteLeader("n1", raft.LeaderObservation{LeaderID: "n1"}, 5)
	tl.noteMembers([]string{"n4"}, []string{"n2"}, 3, 5)
	events, _ := tl.events()
	want := []struct{ kind, reason string }{
		{"leader", "n1 leads in term 2 (elected); this node is the leader"},
		{"no-leader", "no leader: n1 is handing its leadership over"},
		{"leader", "n2 leads in term 3: n1 handed its leadership over"},
		{"no-leader", "no leader: n2 stopped leading or stopped answering; an election follows"},
		{"leader", "n3 leads in term 4 (elected)"},
		{"leader", "n1 leads in term 5 after n3; this node is the leader"},
		{"members", "added n4; removed n2 (3 members)"},
	}
	if len(events) != len(want) {
		t.Fatalf("events: %+v", events)
	}
	for i, w := range want {
		if events[i].Kind != w.kind || events[i].Reason != w.reason {
			t.Errorf("event %d: %s %q, want %s %q", i, events[i].Kind, events[i].Reason, w.kind, w.reason)
		}
	}
	if !strings.Contains(events[6].Reason, "removed n2") || events[6].Leader != "n1" {
		t.Errorf("members event: %+v", events[6])
	}
}
