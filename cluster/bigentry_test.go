package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// EntrySize is the length AppendEntry writes, for every shape of command.
func TestEntrySizeIsEnvelopeLength(t *testing.T) {
	long := strings.Repeat("x", 300) // a length of two varint bytes
	huge := strings.Repeat("y", 70000)
	for i, e := range []Entry{
		{Cmd: cmd("SET", "k", "v")},
		{Time: 1_790_000_000_000, Cmd: cmd("SET", "k", huge)},
		{Time: -5, Cmd: fsm.Command{DB: 15, Args: args("GET", long)}},
		{Time: 42, Cmd: fsm.Command{Tx: [][][]byte{args("SET", "a", long), args("INCR", "b")}}},
		{Time: 42, Cmd: fsm.Command{Tx: [][][]byte{}}},
		{Time: 7, Cmd: fsm.Command{Args: args("EXEC"), Watch: []fsm.Watch{{DB: 3, Key: long, Version: 1 << 40}, {Key: "k"}}}},
		{Time: 9, Cmd: fsm.Command{Args: args("EVAL", "return 1", "0"), User: "alice"}},
		{Time: 9, Cmd: fsm.Command{Args: args("FCALL", "f", "0"), FoldFunctionNames: true}},
		{Time: 9, Cmd: fsm.Command{Args: args("FCALL", "f", "0"), User: "alice", FoldFunctionNames: true}},
	} {
		if got, want := EntrySize(e), len(AppendEntry(nil, e)); got != want {
			t.Errorf("entry %d: EntrySize %d, envelope %d bytes", i, got, want)
		}
		// Without its stamp (what a follower checks), never more.
		e.Time = 0
		if EntrySize(e) > len(AppendEntry(nil, Entry{Time: 1 << 50, Cmd: e.Cmd})) {
			t.Errorf("entry %d: a follower's estimate exceeds the leader's envelope", i)
		}
	}
}

func sizedLogs(first uint64, sizes ...int) []*raft.Log {
	var out []*raft.Log
	for i, n := range sizes {
		out = append(out, &raft.Log{Index: first + uint64(i), Term: 1, Data: make([]byte, n)})
	}
	return out
}

// trimAppend keeps the entries within the budget, and always the first.
func TestTrimAppend(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		want  int
	}{
		{nil, 0},
		{[]int{10, 10, 10}, 3},
		{[]int{600 << 10, 300 << 10, 200 << 10, 10}, 2},
		{[]int{4 << 20, 10}, 1},
		{[]int{1 << 20, 1}, 1},
	} {
		req := &raft.AppendEntriesRequest{Entries: sizedLogs(1, c.sizes...)}
		trimAppend(req, 1<<20)
		if len(req.Entries) != c.want {
			t.Errorf("sizes %v: %d entries sent, want %d", c.sizes, len(req.Entries), c.want)
		}
	}
}

// countingStore counts the reads that reach the store under the cache.
type countingStore struct {
	raft.LogStore
	reads atomic.Int64
	fail  error
}

func (s *countingStore) GetLog(i uint64, l *raft.Log) error {
	s.reads.Add(1)
	return s.LogStore.GetLog(i, l)
}

func (s *countingStore) StoreLogs(logs []*raft.Log) error {
	if s.fail != nil {
		return s.fail
	}
	return s.LogStore.StoreLogs(logs)
}

// The log cache keeps at most its bytes: the newest entries that fit, none
// larger than the budget; older ones are read from the store.
func TestLogCacheBoundsBytes(t *testing.T) {
	st := &countingStore{LogStore: raft.NewInmemStore()}
	c := newLogCache(st, 8, 1000)
	if err := c.StoreLogs(sizedLogs(1, 300, 300, 300, 300, 300)); err != nil {
		t.Fatal(err)
	}
	read := func(i uint64) (fromStore bool) {
		t.Helper()
		before := st.reads.Load()
		var l raft.Log
		if err := c.GetLog(i, &l); err != nil || l.Index != i || len(l.Data) == 0 {
			t.Fatalf("GetLog(%d): %v, index %d", i, err, l.Index)
		}
		return st.reads.Load() != before
	}
	for i := uint64(3); i <= 5; i++ {
		if read(i) {
			t.Errorf("entry %d (of the newest 900 bytes) was read from the store", i)
		}
	}
	if !read(2) {
		t.Error("entry 2 is cached: the cache holds more than its 1000 bytes")
	}
	// An entry larger than the whole budget is not kept, nor is anything
	// before it; the next ones are.
	if err := c.StoreLogs(sizedLogs(6, 5000, 100)); err != nil {
		t.Fatal(err)
	}
	if !read(6) || !read(5) {
		t.Error("an entry over the budget, or one before it, was kept")
	}
	if read(7) {
		t.Error("the entry after a big one was not cached")
	}
	if c.bytes != 100 || len(c.logs) != 1 {
		t.Errorf("cache holds %d entries, %d bytes; want 1, 100", len(c.logs), c.bytes)
	}
	// The store's own error comes back, not its text.
	st.fail = fmt.Errorf("append: %w", errNoSpaceForTest)
	if err := c.StoreLogs(sizedLogs(8, 10)); !errors.Is(err, errNoSpaceForTest) {
		t.Errorf("StoreLogs error %v: the store's error was lost", err)
	}
}

var errNoSpaceForTest = errors.New("no space")

