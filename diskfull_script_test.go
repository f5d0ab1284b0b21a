//go:build linux

package deadbolt

import (
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/internal/tmpfs"
	"github.com/deadbolt/deadbolt/resp"
)

// Scripts on a full disk, beside redis-server under MISCONF. Redis 7.0
// runs an EVAL without a shebang while it refuses writes, and refuses
// only the write commands the script calls (script.c,
// scriptVerifyWriteCommandAllow); no-writes scripts and functions,
// EVAL_RO and FCALL_RO run (deadbolt refuses functions: see the test);
// a script or function that declared flags
// without no-writes is refused before it runs. deadbolt must answer the
// same, with its own MISCONF text (which names the data directory) where
// Redis has its own.

// misconfRedis starts a redis-server whose --dir is a tmpfs that is full,
// runs setup on it, and has a BGSAVE fail there, so that Redis refuses
// writes (stop-writes-on-bgsave-error, on by default, with a save point
// configured).
func misconfRedis(t *testing.T, setup [][]string) string {
	t.Helper()
	dir := tmpfs.Mount(t, 1<<20)
	addr := testredis.StartWith(t, "--dir", dir, "--save", "3600 1", "--stop-writes-on-bgsave-error", "yes")
	for _, cmd := range setup {
		if r := commandOn(t, addr, cmd...); r.Type == resp.Error {
			t.Fatalf("redis-server: %q: %s", cmd, r.Str)
		}
	}
	tmpfs.Fill(t, dir, 0)
	if r := commandOn(t, addr, "BGSAVE"); r.Type == resp.Error {
		t.Fatalf("redis-server: BGSAVE: %s", r.Str)
	}
	waitFor(t, 10*time.Second, "redis-server's BGSAVE to fail on its full disk", func() bool {
		r := commandOn(t, addr, "SET", "probe", "x")
		return r.Type == resp.Error && strings.HasPrefix(string(r.Str), "MISCONF")
	})
	return addr
}

// normalMisconf replaces the text of a MISCONF error, or of a string that
// holds one (redis.pcall's err field), up to Redis's " script: " suffix,
// so that Redis's and deadbolt's texts compare equal and all else must
// match.
func normalMisconf(r resp.Reply) resp.Reply {
	if r.Type == resp.Error || r.Type == resp.Bulk || r.Type == resp.Status {
		if s := string(r.Str); strings.HasPrefix(s, "MISCONF ") {
			rest := ""
			if i := strings.Index(s, " script: "); i >= 0 {
				rest = s[i:]
			}
			r.Str = []byte("MISCONF (text)" + rest)
		}
		return r
	}
	for i := range r.Elems {
		r.Elems[i] = normalMisconf(r.Elems[i])
	}
	return r
}

