package fsm

import (
	"bytes"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// countYields replaces walkYield for the test with a counter.
func countYields(t *testing.T) *int {
	n := new(int)
	old := walkYield
	walkYield = func() { *n++ }
	t.Cleanup(func() { walkYield = old })
	return n
}

// TestSortYieldingBoundsWorkBetweenYields: sortYielding sorts, and between
// two yields it compares at most a run's sort or a merge's walkRun
// elements, whatever the length: a sort of all the keys in one call held
// the only processor of a cluster member for 300 ms (the event loop
// waited for the runtime's 10 ms preemption again and again).
func TestSortYieldingBoundsWorkBetweenYields(t *testing.T) {
	run := walkRun
	walkRun = 64
	t.Cleanup(func() { walkRun = run })
	since, most := 0, 0
	old := walkYield
	walkYield = func() { most, since = max(most, since), 0 }
	t.Cleanup(func() { walkYield = old })
	cmp := func(a, b string) int { since++; return strings.Compare(a, b) }
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 63, 64, 65, 1000, 20_000} {
		s := make([]string, n)
		for i := range s {
			s[i] = strconv.Itoa(r.Intn(n + 1)) // duplicates too
		}
		want := slices.Clone(s)
		slices.Sort(want)
		since, most = 0, 0
		got := sortYielding(s, cmp)
		most = max(most, since)
		if !slices.Equal(got, want) {
			t.Fatalf("%d strings: not sorted", n)
		}
		// A run of 64 sorts in well under 64·64 comparisons; a merge
		// compares once per element moved.
		if most > walkRun*walkRun {
			t.Fatalf("%d strings: %d comparisons without a yield", n, most)
		}
	}
}

// TestWalkKeysEncodedInPieces: a KEYS walk for a caller that takes its
// reply encoded (Command.Encoded) answers the bytes of the reply a
// one-step KEYS gives, in every protocol, in pieces of at most walkPiece
// bytes, yielding between them; the walk yields between its steps and
// while it sorts, so that no stretch of its work holds the processor.
func TestWalkKeysEncodedInPieces(t *testing.T) {
	minKeys, step, run, piece := walkMinKeys, walkStep, walkRun, walkPiece
	walkMinKeys, walkStep, walkRun, walkPiece = 50, 100, 100, 1024
	t.Cleanup(func() { walkMinKeys, walkStep, walkRun, walkPiece = minKeys, step, run, piece })
	yields := countYields(t)
	f := New(Options{})
	now := int64(1_000_000)
	const n = 5000
	for i := 0; i < n; i++ {
		f.Apply(now, Command{Args: toArgs([]string{"SET", "key:" + strconv.Itoa(i*7919%n), "v"})})
	}
	f.Apply(now, Command{Args: toArgs([]string{"SET", "long:" + strings.Repeat("x", 3000), "v"})}) // longer than a piece
	var mu sync.Mutex
	for _, pattern := range []string{"*", "key:1*"} {
		cmd := Command{Args: toArgs([]string{"KEYS", pattern}), Encoded: true}
		mu.Lock()
		w := f.BeginWalk(now, cmd)
		mu.Unlock()
		if w == nil {
			t.Fatal("not a walk")
		}
		*yields = 0
		got := w.Run(&mu)
		if got.Reply.Type != resp.Encoded {
			t.Fatalf("KEYS %s: reply type %v, want encoded pieces", pattern, got.Reply.Type)
		}
		pieces := got.Reply.EncodedPieces()
		for i, p := range pieces {
			if len(p) > walkPiece && !bytes.HasPrefix(p, []byte("$3005\r\nlong:")) {
				t.Fatalf("KEYS %s: piece %d of %d bytes", pattern, i, len(p))
			}
		}
		walkMinKeys = 1 << 30
		want := f.Read(now, Command{Args: cmd.Args}).Reply
		walkMinKeys = 50
		if pattern == "*" && (len(want.Elems) != n+1 || len(pieces) < 20) {
			t.Fatalf("KEYS *: %d keys in %d pieces", len(want.Elems), len(pieces))
		}
		for _, proto := range []int{2, 3, resp.ProtoMember} {
			if g, w := got.Reply.AppendProto(nil, proto), want.AppendProto(nil, proto); !bytes.Equal(g, w) {
				t.Fatalf("KEYS %s, RESP%d: encoded reply differs from a one-step KEYS's (%d and %d bytes)", pattern, proto, len(g), len(w))
			}
		}
		// Steps, sorted runs, merges and pieces each yield.
		if min := 3*len(want.Elems)/walkStep + len(pieces) - 1; *yields < min {
			t.Fatalf("KEYS %s: %d yields, want at least %d", pattern, *yields, min)
		}
	}
}