// A write whose entry is over the limit is refused before it is proposed,
// through the leader (Apply, ApplyLocal, StartApply, a transaction) and
// through a follower: by the follower's own limit before forwarding, and
// by the leader's once forwarded. Nothing of it is applied.
func TestEntryTooLargeRefused(t *testing.T) {
	const leaderLimit, followerLimit = 64 << 10, 32 << 10
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) {
		cfg.MaxEntryBytes = leaderLimit
	})
	li := c.leader(-1)
	l := c.nodes[li]
	fi := (li + 1) % 3
	f := c.nodes[fi]
	ctx := context.Background()
	value := func(n int) string { return strings.Repeat("v", n) }
	refused := func(what string, err error, limit int) {
		t.Helper()
		want := fmt.Sprintf("more than max-entry-bytes %d", limit)
		if err == nil || !strings.HasPrefix(err.Error(), "ERR write refused: its log entry would take ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a refusal naming %q", what, err, want)
		}
	}
	if _, err := l.Apply(ctx, cmd("SET", "k", "small")); err != nil {
		t.Fatal(err)
	}

	_, err := l.Apply(ctx, cmd("SET", "k", value(leaderLimit)))
	refused("Apply on the leader", err, leaderLimit)
	_, err = l.ApplyLocal(ctx, cmd("SET", "k", value(leaderLimit)))
	refused("ApplyLocal", err, leaderLimit)
	done := make(chan error, 1)
	if !l.StartApply(cmd("SET", "k", value(leaderLimit)), func(_ fsm.Result, err error) { done <- err }) {
		t.Fatal("StartApply on a ready leader declined")
	}
	refused("StartApply", <-done, leaderLimit)
	tx := fsm.Command{Tx: [][][]byte{args("SET", "a", value(40<<10)), args("SET", "b", value(40<<10))}}
	_, err = l.Apply(ctx, tx)
	refused("a transaction", err, leaderLimit)
	// Through a follower with the leader's limit: it refuses the write
	// itself, before forwarding it. A forwarded write (what the leader's
	// server runs for DEADBOLT.FORWARD, from a follower whose limit is
	// larger) is refused by the leader's.
	_, err = f.Apply(ctx, cmd("SET", "k", value(leaderLimit)))
	refused("Apply through a follower", err, leaderLimit)
	reply := ServeForward(ctx, l, []byte(modeApply), AppendEntry(nil, Entry{Cmd: cmd("SET", "k", value(leaderLimit))}))
	refused("forwarded to the leader", errors.New(reply.String()), leaderLimit)
	// A follower with a smaller limit refuses what the leader would take.
	// (The test changes its limit; nothing else reads it meanwhile.)
	f.cfg.MaxEntryBytes = followerLimit
	_, err = f.Apply(ctx, cmd("SET", "k", value(followerLimit)))
	refused("Apply through a follower with a smaller limit", err, followerLimit)
	res, err := l.Read(ctx, cmd("GET", "k"))
	if err != nil || string(res.Reply.Str) != "small" {
		t.Fatalf("GET k after the refusals: %v, %d bytes, want \"small\"", err, len(res.Reply.Str))
	}
	// Just under the limit is taken.
	under := value(leaderLimit - 100)
	if res, err := l.Apply(ctx, cmd("SET", "k", under)); err != nil || res.Reply.String() != "OK" {
		t.Fatalf("SET just under the limit: %v %s", err, res.Reply.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := l.Read(ctx, cmd("STRLEN", "k"))
		if err == nil && res.Reply.Int == int64(len(under)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("STRLEN k on the third node: %v %s", err, res.Reply.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.converged()
}

// A follower that fell behind by several big entries catches up with
// AppendEntries of at most maxAppendBytes (or one entry alone): it stores
// them in at least as many appends as there are big entries, where one
// request would have carried them all, and ends with the leader's state.
// Entries over the log cache's bytes are read back from the leader's log.
func TestFollowerCatchesUpOverBigEntries(t *testing.T) {
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) { cfg.DataDir = t.TempDir() })
	lag := (c.leader(-1) + 1) % 3
	ctx := context.Background()
	c.nw.Isolate(c.ids[lag], c.ids...)
	// With one follower cut off, a loaded machine may cost the leader its
	// lease: a write is then tried again on whoever leads (SET is
	// idempotent; only the entries' sizes matter here).
	apply := func(command fsm.Command) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := c.nodes[c.leader(lag)].Apply(ctx, command)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
	}
	const big = 8
	value := strings.Repeat("b", 900<<10)
	for i := range big {
		apply(cmd("SET", fmt.Sprint("big", i), value))
		apply(cmd("SET", fmt.Sprint("small", i), "v"))
	}
	before := c.nodes[lag].RaftMetrics().Log.Write.Count
	c.nw.Heal()
	c.converged()
	appends := c.nodes[lag].RaftMetrics().Log.Write.Count - before
	t.Logf("the follower caught up in %d appends", appends)
	if appends < big {
		t.Errorf("%d entries of 900 KiB arrived in %d appends: some AppendEntries carried more than %d bytes", big, appends, maxAppendBytes)
	}
}

// writeCommand writes what resp's array encoding writes, and a big command
// without copying its arguments: forwarding a value at the limit costs the
// follower no second copy of it.
func TestWriteCommandBig(t *testing.T) {
	for _, n := range []int{0, 10, vectorAbove - 100, vectorAbove, 1 << 20} {
		a := args("deadbolt.forward", "w", strings.Repeat("e", n))
		var got bytes.Buffer
		if err := writeCommand(&got, a); err != nil {
			t.Fatal(err)
		}
		req := make([]resp.Reply, len(a))
		for i, x := range a {
			req[i] = resp.BulkReply(x)
		}
		if want := resp.ArrayReply(req...).Append(nil); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d-byte argument: wrote %q..., want %q...", n, got.Bytes()[:min(got.Len(), 40)], want[:min(len(want), 40)])
		}
	}
	big := args("deadbolt.forward", "w", strings.Repeat("e", 1<<20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if err := writeCommand(io.Discard, big); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 64<<10 {
		t.Errorf("writing a 1 MiB command allocated %d bytes", per)
	}
}
