package fsm

import "testing"

// FUNCTION RESTORE REPLACE that moves a function from library x to a
// library restored before it (a < x): the build before the rule lost the
// name from its index (FCALL foo: not found) until a snapshot restore
// rebuilt it; commands of the old rule still do so (this test's
// exact-rule half, before restoreMoveFolding, passes on main at cce4561).
// Under the folding rule the move is found,
// as Redis finds it.
func TestFunctionRestoreMoveExact(t *testing.T) {
	payload := functionDump(t,
		`FUNCTION LOAD "#!lua name=x\nredis.register_function('bar', function() return 'x' end)"`,
		`FUNCTION LOAD "#!lua name=a\nredis.register_function('foo', function() return 'a' end)"`,
	)
	f := New(Options{})
	defer f.Close()
	f.Apply(1000, Command{Args: ctSplit(`FUNCTION LOAD "#!lua name=x\nredis.register_function('foo', function() return 'old x' end)"`)})
	if got := ctFormat(f.Apply(1000, Command{Args: [][]byte{[]byte("FUNCTION"), []byte("RESTORE"), payload, []byte("REPLACE")}}).Reply); got != `+OK` {
		t.Fatalf("RESTORE REPLACE: %s", got)
	}
	for _, s := range []ctStep{
		{`FCALL foo 0`, `-ERR Function not found`},
		{`FCALL bar 0`, `"x"`},
		// foo is held by a, unindexed: a second library takes it
		{`FUNCTION LOAD "#!lua name=z\nredis.register_function('foo', function() return 'z' end)"`, `"z"`},
		{`FCALL foo 0`, `"z"`},
	} {
		if got := ctFormat(f.Apply(1000, Command{Args: ctSplit(s.cmd)}).Reply); got != s.want {
			t.Errorf("%s: %s, want %s", s.cmd, got, s.want)
		}
	}
	restoreMoveFolding(t, f, payload)
}

// restoreMoveFolding: lost holds foo in libraries a and z (the exact
// index names z). Its snapshot restores (the build before refused it: a
// node could not start), and the restored node answers as lost does:
// a folding FCALL foo finds a (the first library holding it), an old-rule
// one z, and after the old rule's FUNCTION DELETE a, nothing. A folding
// RESTORE REPLACE that moves a function keeps it found.
func restoreMoveFolding(t *testing.T, lost *FSM, payload []byte) {
	restored := restoredCopy(t, lost, Options{})
	for _, s := range []struct {
		fold      bool
		cmd, want string
	}{
		{true, `FCALL foo 0`, `"a"`},
		{false, `FCALL foo 0`, `"z"`},
		{false, `FUNCTION DELETE a`, `+OK`},
		{false, `FCALL foo 0`, `-ERR Function not found`},
		{true, `FCALL foo 0`, `"z"`},
	} {
		for name, f := range map[string]*FSM{"replayed": lost, "restored": restored} {
			if got := ctFormat(f.Apply(1000, Command{Args: ctSplit(s.cmd), FoldFunctionNames: s.fold}).Reply); got != s.want {
				t.Errorf("%s: %s (fold %v): %s, want %s", name, s.cmd, s.fold, got, s.want)
			}
		}
	}
	f := New(Options{})
	defer f.Close()
	f.Apply(1000, Command{Args: ctSplit(`FUNCTION LOAD "#!lua name=x\nredis.register_function('foo', function() return 'old x' end)"`)})
	if got := ctFormat(f.Apply(1000, Command{Args: [][]byte{[]byte("FUNCTION"), []byte("RESTORE"), payload, []byte("REPLACE")}, FoldFunctionNames: true}).Reply); got != `+OK` {
		t.Fatalf("folding RESTORE REPLACE: %s", got)
	}
	for _, fold := range []bool{false, true} {
		if got := ctFormat(f.Apply(1000, Command{Args: ctSplit(`FCALL foo 0`), FoldFunctionNames: fold}).Reply); got != `"a"` {
			t.Errorf("FCALL foo (fold %v) after a folding RESTORE REPLACE: %s", fold, got)
		}
	}
}
