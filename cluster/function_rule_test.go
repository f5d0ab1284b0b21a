package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// Function names through the log (upgrade.go, envelope version 4): entries
// the build before the rule wrote (version 1) keep comparing names with
// case when applied and replayed; what this leader writes for FCALL,
// FCALL_RO, FUNCTION LOAD and RESTORE is marked (version 4) and folds, and
// with PreserveDowngrade it writes version 1 and the old rule applies. A
// node restarted over a log holding both kinds, replaying it or restoring
// a snapshot of it, answers as before the restart.

const (
	ruleLibC = "#!lua name=c\nredis.register_function('aBC', function() return 'c' end)"
	ruleLibB = "#!lua name=b\nredis.register_function('Abc', function() return 'b' end)"
)

// replyText is a reply as the probes below compare it.
func replyText(r resp.Reply) string {
	switch r.Type {
	case resp.Error:
		return "-" + string(r.Str)
	case resp.Nil:
		return "nil"
	case resp.Array, resp.Map, resp.Set:
		parts := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			parts[i] = replyText(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return r.String()
}

// entryVersions returns the envelope versions of the log entry at index:
// one, or a batch's (2) and each of its commands'.
func entryVersions(t *testing.T, n *Node, index uint64) string {
	t.Helper()
	var l raft.Log
	if err := n.logStore.GetLog(index, &l); err != nil {
		t.Fatal(err)
	}
	if l.Data[0] != batchVersion {
		return fmt.Sprint(l.Data[0])
	}
	r := envReader{b: l.Data[1:]}
	out := "2:"
	for range r.count() {
		out += fmt.Sprint(r.bytes()[0])
	}
	return out
}

type ruleProbe struct {
	old      bool // proposed as the build before version 4 wrote it
	cmd      fsm.Command
	want     string
	versions string // the entry's envelope versions, when written by the node
}

func TestFunctionRuleThroughTheLog(t *testing.T) {
	dc := startDiskCluster(t, 1, func(i int, cfg *Config) {
		// no clock ticks: the log holds only what the test writes
		cfg.Clock = stoppedClock{time.Unix(1_700_000_000, 0)}
	})
	ctx := context.Background()
	run := func(n *Node, p ruleProbe) (string, uint64) {
		t.Helper()
		var res fsm.Result
		var err error
		if p.old {
			ts, ok := n.stamp()
			if !ok {
				t.Fatal("not the leader")
			}
			res, err = n.prop.propose(ctx, mainEnvelope(Entry{Time: ts, Cmd: p.cmd}))
		} else {
			res, err = n.Apply(ctx, p.cmd)
		}
		if err != nil {
			t.Fatalf("%q %q: %v", p.cmd.Args, p.cmd.Tx, err)
		}
		return replyText(res.Reply), res.LogIndex
	}
	check := func(n *Node, stage string, probes []ruleProbe) {
		t.Helper()
		for _, p := range probes {
			got, index := run(n, p)
			if got != p.want {
				t.Errorf("%s: %q %q (old %v)\n got %s\nwant %s", stage, p.cmd.Args, p.cmd.Tx, p.old, got, p.want)
			}
			if v := entryVersions(t, n, index); !p.old && v != p.versions {
				t.Errorf("%s: %q %q written in envelope %s, want %s", stage, p.cmd.Args, p.cmd.Tx, v, p.versions)
			}
		}
	}
	n := dc.nodes[0]
	// What the build before the rule wrote: both libraries load.
	check(n, "old entries", []ruleProbe{
		{old: true, cmd: cmd("FUNCTION", "LOAD", ruleLibC), want: "c"},
		{old: true, cmd: cmd("FUNCTION", "LOAD", ruleLibB), want: "b"},
	})
	probes := []ruleProbe{
		{old: true, cmd: cmd("FCALL", "abc", "0"), want: "-ERR Function not found"},
		{old: true, cmd: cmd("FCALL", "aBC", "0"), want: "c"},
		{old: true, cmd: fsm.Command{Tx: [][][]byte{args("FCALL_RO", "Abc", "0"), args("FCALL", "ABC", "0")}}, want: "[-ERR Can not execute a script with write flag using *_ro command. -ERR Function not found]"},
		{cmd: cmd("FCALL", "abc", "0"), want: "b", versions: "4"}, // b before c in name order
		{cmd: cmd("fcall", "aBC", "0"), want: "c", versions: "4"}, // the exact name first
		{cmd: cmd("FCALL_RO", "ABC", "0"), want: "-ERR Can not execute a script with write flag using *_ro command.", versions: "4"},
		{cmd: fsm.Command{Tx: [][][]byte{args("SET", "k", "v"), args("FCALL", "ABC", "0")}}, want: "[OK b]", versions: "4"},
		{cmd: cmd("FUNCTION", "LOAD", "#!lua name=d\nredis.register_function('ABC', function() return 'd' end)"), want: "-ERR Function ABC already exists", versions: "4"},
		{cmd: cmd("SET", "k", "v"), want: "OK", versions: "1"}, // unmarked
		{cmd: cmd("FUNCTION", "LIST"), want: "[[library_name b engine LUA functions [[name Abc description nil flags []]]] [library_name c engine LUA functions [[name aBC description nil flags []]]]]", versions: "1"},
	}
	check(n, "before the restart", probes)
	// A group (pipeline.go) marks each command as a lone one.
	rs, err := n.ApplyGroup(ctx, []fsm.Command{cmd("FCALL", "abc", "0"), cmd("SET", "k2", "v")})
	if err != nil || len(rs) != 2 || replyText(rs[0].Reply) != "b" {
		t.Fatalf("group: %v %v", rs, err)
	}
	if v := entryVersions(t, n, rs[0].LogIndex); v != "2:41" {
		t.Errorf("group written in envelopes %s, want a batch of 4 and 1", v)
	}

	n = dc.restartWith(t, 0, func(*Config) {})
	dc.leader(-1)
	check(n, "replayed after a restart", probes)

	snapshotIndex(t, n)
	n = dc.restartWith(t, 0, func(*Config) {})
	dc.leader(-1)
	check(n, "restored from a snapshot", probes)

	// With PreserveDowngrade: version 1 and the old rule, nothing refused.
	n = dc.restartWith(t, 0, func(c *Config) { c.PreserveDowngrade = true })
	dc.leader(-1)
	check(n, "preserving", []ruleProbe{
		{cmd: cmd("FCALL", "abc", "0"), want: "-ERR Function not found", versions: "1"},
		{cmd: cmd("FUNCTION", "LOAD", "#!lua name=e\nredis.register_function('abC', function() return 'e' end)"), want: "e", versions: "1"},
		{cmd: fsm.Command{Tx: [][][]byte{args("FCALL", "abC", "0")}}, want: "[e]", versions: "1"},
	})
	after := []ruleProbe{
		{cmd: cmd("FCALL", "abC", "0"), want: "e", versions: "4"},
		{cmd: cmd("FCALL", "ABC", "0"), want: "b", versions: "4"},
		{old: true, cmd: cmd("FCALL", "abc", "0"), want: "-ERR Function not found"},
	}
	n = dc.restartWith(t, 0, func(c *Config) { c.PreserveDowngrade = false })
	dc.leader(-1)
	check(n, "after preserving", after)
	check(n, "the hand-over", []ruleProbe{
		{cmd: cmd("FUNCTION", "DELETE", "b"), want: "OK", versions: "1"},
		{cmd: cmd("FCALL", "abc", "0"), want: "c", versions: "4"},
	})
	n = dc.restartWith(t, 0, func(*Config) {})
	dc.leader(-1)
	check(n, "the hand-over replayed", []ruleProbe{{cmd: cmd("FCALL", "abc", "0"), want: "c", versions: "4"}})
}

// The rule is the leader's: a command forwarded to it, alone or as a
// group (ServeForward, as a follower sends it), is marked by the leader
// (folding), or not with PreserveDowngrade on the leader, whatever mark
// its envelope had; every member applies the entries to the same state.
func TestFunctionRuleForwarded(t *testing.T) {
	ctx := context.Background()
	for _, preserve := range []bool{false, true} {
		c := startTestClusterWith(t, 3, func(i int, cfg *Config) { cfg.PreserveDowngrade = preserve })
		l := c.nodes[c.leader(-1)]
		if res, err := l.Apply(ctx, cmd("FUNCTION", "LOAD", ruleLibB)); err != nil || replyText(res.Reply) != "b" {
			t.Fatalf("FUNCTION LOAD: %v %v", res.Reply, err)
		}
		want := map[bool]string{false: "b", true: "-ERR Function not found"}[preserve]
		for _, mark := range []bool{false, true} {
			fc := cmd("FCALL", "abc", "0")
			fc.FoldFunctionNames = mark
			env := AppendEntry(nil, Entry{Cmd: fc})
			r := ServeForward(ctx, l, []byte(modeApply), env)
			if r.Type != resp.Array || len(r.Elems) != 4 || replyText(r.Elems[0]) != want {
				t.Errorf("preserve %v, mark %v: forwarded FCALL abc: %s, want %s first", preserve, mark, replyText(r), want)
			}
			r = ServeForward(ctx, l, []byte(modeGroup), AppendBatch(nil, env, AppendEntry(nil, Entry{Cmd: cmd("SET", "k", "v")})))
			if r.Type != resp.Array || len(r.Elems) != 2 || len(r.Elems[0].Elems) != 4 || replyText(r.Elems[0].Elems[0]) != want {
				t.Errorf("preserve %v, mark %v: forwarded group: %s, want %s first", preserve, mark, replyText(r), want)
			}
		}
		c.converged()
	}
}