// TestScanEncodedLikeReply: SCAN for a caller that takes its reply encoded
// answers, call after call of a full iteration, the bytes of the reply
// value it answers otherwise, in every protocol, with MATCH, TYPE and
// COUNT, over a database with expired keys and one of another type; a
// script's SCAN still gets reply values.
func TestScanEncodedLikeReply(t *testing.T) {
	f := New(Options{})
	now := int64(1_000_000)
	for i := 0; i < 3000; i++ {
		f.Apply(now, Command{Args: toArgs([]string{"SET", "key:" + strconv.Itoa(i), "v"})})
	}
	f.Apply(now, Command{Args: toArgs([]string{"HSET", "key:h", "f", "v"})})
	f.Apply(now, Command{Args: toArgs([]string{"SET", "gone", "v", "PX", "1"})})
	now += 10
	for _, extra := range [][]string{nil, {"COUNT", "1000"}, {"MATCH", "key:1*"}, {"TYPE", "hash"}, {"MATCH", "nothing*", "COUNT", "7"}} {
		cursor, calls := "0", 0
		for {
			args := toArgs(append([]string{"SCAN", cursor}, extra...))
			plain := f.Read(now, Command{Args: args}).Reply
			enc := f.Read(now, Command{Args: args, Encoded: true}).Reply
			if plain.Type != resp.Array || enc.Type != resp.Encoded {
				t.Fatalf("SCAN %s %v: types %v and %v", cursor, extra, plain.Type, enc.Type)
			}
			for _, proto := range []int{2, 3, resp.ProtoMember} {
				if g, w := enc.AppendProto(nil, proto), plain.AppendProto(nil, proto); !bytes.Equal(g, w) {
					t.Fatalf("SCAN %s %v RESP%d: encoded %q, reply %q", cursor, extra, proto, g, w)
				}
			}
			cursor, calls = string(plain.Elems[0].Str), calls+1
			if cursor == "0" {
				break
			}
		}
		if calls < 2 && extra == nil {
			t.Fatalf("SCAN %v: %d calls", extra, calls)
		}
	}
	r := f.Apply(now, Command{Args: toArgs([]string{"EVAL", "return redis.call('SCAN', '0', 'COUNT', '5')[2]", "0"}), Encoded: true}).Reply
	if r.Type != resp.Array || len(r.Elems) < 5 {
		t.Fatalf("a script's SCAN: %q", r.AppendProto(nil, 2))
	}
}

// TestCompactYieldingBoundsWorkBetweenYields: the walk's compaction of
// its sorted keys gives slices.CompactFunc's answer, compares at most
// walkRun elements between two yields, and leaves no name alive in the
// tail it drops, which it clears walkClear elements at a time.
func TestCompactYieldingBoundsWorkBetweenYields(t *testing.T) {
	run, clr := walkRun, walkClear
	walkRun, walkClear = 64, 100
	t.Cleanup(func() { walkRun, walkClear = run, clr })
	since, most, yields := 0, 0, 0
	old := walkYield
	walkYield = func() { most, since = max(most, since), 0; yields++ }
	t.Cleanup(func() { walkYield = old })
	eq := func(a, b string) bool { since++; return a == b }
	r := rand.New(rand.NewSource(2))
	for _, n := range []int{0, 1, 2, 64, 65, 1000, 20_000} {
		s := make([]string, n)
		for i := range s {
			s[i] = strconv.Itoa(r.Intn(n/3 + 1)) // many duplicates
		}
		slices.Sort(s)
		want := slices.Compact(slices.Clone(s))
		since, most, yields = 0, 0, 0
		got := compactYielding(s, eq)
		most = max(most, since)
		if !slices.Equal(got, want) {
			t.Fatalf("%d strings: got %d, want %d after compaction", n, len(got), len(want))
		}
		if most > walkRun {
			t.Fatalf("%d strings: %d comparisons without a yield", n, most)
		}
		for i, k := range s[len(got):] {
			if k != "" {
				t.Fatalf("%d strings: dropped element %d still holds %q", n, len(got)+i, k)
			}
		}
		if dropped := n - len(got); n > 1 && yields < (n-1)/walkRun+(dropped-1)/walkClear {
			t.Fatalf("%d strings (%d dropped): %d yields", n, dropped, yields)
		}
	}
}
