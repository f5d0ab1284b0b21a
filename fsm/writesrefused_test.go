package fsm

import (
	"bytes"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// A script run while writes are refused changes no replicated state, not
// even the script engine's random generator or cjson settings (they are
// in snapshots: a node that ran one would draw other numbers than the
// others afterwards); a write it calls gets the refusal, and the script
// commands Redis refuses before running are told apart from those it runs.
func TestReadWritesRefusedChangesNothing(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	g := New(Options{})
	defer g.Close()
	for _, m := range []*FSM{f, g} {
		m.Apply(1000, Command{Args: argv("SET", "k", "v")})
		m.Apply(1000, Command{Args: argv("EVAL", "return math.random(1000)", "0")})
	}
	var before bytes.Buffer
	if err := f.Snapshot(&before); err != nil {
		t.Fatal(err)
	}
	const refusal = "MISCONF refused for the test"
	body := "math.randomseed(7); cjson.encode_keep_buffer(false); local x = math.random(1000)\n" +
		"local r = redis.pcall('set', 'k', 'w')\nreturn {redis.call('get', 'k'), r['err']}"
	cmd := Command{Args: argv("EVAL", body, "0")}
	if !f.RunsWhileWritesRefused(cmd) {
		t.Fatal("EVAL without a shebang is not run while writes are refused")
	}
	r := f.ReadWritesRefused(2000, cmd, refusal)
	if len(r.Reply.Elems) != 2 || r.Reply.Elems[0].String() != "v" || r.Reply.Elems[1].String() != refusal {
		t.Fatalf("reply %q", r.Reply.AppendProto(nil, 2))
	}
	var after bytes.Buffer
	if err := f.Snapshot(&after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the state (snapshot bytes) changed")
	}
	// The next logged script draws what it draws on a node that ran none.
	next := Command{Args: argv("EVAL", "return math.random(1000000)", "0")}
	if a, b := f.Apply(3000, next).Reply.Int, g.Apply(3000, next).Reply.Int; a != b {
		t.Fatalf("math.random after a refused-writes script: %d, on a node without it %d", a, b)
	}
	lib := "#!lua name=counter\nlocal n = 0\n" +
		"redis.register_function{function_name='peek', callback=function() n = n + 1 return n end, flags={'no-writes'}}"
	if r := f.Apply(3000, Command{Args: argv("FUNCTION", "LOAD", lib)}); r.Reply.Type == resp.Error {
		t.Fatalf("FUNCTION LOAD: %s", r.Reply.Str)
	}
	if r := f.Apply(3000, Command{Args: argv("SCRIPT", "LOAD", "return redis.call('get', KEYS[1])")}); r.Reply.Type == resp.Error {
		t.Fatalf("SCRIPT LOAD: %s", r.Reply.Str)
	}
	for _, tc := range []struct {
		args []string
		runs bool
	}{
		{[]string{"EVAL", "return 1", "0"}, true},
		{[]string{"EVAL", "#!lua\nreturn 1", "0"}, false},
		{[]string{"EVAL", "#!lua flags=no-writes\nreturn 1", "0"}, true},
		{[]string{"EVAL", "#!lua flags=bogus\nreturn 1", "0"}, true}, // runs to its error
		{[]string{"EVAL_RO", "#!lua\nreturn 1", "0"}, false},
		{[]string{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"}, true},
		{[]string{"FCALL", "nope", "0"}, true},
		// A function is refused, no-writes or not: its library's locals
		// are each node's (a run outside the log would change them here
		// only; found in review).
		{[]string{"FCALL_RO", "peek", "0"}, false},
		{[]string{"FCALL", "peek", "0"}, false},
		{[]string{"SCRIPT", "LOAD", "return 1"}, false},
		{[]string{"SCRIPT", "LOAD", "return redis.call('get', KEYS[1])"}, true}, // cached: changes nothing
		{[]string{"SCRIPT", "EXISTS", "ffffffffffffffffffffffffffffffffffffffff"}, true},
		{[]string{"SCRIPT", "FLUSH"}, false},
		{[]string{"SET", "k", "v"}, false},
	} {
		if got := f.RunsWhileWritesRefused(Command{Args: argv(tc.args...)}); got != tc.runs {
			t.Errorf("%q: runs %v, want %v", tc.args, got, tc.runs)
		}
	}
}

func argv(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
