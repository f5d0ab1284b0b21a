package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// TestProposerGroups: a group proposal goes into one entry whole, next to
// other commands, in queue order; its callback gets one result per
// command, in order, and a group that would cross the entry's bound goes
// into the next entry whole.
func TestProposerGroups(t *testing.T) {
	l := newFakeLog()
	l.hold = true
	p := startProposer(t, l, 1)
	p.maxCommands = 8

	results := make(chan []string, 10)
	group := func(names ...string) {
		envs := make([][]byte, len(names))
		for i, n := range names {
			envs[i] = envFor(n)
		}
		p.enqueue(&proposal{group: envs, cb: func(o outcome) {
			if o.err != nil {
				results <- []string{o.err.Error()}
				return
			}
			var got []string
			for _, r := range o.group {
				got = append(got, string(r.Reply.Str))
			}
			results <- got
		}})
	}
	single := make(chan string, 10)
	p.submit(envFor("first"), func(o outcome) { single <- string(o.res.Reply.Str) })
	<-l.next // in flight: what follows waits
	group("a1", "a2", "a3")
	p.submit(envFor("lone"), func(o outcome) { single <- string(o.res.Reply.Str) })
	group("b1", "b2", "b3", "b4", "b5") // 3+1+5 > 8: the next entry
	waitQueued(t, p, 3)
	l.release()
	for _, want := range [][]string{{"a1", "a2", "a3"}, {"b1", "b2", "b3", "b4", "b5"}} {
		if got := <-results; !slices.Equal(got, want) {
			t.Fatalf("group: %v, want %v", got, want)
		}
	}
	for _, want := range []string{"first", "lone"} {
		if got := <-single; got != want {
			t.Fatalf("single: %q, want %q", got, want)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var shape []string
	for _, es := range l.entries {
		var names []string
		for _, e := range es {
			names = append(names, string(e.Cmd.Args[0]))
		}
		shape = append(shape, fmt.Sprint(names))
	}
	want := []string{"[first]", "[a1 a2 a3 lone]", "[b1 b2 b3 b4 b5]"}
	if !slices.Equal(shape, want) {
		t.Fatalf("entries %v, want %v", shape, want)
	}
}

// plainTarget is a leader from before groups: it applies forwarded
// commands one at a time and knows no GroupTarget.
type plainTarget struct{ applied int }

func (t *plainTarget) ApplyLocal(context.Context, fsm.Command) (fsm.Result, error) {
	t.applied++
	return fsm.Result{}, nil
}
func (t *plainTarget) ReadLocal(context.Context, fsm.Command) (fsm.Result, error) {
	return fsm.Result{}, nil
}
func (t *plainTarget) KeyVersionLocal(context.Context, int, string) (uint64, error) { return 0, nil }

// A forwarded group reaching a leader that cannot apply groups is refused
// with nothing applied, in one of the two answers forwardGroup takes for
// "fall back to one by one": this build's errUnknownMode, or an older
// build's failure to decode the batch as one command.
func TestForwardGroupToOldLeader(t *testing.T) {
	batch := AppendBatch(nil, AppendEntry(nil, Entry{Cmd: cmd("SET", "a", "1")}), AppendEntry(nil, Entry{Cmd: cmd("SET", "b", "2")}))
	pt := &plainTarget{}
	r := ServeForward(context.Background(), pt, []byte(modeGroup), batch)
	if r.Type != resp.Error || string(r.Str) != errUnknownMode || pt.applied != 0 {
		t.Fatalf("group to a target without groups: %q, %d applied", r.Str, pt.applied)
	}
	// What an older ServeForward answers: DecodeEntry's error on a batch.
	_, err := DecodeEntry(batch)
	if err == nil || !strings.HasPrefix("ERR "+err.Error(), "ERR "+ErrBadEnvelope.Error()) {
		t.Fatalf("a batch decoded as one command: %v", err)
	}
}
