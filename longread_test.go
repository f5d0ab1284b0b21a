package deadbolt

import (
	"bufio"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/resp"
)

// loadKeys sets n keys (and a few with a deadline) on addr, pipelined.
func loadKeys(t *testing.T, addr string, n int) {
	t.Helper()
	var cmds [][]string
	for i := 0; i < n; i++ {
		cmds = append(cmds, []string{"SET", "key:" + strconv.Itoa(i), "v"})
		if len(cmds) == 5000 || i == n-1 {
			pipelineRaw(t, addr, cmds)
			cmds = cmds[:0]
		}
	}
	pipelineRaw(t, addr, [][]string{{"SET", "gone", "v", "PX", "1"}, {"HSET", "key:h", "f", "v"}})
	time.Sleep(5 * time.Millisecond) // "gone" expires: neither lists it
}

// commandOn sends one command on a new connection and returns its reply.
func commandOn(t *testing.T, addr string, args ...string) resp.Reply {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := nc.Write(pipelineRequest([][]string{args})); err != nil {
		t.Fatal(err)
	}
	r, err := resp.ReadReply(bufio.NewReader(nc), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fullScan iterates SCAN from cursor 0 to 0 and returns the keys, sorted.
func fullScan(t *testing.T, addr string, extra ...string) []string {
	t.Helper()
	var keys []string
	cursor := "0"
	for {
		r := commandOn(t, addr, append([]string{"SCAN", cursor, "COUNT", "1000"}, extra...)...)
		if r.Type != resp.Array || len(r.Elems) != 2 {
			t.Fatalf("SCAN reply %q", r.AppendProto(nil, 2))
		}
		for _, e := range r.Elems[1].Elems {
			keys = append(keys, string(e.Str))
		}
		cursor = string(r.Elems[0].Str)
		if cursor == "0" {
			break
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func sortedStrings(r resp.Reply) []string {
	var out []string
	for _, e := range r.Elems {
		out = append(out, string(e.Str))
	}
	slices.Sort(out)
	return out
}

// KEYS and a full SCAN over a database large enough to be read in steps
// (fsm.Walk), on a single in-memory node and on a cluster, answer the
// keys redis-server answers for the same commands.
func TestLongReadsLikeRedis(t *testing.T) {
	redisAddr := testredis.Start(t)
	n, err := Start(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c := RunClusterT(t, 3)
	const keys = 40_000 // above the walk threshold (fsm.walkMinKeys)
	for _, addr := range []string{redisAddr, n.Addr(), c.Addr(c.Leader())} {
		loadKeys(t, addr, keys)
	}
	// A cluster's leader walks too (and encodes the big reply off its
	// event loop); a follower forwards the read.
	want := sortedStrings(commandOn(t, redisAddr, "KEYS", "*"))
	for _, i := range []int{c.Leader(), c.Followers()[0]} {
		if got := sortedStrings(commandOn(t, c.Addr(i), "KEYS", "*")); !slices.Equal(got, want) {
			t.Fatalf("cluster node %d: KEYS * %d keys, redis-server %d", i, len(got), len(want))
		}
	}
	if got := fullScan(t, c.Addr(c.Leader())); !slices.Equal(got, fullScan(t, redisAddr)) {
		t.Fatalf("cluster: full SCAN %d keys", len(got))
	}
	for _, pat := range []string{"*", "key:1234*", "key:?9"} {
		want := sortedStrings(commandOn(t, redisAddr, "KEYS", pat))
		got := commandOn(t, n.Addr(), "KEYS", pat)
		var raw []string
		for _, e := range got.Elems {
			raw = append(raw, string(e.Str))
		}
		if !slices.IsSorted(raw) || !slices.Equal(sortedStrings(got), want) {
			t.Fatalf("KEYS %s: %d keys, redis-server %d", pat, len(got.Elems), len(want))
		}
	}
	for _, extra := range [][]string{nil, {"MATCH", "key:5*"}, {"TYPE", "hash"}} {
		want, got := fullScan(t, redisAddr, extra...), fullScan(t, n.Addr(), extra...)
		if !slices.Equal(got, want) {
			t.Fatalf("SCAN %v: %d keys, redis-server %d", extra, len(got), len(want))
		}
	}
	if got := len(fullScan(t, n.Addr())); got != keys+1 {
		t.Fatalf("full SCAN: %d keys, want %d", got, keys+1)
	}
}
