package fsm

import "testing"

// functionClash (two libraries holding one name in any case, left by
// old-rule commands) sends every folding look-up through the libraries in
// name order. Once the last such pair is gone (FUNCTION DELETE, a
// replacing LOAD) it clears, so a node that replayed the clash and one
// restored after it (which never saw it) look names up alike, without
// allocating.
func TestFunctionClashClearsWhenDropped(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	applyAll(t, f, splitAll( // old rule: allowed
		`FUNCTION LOAD "#!lua name=a\nredis.register_function('abc', function() return 'a' end)"`,
		`FUNCTION LOAD "#!lua name=b\nredis.register_function('ABC', function() return 'b' end)"`,
		`FUNCTION LOAD "#!lua name=c\nredis.register_function('Abc', function() return 'c' end)"`,
		`FUNCTION LOAD "#!lua name=d\nredis.register_function('other', function() return 'd' end)"`,
	)...)
	steps := []struct {
		cmd   string
		clash bool
	}{
		{`FUNCTION DELETE b`, true}, // a and c still clash
		{`FUNCTION DELETE d`, true},
		{`FUNCTION LOAD REPLACE "#!lua name=c\nredis.register_function('xyz', function() return 'c' end)"`, false},
	}
	if !f.functionClash {
		t.Fatal("no clash after old-rule loads of abc, ABC and Abc")
	}
	for _, s := range steps {
		applyAll(t, f, ctSplit(s.cmd))
		if f.functionClash != s.clash {
			t.Errorf("after %s: functionClash %v, want %v", s.cmd, f.functionClash, s.clash)
		}
	}
	r := restoredCopy(t, f, Options{})
	name := []byte("ABC")
	for which, n := range map[string]*FSM{"replayed": f, "restored": r} {
		if fn, lib, ok := n.lookupFunction(name, true); !ok || lib != "a" || fn.Name != "abc" {
			t.Errorf("%s: folding look-up of ABC: %v %q %q, want a's abc", which, ok, lib, fn.Name)
		}
		lower := []byte("abc") // ABC's folding copies the name once
		if a := testing.AllocsPerRun(100, func() { n.lookupFunction(lower, true) }); a != 0 {
			t.Errorf("%s: folding look-up allocates %v times, want 0", which, a)
		}
	}
}

// BenchmarkFunctionLookupFolded: a folding look-up, and the same after a
// clash between two libraries came and went (it must cost the same).
func BenchmarkFunctionLookupFolded(b *testing.B) {
	for _, clashed := range []bool{false, true} {
		name := map[bool]string{false: "never", true: "cleared"}[clashed]
		b.Run(name, func(b *testing.B) {
			f := New(Options{})
			defer f.Close()
			cmds := []string{`FUNCTION LOAD "#!lua name=a\nredis.register_function('abc', function() return 'a' end)"`}
			for i := range 20 {
				cmds = append(cmds, `FUNCTION LOAD "#!lua name=l`+string(rune('a'+i))+`x\nredis.register_function('f`+string(rune('a'+i))+`', function() return 1 end)"`)
			}
			if clashed {
				cmds = append(cmds, `FUNCTION LOAD "#!lua name=b\nredis.register_function('ABC', function() return 'b' end)"`, `FUNCTION DELETE b`)
			}
			applyAll(b, f, splitAll(cmds...)...)
			name := []byte("abc")
			b.ReportAllocs()
			for b.Loop() {
				f.lookupFunction(name, true)
			}
		})
	}
}
