//go:build linux

package deadbolt

import (
	"bufio"
	"net"
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
// EVAL_RO and FCALL_RO of them run; a script or function that declared
// flags without no-writes is refused before it runs (FCALL_RO of it
// too). deadbolt must answer the
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

// fullDisksCluster starts a three-node cluster on small tmpfs mounts,
// runs setup through its leader, fills every mount to the last byte and
// waits until a write through every node gets MISCONF, whose text it
// returns with the cluster and its mounts.
func fullDisksCluster(t *testing.T, setup [][]string) (*Cluster, []string, string) {
	t.Helper()
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
	return c, mounts, refusal
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

// commandOn3 sends HELLO 3 and one command on a new connection and
// returns the command's reply, read as RESP3.
func commandOn3(t *testing.T, addr string, args ...string) resp.Reply {
	t.Helper()
	return sessionOn(t, addr, []string{"HELLO", "3"}, args)[1]
}

// sessionOn runs cmds on one connection, one at a time, and returns
// their replies.
func sessionOn(t *testing.T, addr string, cmds ...[]string) []resp.Reply {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	rd := bufio.NewReader(nc)
	var out []resp.Reply
	for _, c := range cmds {
		if _, err := nc.Write(pipelineRequest([][]string{c})); err != nil {
			t.Fatal(err)
		}
		r, err := resp.ReadReply(rd, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
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
			"redis.register_function{function_name='rdro', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n" +
			"redis.register_function{function_name='roset', callback=function(keys, args) return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}\n" +
			"redis.register_function{function_name='ropcall', callback=function(keys, args) local r = redis.pcall('set', keys[1], 'x') return {r['err'], redis.call('get', keys[1])} end, flags={'no-writes'}}\n" +
			"redis.register_function{function_name='rdkeys', callback=function(keys, args) return {#keys, #args, redis.call('exists', keys[1]), args[1]} end, flags={'no-writes', 'allow-stale'}}\n" +
			"redis.register_function{function_name='wr', callback=function(keys, args) return redis.call('set', keys[1], 'x') end, flags={'allow-oom'}}\n"
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
		{"FCALL", "roset", "1", "lock:a"},
		{"FCALL_RO", "roset", "1", "lock:a"},
		{"FCALL", "ropcall", "1", "lock:a"},
		{"FCALL", "rdkeys", "2", "lock:a", "lock:b", "arg-1"},
		{"FCALL", "rdkeys", "3", "lock:a"},
		{"FCALL", "rdro", "-1"},
		{"FCALL", "wr", "1", "lock:a"},
		{"FCALL_RO", "wr", "1", "lock:a"},
		{"FCALL", "wr", "5", "lock:a"},
		{"FCALL", "nope", "0"},
		{"FCALL_RO", "nope", "0"},
		{"FCALL", "RDRO", "1", "lock:a"}, // names are case-insensitive
		{"FCALL_RO", "Rd", "1", "lock:a"},
		{"SCRIPT", "EXISTS", sha(read), sha("return 'never run'")}, // not incr: EVAL cached it in Redis only
		{"SCRIPT", "LOAD", read},
		{"SCRIPT", "LOAD", incr},
		{"GET", "lock:a"},
		{"EXISTS", "counter"},
	}

	redisAddr := misconfRedis(t, setup)
	want := make([]resp.Reply, len(transcript))
	want3 := make([][]byte, len(transcript)) // the same, in RESP3 (HELLO 3)
	for i, cmd := range transcript {
		want[i] = normalMisconf(commandOn(t, redisAddr, cmd...))
		t.Logf("redis-server: %.40q -> %q", cmd, want[i].AppendProto(nil, 2))
		want3[i] = normalMisconf(commandOn3(t, redisAddr, cmd...)).AppendProto(nil, 3)
	}

	c, mounts, refusal := fullDisksCluster(t, setup)
	t.Logf("refusal: %s", refusal)
	named := false
	for _, m := range mounts {
		named = named || strings.Contains(refusal, "data directory "+m)
	}
	if !named {
		t.Fatalf("the refusal %q names no node's data directory", refusal)
	}
	l := c.WaitLeader()
	for _, i := range []int{l, c.Followers()[0]} {
		for j, cmd := range transcript {
			got := commandOn(t, c.Addr(i), cmd...)
			if got.Type == resp.Error && strings.HasPrefix(string(got.Str), "MISCONF") && !strings.Contains(string(got.Str), "data directory") {
				t.Fatalf("node %d: %q: a MISCONF that names no data directory: %s", i, cmd, got.Str)
			}
			w, w3 := want[j].AppendProto(nil, 2), want3[j]
			if cmd[0] == "SCRIPT" && cmd[2] == incr {
				// deadbolt refuses a SCRIPT LOAD that would add to the
				// script cache, which is replicated state (Redis caches
				// it in memory).
				w = resp.Err("MISCONF (text)").AppendProto(nil, 2)
				w3 = w
			}
			if g := normalMisconf(got).AppendProto(nil, 2); string(g) != string(w) {
				t.Errorf("node %d (leader %d) with full disks: %q\n got  %q\n want %q (redis-server under MISCONF)", i, l, cmd, g, w)
			}
			if g := normalMisconf(commandOn3(t, c.Addr(i), cmd...)).AppendProto(nil, 3); string(g) != string(w3) {
				t.Errorf("node %d (leader %d) with full disks, RESP3: %q\n got  %q\n want %q (redis-server under MISCONF)", i, l, cmd, g, w3)
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
