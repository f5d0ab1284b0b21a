package fsm

import (
	"bytes"
	"testing"
)

// Libraries are in snapshots: a restored state machine lists them and runs
// their functions, although its script engine never loaded them.
func TestFunctionLibraryInSnapshot(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	load := Command{Args: [][]byte{[]byte("FUNCTION"), []byte("LOAD"),
		[]byte("#!lua name=lib\nredis.register_function('inc', function(keys) return redis.call('incr', keys[1]) end)")}}
	if r := f.Apply(1000, load).Reply; r.String() != "lib" {
		t.Fatalf("FUNCTION LOAD: %v", r)
	}
	if r := f.Apply(1001, args("FCALL inc 1 n")).Reply; r.Int != 1 {
		t.Fatalf("FCALL: %v", r)
	}
	var buf bytes.Buffer
	if err := f.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[len(snapshotMagic)]; v != 2 {
		t.Errorf("a snapshot with a library is version %d", v)
	}
	g := New(Options{})
	defer g.Close()
	if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if r := g.Apply(2000, args("FCALL inc 1 n")).Reply; r.Int != 2 {
		t.Fatalf("FCALL after restore: %v", r)
	}
	// The same snapshot restored over a state machine that has another
	// library of the same name runs the snapshot's.
	h := New(Options{})
	defer h.Close()
	other := Command{Args: [][]byte{[]byte("FUNCTION"), []byte("LOAD"),
		[]byte("#!lua name=lib\nredis.register_function('inc', function() return 'other' end)")}}
	h.Apply(1000, other)
	h.Apply(1001, args("FCALL inc 0"))
	if err := h.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if r := h.Apply(2000, args("FCALL inc 1 n")).Reply; r.Int != 2 {
		t.Fatalf("FCALL after restoring over another library: %v", r)
	}
}
