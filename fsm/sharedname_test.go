package fsm

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// TestStringKeySharesItsName: a new string key of a short value keeps its
// name and its value in one allocation, two live heap objects a key with
// its Value instead of three (takeName), and the name stays the key's
// whatever later happens to the value: in-place bit writes, APPEND,
// SETRANGE, a longer value, INCR, RENAME.
func TestStringKeySharesItsName(t *testing.T) {
	const n = 20_000
	const val = "a value of 20 bytes." // past the allocator's 16-byte tiny blocks
	objects := func(fill func() *FSM) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := fill()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(m)
		return float64(int64(after.HeapObjects)-int64(before.HeapObjects)) / n
	}
	f := New(Options{})
	defer f.Close()
	if per := objects(func() *FSM {
		for i := 0; i < n; i++ {
			f.Apply(1, Command{Args: argv("SET", "key:"+strconv.Itoa(i), val)})
		}
		return f
	}); per > 2.5 {
		t.Fatalf("%.2f live heap objects a string key, want about 2", per)
	} else {
		t.Logf("%.2f live heap objects a string key", per)
	}
	// A node restored from a snapshot keeps the same layout.
	var snap bytes.Buffer
	if err := f.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	g := New(Options{})
	defer g.Close()
	if per := objects(func() *FSM {
		if err := g.Restore(bytes.NewReader(snap.Bytes())); err != nil {
			t.Fatal(err)
		}
		return g
	}); per > 2.5 {
		t.Fatalf("after a restore: %.2f live heap objects a string key, want about 2", per)
	} else {
		t.Logf("after a restore: %.2f live heap objects a string key", per)
	}

	steps := [][]string{
		{"SET", "name-a", "12"},
		{"SETBIT", "name-a", "3", "1"}, // in place once the bit commands own it
		{"SETBIT", "name-a", "5", "1"},
		{"APPEND", "name-a", "xyz"},
		{"SETRANGE", "name-a", "0", "AB"},
		{"SET", "name-a", "a value longer than the sixty-four bytes that share a name's allocation"},
		{"SET", "name-b", "41"},
		{"INCR", "name-b"},
		{"SETBIT", "name-c", "100", "1"},
		{"SETBIT", "name-c", "7", "1"},
		{"RENAME", "name-c", "name-d"},
		{"SETBIT", "name-d", "0", "1"},
	}
	for _, s := range steps {
		if r := f.Apply(1, Command{Args: argv(s...)}).Reply; r.Type == resp.Error {
			t.Fatalf("%q: %q", s, r.AppendProto(nil, 2))
		}
	}
	got := f.Read(1, Command{Args: argv("KEYS", "name-*")}).Reply
	var names []string
	for _, e := range got.Elems {
		names = append(names, string(e.Str))
	}
	if want := "name-a name-b name-d"; strings.Join(names, " ") != want {
		t.Fatalf("KEYS name-*: %v, want %s", names, want)
	}
	for key, want := range map[string]string{
		"name-a": "a value longer than the sixty-four bytes that share a name's allocation",
		"name-b": "42",
	} {
		if r := f.Read(1, Command{Args: argv("GET", key)}).Reply; string(r.Str) != want {
			t.Fatalf("GET %s: %q, want %q", key, r.Str, want)
		}
	}
	if r := f.Read(1, Command{Args: argv("BITCOUNT", "name-d")}).Reply; r.Int != 3 {
		t.Fatalf("BITCOUNT name-d: %d, want 3", r.Int)
	}
	runtime.KeepAlive(f)
}
