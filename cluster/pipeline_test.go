package cluster

import (
	"fmt"
	"slices"
	"testing"
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
