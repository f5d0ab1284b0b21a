//go:build linux

package deadbolt

import (
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// normalAbort is normalMisconf for an EXECABORT that names a MISCONF.
func normalAbort(r resp.Reply) resp.Reply {
	const abort = "EXECABORT Transaction discarded because of: "
	if r.Type == resp.Error && strings.HasPrefix(string(r.Str), abort+"MISCONF ") {
		r.Str = []byte(abort + "MISCONF (text)")
	}
	return normalMisconf(r)
}

// TestDiskFullTransactionsLikeRedis: transactions on a cluster whose disks
// are full, beside redis-server under MISCONF. Reads, WATCH and PUBLISH
// run inside MULTI as in Redis. A write queued through the leader gets
// MISCONF when queued and EXEC aborts, as Redis refuses it before queueing
// it (before, it was queued and EXEC answered a bare MISCONF, which Redis
// never does). Through a follower, which cannot tell whether the leader
// refuses writes, the write is queued and EXEC answers EXECABORT naming
// the leader's MISCONF, as Redis's EXEC does when the disk fails after the
// write was queued. Not as Redis (not compared here): PING is answered
// (Redis refuses it under MISCONF, so that Sentinel fails it over), and a
// transaction holding a script without a shebang, a no-writes one or
// SCRIPT is refused whole at EXEC (Redis runs it).
func TestDiskFullTransactionsLikeRedis(t *testing.T) {
	setup := [][]string{
		{"SET", "lock:a", "owner-1"},
		{"FUNCTION", "LOAD", "#!lua name=txlib\nredis.register_function('w', function() return redis.call('set', 'k', 'v') end)"},
	}
	sessions := [][][]string{
		{{"MULTI"}, {"GET", "lock:a"}, {"EXISTS", "lock:a"}, {"EXEC"}},
		{{"MULTI"}, {"GET", "lock:a"}, {"SET", "lock:a", "x"}, {"EXEC"}},
		{{"MULTI"}, {"HINCRBY", "lock:b", "f", "1"}, {"PEXPIRE", "lock:b", "1000"}, {"EXEC"}},
		{{"WATCH", "lock:a"}, {"MULTI"}, {"GET", "lock:a"}, {"EXEC"}},
		{{"WATCH", "lock:a"}, {"MULTI"}, {"DEL", "lock:a"}, {"EXEC"}, {"GET", "lock:a"}},
		{{"MULTI"}, {"PUBLISH", "ch", "m"}, {"EXEC"}},
		// Refused when queued as Redis flags them write: a function
		// without no-writes, a script whose shebang lacks it, FUNCTION
		// DELETE, FLUSHALL.
		{{"MULTI"}, {"FCALL", "w", "0"}, {"EXEC"}},
		{{"MULTI"}, {"FCALL", "W", "0"}, {"EXEC"}}, // names are case-insensitive
		{{"MULTI"}, {"EVAL", "#!lua\nreturn 1", "0"}, {"EXEC"}},
		{{"MULTI"}, {"FUNCTION", "DELETE", "txlib"}, {"EXEC"}},
		{{"MULTI"}, {"FLUSHALL"}, {"EXEC"}},
		{{"MULTI"}, {"EXEC"}},
	}
	redisAddr := misconfRedis(t, setup)
	var want [][]resp.Reply
	for _, s := range sessions {
		replies := sessionOn(t, redisAddr, s...)
		for k := range replies {
			replies[k] = normalAbort(replies[k])
		}
		want = append(want, replies)
	}
	c, _, _ := fullDisksCluster(t, setup)
	l := c.WaitLeader()
	f := c.Followers()[0]
	// A write refused when queued is counted as the refusal of a write.
	before := infoField(t, c.Addr(l), "persistence", "disk_refused_writes_total")
	if got := sessionOn(t, c.Addr(l), []string{"MULTI"}, []string{"SET", "k", "v"}, []string{"DISCARD"}); got[1].Type != resp.Error {
		t.Fatalf("SET queued through the leader on full disks: %q", got[1].AppendProto(nil, 2))
	}
	if after := infoField(t, c.Addr(l), "persistence", "disk_refused_writes_total"); after == before {
		t.Fatalf("disk_refused_writes_total stayed at %s after a write refused when queued", before)
	}
	queued := resp.Queued.AppendProto(nil, 2)
	aborted := resp.Err("EXECABORT Transaction discarded because of: MISCONF (text)").AppendProto(nil, 2)
	for _, i := range []int{l, f} {
		for j, s := range sessions {
			got := sessionOn(t, c.Addr(i), s...)
			refused := false // through a follower: a write was queued
			for k := range s {
				g, w := normalAbort(got[k]).AppendProto(nil, 2), want[j][k].AppendProto(nil, 2)
				if i == f && strings.HasPrefix(string(w), "-MISCONF") && s[k][0] != "EXEC" {
					w, refused = queued, true
				}
				if i == f && refused && s[k][0] == "EXEC" {
					w = aborted
				}
				if string(g) != string(w) {
					t.Errorf("node %d (leader %d): session %q, %q:\n got  %q\n want %q", i, l, s, s[k], g, w)
				}
			}
		}
	}
}
