package fsm

import (
	"bytes"
	"testing"
)

// Function names are case-insensitive in Redis 7.0 (functions.c's
// functionDictType): FCALL and FCALL_RO find a function under any case,
// and a library may not register a name another library holds in another
// case. Before, deadbolt answered "Function not found" for 'FCALL abc' of
// 'Abc' and loaded 'aBC' beside it. (Two names differing only in case in
// one library are left out: redis-server 7.0.15 aborts on FUNCTION
// DELETE of such a library.)
var functionCaseTranscript = []ctStep{
	{`FUNCTION FLUSH`, `+OK`},
	{`FUNCTION LOAD "#!lua name=b\nredis.register_function('Abc', function() return 'b' end)"`, `"b"`},
	{`FUNCTION LOAD "#!lua name=c\nredis.register_function('aBC', function() return 'c' end)"`, `-ERR Function aBC already exists`},
	{`FCALL abc 0`, `"b"`},
	{`FCALL ABC 0`, `"b"`},
	{`FCALL Abc 0`, `"b"`},
	{`FCALL_RO abc 0`, `-ERR Can not execute a script with write flag using *_ro command.`},
	{`FUNCTION LOAD "#!lua name=z\nredis.register_function{function_name='Ro', callback=function() return redis.call('get', 'k') end, flags={'no-writes'}}"`, `"z"`},
	{`FCALL_RO rO 0`, `$-1`},
	{`FCALL RO 0`, `$-1`},
	{`FUNCTION LOAD REPLACE "#!lua name=b\nredis.register_function('ABC', function() return 'b2' end)"`, `"b"`},
	{`FCALL abc 0`, `"b2"`},
	{`FUNCTION LOAD REPLACE "#!lua name=c\nredis.register_function('abc', function() return 'c' end)"`, `-ERR Function abc already exists`},
	{`FUNCTION DELETE b`, `+OK`},
	{`FCALL abc 0`, `-ERR Function not found`},
	{`FUNCTION LOAD "#!lua name=c\nredis.register_function('aBC', function() return 'c' end)"`, `"c"`},
	{`FCALL Abc 0`, `"c"`},
	{`FCALL abd 0`, `-ERR Function not found`},
	{`FUNCTION FLUSH`, `+OK`},
	{`FCALL abc 0`, `-ERR Function not found`},
}

func TestFunctionCaseTranscript(t *testing.T) { ctTranscript(t, functionCaseTranscript) }

func TestFunctionCaseTranscriptAgainstRedis(t *testing.T) {
	ctTranscriptAgainstRedis(t, functionCaseTranscript)
}

// A snapshot written by a build that compared function names with case
// may hold 'Abc' in one library and 'aBC' in another; it restores (a node
// that refused it would not start), FCALL finds the first library's, and
// dropping that library hands the name to the other.
func TestFunctionCaseClashInSnapshot(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	if r := f.Apply(1000, Command{Args: ctSplit(`FUNCTION LOAD "#!lua name=c\nredis.register_function('aBC', function() return 'c' end)"`)}).Reply; r.String() != "c" {
		t.Fatalf("FUNCTION LOAD c: %q", r.AppendProto(nil, 2))
	}
	// what the older build let in: the second library beside the first
	if _, r := f.loadLibrary([]byte("#!lua name=b\nredis.register_function('Abc', function() return 'b' end)"), false, true); r.IsError() {
		t.Fatalf("load b: %s", r.String())
	}
	var buf bytes.Buffer
	if err := f.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	g := New(Options{})
	defer g.Close()
	if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("restoring libraries whose names clash in case: %v", err)
	}
	for _, s := range []ctStep{
		{`FCALL abc 0`, `"b"`}, // b restores first (libraries in name order)
		{`FCALL aBC 0`, `"b"`},
		{`FUNCTION DELETE b`, `+OK`},
		{`FCALL abc 0`, `"c"`},
		{`FUNCTION DELETE c`, `+OK`},
		{`FCALL abc 0`, `-ERR Function not found`},
	} {
		if got := ctFormat(g.Apply(2000, Command{Args: ctSplit(s.cmd)}).Reply); got != s.want {
			t.Errorf("%s\n got %s\nwant %s", s.cmd, got, s.want)
		}
	}
}