// TestDiskFullScriptsLikeRedis fills the data file systems of a
// three-node cluster to the last byte and runs scripts through the leader
// and a follower, beside a redis-server under MISCONF: a script without a
// shebang that only reads runs (before, every EVAL was proposed through
// the log and got MISCONF), one that writes gets the MISCONF error raised
// by redis.call (returned by redis.pcall) with Redis's script suffix, and
// nothing is written.
func TestDiskFullScriptsLikeRedis(t *testing.T) {
	const (
		read     = "return redis.call('get', KEYS[1])"
		write    = "redis.call('get', KEYS[1])\nreturn redis.call('set', KEYS[1], 'x')"
		pcall    = "local r = redis.pcall('set', KEYS[1], 'x')\nreturn {r['err'], redis.call('get', KEYS[1])}"
		release  = "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1])\nelse\n  return 0\nend"
		incr     = "return redis.call('incr', 'counter')"
		flagged  = "#!lua\nreturn redis.call('get', KEYS[1])"
		noWrites = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"
		roWrite  = "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')"
		library  = "#!lua name=disklib\n" +
			"redis.register_function('rd', function(keys, args) return redis.call('get', keys[1]) end)\n" +
			"redis.register_function{function_name='rdro', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n"
	)
	setup := [][]string{
		{"SET", "lock:a", "owner-1"},
		{"SCRIPT", "LOAD", read},
		{"SCRIPT", "LOAD", write},
		{"FUNCTION", "LOAD", library},
	}
	sha := func(body string) string { return fsm.SHA1Hex([]byte(body)) }
	transcript := [][]string{
		{"EVAL", read, "1", "lock:a"},
		{"EVAL", write, "1", "lock:a"},
		{"EVAL", pcall, "1", "lock:a"},
		{"EVAL", release, "1", "lock:a", "someone-else"},
		{"EVAL", release, "1", "lock:a", "owner-1"},
		{"EVAL", incr, "0"},
		{"EVAL", flagged, "1", "lock:a"},
		{"EVAL", noWrites, "1", "lock:a"},
		{"EVAL", roWrite, "1", "lock:a"},
		{"EVAL", "#!lua flags=bogus\nreturn 1", "0"},
		{"EVAL_RO", read, "1", "lock:a"},
		{"EVAL_RO", write, "1", "lock:a"},
		{"EVALSHA", sha(read), "1", "lock:a"},
		{"EVALSHA", sha(write), "1", "lock:a"},
		{"EVALSHA_RO", sha(read), "1", "lock:a"},
		{"EVALSHA", strings.Repeat("0", 40), "0"},
		{"FCALL", "rd", "1", "lock:a"},
		{"FCALL", "rdro", "1", "lock:a"},
		{"FCALL_RO", "rdro", "1", "lock:a"},
		{"FCALL_RO", "rd", "1", "lock:a"},
		{"FCALL", "nope", "0"},
		{"SCRIPT", "EXISTS", sha(read), sha("return 'never run'")}, // not incr: EVAL cached it in Redis only
		{"SCRIPT", "LOAD", read},
		{"SCRIPT", "LOAD", incr},
		{"GET", "lock:a"},
		{"EXISTS", "counter"},
	}

	redisAddr := misconfRedis(t, setup)
	want := make([]resp.Reply, len(transcript))
	for i, cmd := range transcript {
		want[i] = normalMisconf(commandOn(t, redisAddr, cmd...))
		t.Logf("redis-server: %.40q -> %q", cmd, want[i].AppendProto(nil, 2))
	}

	const minFree = 2 << 20
	c, mounts := diskFullCluster(t, 3, minFree, 512<<10)
	l := c.WaitLeader()
	for _, cmd := range setup {
		if r := commandOn(t, c.Addr(l), cmd...); r.Type == resp.Error {
			t.Fatalf("deadbolt: %q: %s", cmd, r.Str)
		}
	}
	for _, m := range mounts {
		tmpfs.Fill(t, m, 0)
	}
	var refusal string
	waitFor(t, 10*time.Second, "every node to refuse writes", func() bool {
		for i := range c.Nodes {
			r := commandOn(t, c.Addr(i), "SET", "probe", "x")
			if r.Type != resp.Error || !strings.HasPrefix(string(r.Str), "MISCONF") {
				return false
			}
			refusal = string(r.Str)
		}
		return true
	})
	t.Logf("refusal: %s", refusal)
	named := false
	for _, m := range mounts {
		named = named || strings.Contains(refusal, "data directory "+m)
	}
	if !named {
		t.Fatalf("the refusal %q names no node's data directory", refusal)
	}
	l = c.WaitLeader()
	for _, i := range []int{l, c.Followers()[0]} {
		for j, cmd := range transcript {
			got := commandOn(t, c.Addr(i), cmd...)
			if got.Type == resp.Error && strings.HasPrefix(string(got.Str), "MISCONF") && !strings.Contains(string(got.Str), "data directory") {
				t.Fatalf("node %d: %q: a MISCONF that names no data directory: %s", i, cmd, got.Str)
			}
			w := want[j].AppendProto(nil, 2)
			if (cmd[0] == "FCALL" || cmd[0] == "FCALL_RO") && cmd[1] != "nope" || cmd[0] == "SCRIPT" && cmd[2] == incr {
				// deadbolt refuses a function, no-writes or not (its
				// library's locals are each node's: fsm/writesrefused.go),
				// and a SCRIPT LOAD that would add to the script cache,
				// which is replicated state (Redis caches it in memory).
				w = resp.Err("MISCONF (text)").AppendProto(nil, 2)
			}
			if g := normalMisconf(got).AppendProto(nil, 2); string(g) != string(w) {
				t.Errorf("node %d (leader %d) with full disks: %q\n got  %q\n want %q (redis-server under MISCONF)", i, l, cmd, g, w)
			}
		}
	}
	// Nothing was written: the lock is still held, on every node.
	for i := range c.Nodes {
		if r := commandOn(t, c.Addr(i), "GET", "lock:a"); string(r.Str) != "owner-1" {
			t.Fatalf("node %d: GET lock:a = %q", i, r.AppendProto(nil, 2))
		}
	}
}
