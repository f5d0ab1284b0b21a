package fsm

import (
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// Function names are case-insensitive in Redis 7.0 (functions.c's
// functionDictType): FCALL and FCALL_RO find a function under any case,
// and a library may not register a name another library holds in another
// case. Before, deadbolt answered "Function not found" for 'FCALL abc' of
// 'Abc' and loaded 'aBC' beside it. (Two names differing only in case in
// one library are left out: redis-server 7.0.15 aborts on FUNCTION
// DELETE of such a library.) The rule is the command's: these run with
// Command.FoldFunctionNames, as the leader writes them (cluster's envelope
// version 4); functionExactTranscript is the same without it.
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

// applyFold applies a transcript command under the folding rule.
func applyFold(f *FSM, cmd string) resp.Reply {
	return f.Apply(1000, Command{Args: ctSplit(cmd), FoldFunctionNames: true}).Reply
}

func TestFunctionCaseTranscript(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	for _, s := range functionCaseTranscript {
		if got := ctFormat(applyFold(f, s.cmd)); got != s.want {
			t.Errorf("%s\n got %s\nwant %s", s.cmd, got, s.want)
		}
	}
}

// The transcript beside redis-server 7.0.15: its replies are the recorded
// ones, and so are the state machine's under the folding rule.
func TestFunctionCaseTranscriptAgainstRedis(t *testing.T) {
	rc := ctDialRedis(t)
	rc.do(t, ctSplit("FLUSHALL"))
	f := New(Options{})
	defer f.Close()
	for _, s := range functionCaseTranscript {
		if got := ctFormat(rc.do(t, ctSplit(s.cmd))); got != s.want {
			t.Errorf("redis-server: %s\n got %s\nwant %s", s.cmd, got, s.want)
		}
		if got := ctFormat(applyFold(f, s.cmd)); got != s.want {
			t.Errorf("deadbolt: %s\n got %s\nwant %s", s.cmd, got, s.want)
		}
	}
}

// functionExactTranscript: commands without FoldFunctionNames (log entries
// written before the rule, or with --preserve-downgrade) compare function
// names with case, reply for reply as the build before the rule (this
// transcript passes unchanged on commit cce4561).
var functionExactTranscript = []ctStep{
	{`FUNCTION LOAD "#!lua name=c\nredis.register_function('aBC', function() return 'c' end)"`, `"c"`},
	{`FUNCTION LOAD "#!lua name=b\nredis.register_function('Abc', function() return 'b' end)"`, `"b"`},
	{`FCALL abc 0`, `-ERR Function not found`},
	{`FCALL Abc 0`, `"b"`},
	{`FCALL aBC 0`, `"c"`},
	{`FCALL_RO ABC 0`, `-ERR Function not found`},
	{`FUNCTION LOAD REPLACE "#!lua name=b\nredis.register_function('aBC', function() return 'b2' end)"`, `-ERR Function aBC already exists`},
	{`FUNCTION LOAD REPLACE "#!lua name=b\nredis.register_function('ABC', function() return 'b2' end)"`, `"b"`},
	{`FCALL ABC 0`, `"b2"`},
	{`FUNCTION STATS`, `*4["running_script", $-1, "engines", *2["LUA", *4["libraries_count", :2, "functions_count", :2]]]`},
}

func TestFunctionExactTranscript(t *testing.T) { ctTranscript(t, functionExactTranscript) }
