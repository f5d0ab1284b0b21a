package fsm

import (
	"bytes"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// The rule for function names is the command's (Command.FoldFunctionNames):
// these check each place that looks a name up, under both rules.

func applyRule(f *FSM, fold bool, cmd string) string {
	return ctFormat(f.Apply(1000, Command{Args: ctSplit(cmd), FoldFunctionNames: fold}).Reply)
}

func mustApply(t *testing.T, f *FSM, fold bool, cmd, want string) {
	t.Helper()
	if got := applyRule(f, fold, cmd); got != want {
		t.Fatalf("%s (fold %v)\n got %s\nwant %s", cmd, fold, got, want)
	}
}

const (
	libC = `FUNCTION LOAD "#!lua name=c\nredis.register_function('aBC', function() return 'c' end)"`
	libB = `FUNCTION LOAD "#!lua name=b\nredis.register_function('Abc', function() return 'b' end)"`
)

// Libraries 'b' (Abc) and 'c' (aBC), loaded by commands of the old rule
// in either order, and the same libraries restored from a snapshot,
// answer every later command alike: the folded name goes to the first
// library in name order, whatever the order they were loaded in.
func TestFunctionClashReplayAndRestoreAgree(t *testing.T) {
	for _, order := range [][]string{{libC, libB}, {libB, libC}} {
		replayed := New(Options{})
		defer replayed.Close()
		mustApply(t, replayed, false, order[0], ctFormat(resp.BulkString(map[string]string{libB: "b", libC: "c"}[order[0]])))
		mustApply(t, replayed, false, order[1], ctFormat(resp.BulkString(map[string]string{libB: "b", libC: "c"}[order[1]])))
		restored := restoredCopy(t, replayed, Options{})
		for _, s := range []struct {
			fold      bool
			cmd, want string
		}{
			{true, `FCALL abc 0`, `"b"`}, // b before c in name order
			{true, `FCALL ABC 0`, `"b"`},
			{true, `FCALL aBC 0`, `"c"`}, // the exact name first
			{false, `FCALL abc 0`, `-ERR Function not found`},
			{true, `FUNCTION LOAD REPLACE "#!lua name=b\nredis.register_function('ABC', function() return 'b2' end)"`, `-ERR Function ABC already exists`}, // c holds it
			{false, `FUNCTION LOAD REPLACE "#!lua name=b\nredis.register_function('ABC', function() return 'b2' end)"`, `"b"`},
			{true, `FCALL abc 0`, `"b2"`},
			{true, `FUNCTION LOAD "#!lua name=a\nredis.register_function('abC', function() return 'a' end)"`, `-ERR Function abC already exists`},
			{true, `FUNCTION DELETE b`, `+OK`},
			{true, `FCALL abc 0`, `"c"`}, // handed on
			{true, `FUNCTION DELETE c`, `+OK`},
			{true, `FCALL abc 0`, `-ERR Function not found`},
		} {
			a, b := applyRule(replayed, s.fold, s.cmd), applyRule(restored, s.fold, s.cmd)
			if a != s.want || b != s.want {
				t.Errorf("%s (fold %v)\n replayed %s\n restored %s\n want     %s", s.cmd, s.fold, a, b, s.want)
			}
		}
	}
}

// FUNCTION RESTORE checks a payload's names under the command's rule.
func TestFunctionRestoreRule(t *testing.T) {
	src := New(Options{})
	defer src.Close()
	mustApply(t, src, false, `FUNCTION LOAD "#!lua name=x\nredis.register_function('Q', function() return 'x' end)"`, `"x"`)
	mustApply(t, src, false, `FUNCTION LOAD "#!lua name=y\nredis.register_function('q', function() return 'y' end)"`, `"y"`)
	payload := src.Apply(1000, Command{Args: ctSplit(`FUNCTION DUMP`)}).Reply.Str
	restore := func(fold bool, extra ...string) string {
		f := New(Options{})
		defer f.Close()
		for _, cmd := range extra {
			applyRule(f, false, cmd)
		}
		return ctFormat(f.Apply(1000, Command{Args: [][]byte{[]byte("FUNCTION"), []byte("RESTORE"), payload}, FoldFunctionNames: fold}).Reply)
	}
	for _, c := range []struct {
		fold  bool
		extra []string
		want  string
	}{
		{false, nil, `+OK`},                           // the payload's two libraries clash in case
		{true, nil, `-ERR Function q already exists`}, // as Redis's own load of the payload
		{false, []string{`FUNCTION LOAD "#!lua name=z\nredis.register_function('Q2', function() end)"`}, `+OK`},
		{true, []string{`FUNCTION LOAD "#!lua name=z\nredis.register_function('ab', function() end)"`}, `-ERR Function q already exists`},
	} {
		if got := restore(c.fold, c.extra...); got != c.want {
			t.Errorf("RESTORE (fold %v, after %q): got %s, want %s", c.fold, c.extra, got, c.want)
		}
	}
	// against a library in force
	f := New(Options{})
	defer f.Close()
	mustApply(t, f, false, `FUNCTION LOAD "#!lua name=w\nredis.register_function('Q', function() return 'w' end)"`, `"w"`)
	single := New(Options{})
	defer single.Close()
	mustApply(t, single, false, `FUNCTION LOAD "#!lua name=v\nredis.register_function('q', function() return 'v' end)"`, `"v"`)
	p := single.Apply(1000, Command{Args: ctSplit(`FUNCTION DUMP`)}).Reply.Str
	if got := ctFormat(f.Apply(1000, Command{Args: [][]byte{[]byte("FUNCTION"), []byte("RESTORE"), p}, FoldFunctionNames: true}).Reply); got != `-ERR Function q already exists` {
		t.Errorf("RESTORE of q beside Q, folding: %s", got)
	}
	if got := ctFormat(f.Apply(1000, Command{Args: [][]byte{[]byte("FUNCTION"), []byte("RESTORE"), p}}).Reply); got != `+OK` {
		t.Errorf("RESTORE of q beside Q, exact: %s", got)
	}
}

// An FCALL queued in MULTI follows the transaction's rule.
func TestFunctionRuleInTransaction(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	mustApply(t, f, false, libB, `"b"`)
	for fold, want := range map[bool]string{true: `*1["b"]`, false: `*1[-ERR Function not found]`} {
		r := f.Apply(1000, Command{Tx: [][][]byte{ctSplit(`FCALL abc 0`)}, FoldFunctionNames: fold}).Reply
		if got := ctFormat(r); got != want {
			t.Errorf("MULTI FCALL abc (fold %v): %s, want %s", fold, got, want)
		}
	}
}

// Outside the log (writes refused) and before a command runs (maxmemory),
// a function is found under the command's rule.
func TestFunctionRuleOutsideTheLog(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	mustApply(t, f, false, `FUNCTION LOAD "#!lua name=w\nredis.register_function('Wr', function() return redis.call('set', 'k', 'v') end)\nredis.register_function{function_name='Ro', callback=function() return 'ro' end, flags={'no-writes'}}"`, `"w"`)
	wr := Command{Args: ctSplit(`FCALL wR 0`)}
	if !f.RunsWhileWritesRefused(wr) { // unknown by exact name: runs, to answer so
		t.Error("exact: FCALL wR does not run while writes are refused")
	}
	wr.FoldFunctionNames = true
	if f.RunsWhileWritesRefused(wr) {
		t.Error("folding: FCALL wR (the write function Wr) runs while writes are refused")
	}
	ro := Command{Args: ctSplit(`FCALL_RO rO 0`)}
	if got := ctFormat(f.ReadWritesRefused(1000, ro, "MISCONF x").Reply); got != `-ERR Function not found` {
		t.Errorf("exact: FCALL_RO rO: %s", got)
	}
	ro.FoldFunctionNames = true
	if got := ctFormat(f.ReadWritesRefused(1000, ro, "MISCONF x").Reply); got != `"ro"` {
		t.Errorf("folding: FCALL_RO rO: %s", got)
	}
	spec, _ := Lookup([]byte("fcall"))
	for fold, want := range map[bool]bool{false: false, true: true} {
		c := &Ctx{f: f, foldNames: fold}
		if got := c.deniedOnOOM(spec, ctSplit(`FCALL wR 0`)); got != want {
			t.Errorf("FCALL wR denied on OOM (fold %v): %v, want %v", fold, got, want)
		}
	}
}

// applyAll applies each command at time 1000 by the old rule, failing the
// test (or benchmark) on an error reply.
func applyAll(tb testing.TB, f *FSM, cmds ...[][]byte) {
	tb.Helper()
	for _, c := range cmds {
		if r := f.Apply(1000, Command{Args: c}).Reply; r.IsError() {
			tb.Fatalf("%q: %s", c, r.String())
		}
	}
}

// splitAll is ctSplit of each transcript command.
func splitAll(cmds ...string) [][][]byte {
	out := make([][][]byte, len(cmds))
	for i, c := range cmds {
		out[i] = ctSplit(c)
	}
	return out
}

// restoredCopy is a new state machine with opts, restored from f's
// snapshot, closed when the test ends.
func restoredCopy(t *testing.T, f *FSM, opts Options) *FSM {
	t.Helper()
	var buf bytes.Buffer
	if err := f.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	r := New(opts)
	t.Cleanup(r.Close)
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return r
}

// functionDump is FUNCTION DUMP's payload of a state machine that loaded
// the libraries (transcript commands).
func functionDump(t *testing.T, loads ...string) []byte {
	t.Helper()
	src := New(Options{})
	defer src.Close()
	applyAll(t, src, splitAll(loads...)...)
	return src.Apply(1000, Command{Args: ctSplit(`FUNCTION DUMP`)}).Reply.Str
}
