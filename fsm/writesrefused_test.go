package fsm

import (
	"bytes"
	"testing"

	"github.com/deadbolt/deadbolt/luaexec"
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
		"redis.register_function{function_name='peek', callback=function() n = n + 1 return n end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='bump', callback=function() n = n + 1 return n end}"
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
		// As Redis: a no-writes function runs (FCALL or FCALL_RO), one
		// without the flag is refused before it runs, FCALL_RO too
		// (fcallGetCommandFlags flags both write).
		{[]string{"FCALL_RO", "peek", "0"}, true},
		{[]string{"FCALL", "peek", "0"}, true},
		{[]string{"FCALL", "bump", "0"}, false},
		{[]string{"FCALL_RO", "bump", "0"}, false},
		{[]string{"fcall", "PEEK", "0"}, true}, // function names are case-sensitive: unknown, runs to its error
		{[]string{"FCALL", "peek"}, false},     // arity: Redis refuses it before anything
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

// A no-writes function run while writes are refused answers as a logged
// call would, changes no replicated state (snapshot bytes) and leaves its
// library's closures as they were: the next logged call answers on this
// node as on a node that never ran it. A write it calls gets Redis's
// read-only script error (no-writes is checked first), and an unknown
// function its error.
func TestReadWritesRefusedFunctions(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	g := New(Options{})
	defer g.Close()
	lib := "#!lua name=rolib\nlocal n = 0\nlocal C = {prefix = 'lock:'}\n" +
		"redis.register_function{function_name='owner', callback=function(keys) return redis.call('get', C.prefix .. keys[1]) end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='tick', callback=function() n = n + 1 return {n, math.random(1000)} end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='sneak', callback=function(keys) return redis.pcall('set', keys[1], 'x')['err'] end, flags={'no-writes'}}\n"
	for _, m := range []*FSM{f, g} {
		m.Apply(1000, Command{Args: argv("SET", "lock:a", "owner-1")})
		if r := m.Apply(1000, Command{Args: argv("FUNCTION", "LOAD", lib)}); r.Reply.Type == resp.Error {
			t.Fatalf("FUNCTION LOAD: %s", r.Reply.Str)
		}
		m.Apply(1000, Command{Args: argv("FCALL", "tick", "0")}) // draws from math.random
	}
	var before bytes.Buffer
	if err := f.Snapshot(&before); err != nil {
		t.Fatal(err)
	}
	const refusal = "MISCONF refused for the test"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FCALL", "owner", "1", "a"}, "$7\r\nowner-1\r\n"},
		{[]string{"FCALL_RO", "owner", "1", "a"}, "$7\r\nowner-1\r\n"},
		{[]string{"FCALL", "sneak", "1", "lock:a"}, "$58\r\nERR Write commands are not allowed from read-only scripts.\r\n"},
		{[]string{"FCALL", "nope", "0"}, "-ERR Function not found\r\n"},
	} {
		cmd := Command{Args: argv(tc.args...)}
		if !f.RunsWhileWritesRefused(cmd) {
			t.Fatalf("%q is not run while writes are refused", tc.args)
		}
		if got := string(f.ReadWritesRefused(2000, cmd, refusal).Reply.AppendProto(nil, 2)); got != tc.want {
			t.Errorf("%q while writes are refused:\n got  %q\n want %q", tc.args, got, tc.want)
		}
	}
	for i := 0; i < 3; i++ {
		r := f.ReadWritesRefused(2000, Command{Args: argv("FCALL", "tick", "0")}, refusal).Reply
		if len(r.Elems) != 2 || r.Elems[0].Int != 1 {
			t.Fatalf("tick %d while writes are refused: %q", i, r.AppendProto(nil, 2))
		}
	}
	var after bytes.Buffer
	if err := f.Snapshot(&after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the state (snapshot bytes) changed")
	}
	next := Command{Args: argv("FCALL", "tick", "0")}
	if a, b := f.Apply(3000, next).Reply.AppendProto(nil, 2), g.Apply(3000, next).Reply.AppendProto(nil, 2); !bytes.Equal(a, b) {
		t.Fatalf("FCALL tick after functions run while writes were refused: %q, on a node that ran none %q", a, b)
	}
}

// TestReadWritesRefusedFunctionApart: FCALL run outside the log goes
// through luaexec.CallFunctionApart, so it cannot change the library the
// node keeps even where the state check missed a stateful function (made
// to miss here): the next logged call answers as on a node that ran none.
func TestReadWritesRefusedFunctionApart(t *testing.T) {
	restore := luaexec.MissStateForTest()
	f := New(Options{})
	defer f.Close()
	g := New(Options{})
	defer g.Close()
	lib := "#!lua name=countlib\nlocal n = 0\n" +
		"redis.register_function{function_name='count', callback=function() n = n + 1 return n end, flags={'no-writes'}}\n"
	for _, m := range []*FSM{f, g} {
		if r := m.Apply(1000, Command{Args: argv("FUNCTION", "LOAD", lib)}); r.Reply.Type == resp.Error {
			t.Fatalf("FUNCTION LOAD: %s", r.Reply.Str)
		}
	}
	restore()
	count := Command{Args: argv("FCALL", "count", "0")}
	for _, m := range []*FSM{f, g} {
		if r := m.Apply(1000, count).Reply; r.Int != 1 {
			t.Fatalf("first logged count: %q, want 1 (the kept closures count)", r.AppendProto(nil, 2))
		}
	}
	for i := 0; i < 3; i++ {
		if r := f.ReadWritesRefused(2000, count, "MISCONF refused for the test").Reply; r.Int != 1 {
			t.Fatalf("count %d while writes are refused: %q, want 1 (a fresh copy)", i, r.AppendProto(nil, 2))
		}
	}
	a, b := f.Apply(3000, count).Reply, g.Apply(3000, count).Reply
	if a.Int != 2 || b.Int != 2 {
		t.Fatalf("logged count after calls while writes were refused: %d, on a node that ran none %d; want 2 on both", a.Int, b.Int)
	}
}
