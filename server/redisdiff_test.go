package server

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/resp"
)

// Differential tests: the same commands to redis-server 7.0.15 and to
// deadbolt, the same bytes back. Skipped without redis-server (outside CI).

// sameReplies sends each command to both servers on one connection each
// and compares the raw replies, over RESP2 and then over RESP3.
func sameReplies(t *testing.T, cmds [][]string) {
	t.Helper()
	redisAddr := testredis.Start(t)
	s := newTestServer(t)
	for _, proto := range []string{"2", "3"} {
		ref, got := dial(t, redisAddr), dial(t, s.addr)
		ref.doRaw("hello", proto)
		got.doRaw("hello", proto)
		for _, cmd := range cmds {
			want := ref.doRaw(cmd...)
			if have := got.doRaw(cmd...); have != want {
				t.Errorf("RESP%s %q:\n deadbolt %q\n    redis %q", proto, cmd, have, want)
			}
		}
	}
}

func split(lines ...string) [][]string {
	out := make([][]string, len(lines))
	for i, l := range lines {
		args, ok := resp.SplitInline([]byte(l))
		if !ok {
			panic("bad test command: " + l)
		}
		out[i] = make([]string, len(args))
		for j, a := range args {
			out[i][j] = string(a)
		}
	}
	return out
}

func TestRedisDiffErrors(t *testing.T) {
	sameReplies(t, split(
		"bogus a b",
		"client", "client setname", "client bogus", `client setname "a b"`, "client setname x", "client getname",
		"client setname ''", "client getname", "client getname x",
		"client kill id x", "client kill id 0", "client kill id 999999", "client kill 1.2.3.4:5", "client kill id 1 skipme",
		"client kill skipme maybe", "client kill bogus 1", "client kill type x", "client kill addr 1.2.3.4:5",
		"client list type x", "client list id x", "client list bogus", "client list type replica", "client list id 99999",
		"client pause x", "client pause -1", "client pause 10 bogus", "client no-evict x", "client reply bogus",
		"client caching yes", "client getredir", "client trackinginfo", "client unblock 5", "client unblock x",
		"client unblock 5 bogus", "client tracking", "client capa redirect",
		// Redis checks the number of arguments, then PAUSE's mode, then
		// its timeout; TRACKING's options before ON|OFF takes effect.
		"client pause x bogus", "client pause x write extra", "client pause 10 write extra",
		"client unblock x y z", "client unblock 5 timeout z", "client tracking off x", "client tracking on x",
		"client tracking off noloop", "client tracking off prefix",
		"config", "config get", "config set x", "config set x y", "config set maxmemory x", "config set maxmemory 1 x",
		"config set maxmemory 1 maxmemory 2", "config set maxmemory-policy bogus", "config set databases 4",
		"config set maxclients 0", "config set timeout -1", "config set notify-keyspace-events Z", "config set save x",
		"config set client-output-buffer-limit x", "config set client-output-buffer-limit 'bogus 1 1 1'",
		"config set loglevel x", "config set protected-mode maybe", "config set tcp-keepalive x",
		"config set proto-max-bulk-len 10", "config set maxmemory 1 bogus 2",
		"config rewrite", "config bogus", "config help",
		"config get maxmemory", "config get MAXMEMORY", "config get databases", "config get slave-read-only",
		"config get save", "config get appendonly", "config get client-output-buffer-limit", "config get lua-time-limit",
		"config get nosuchparam", "config get maxmemory-policy", "config get timeout", "config get requirepass",
		"config get cluster-enabled", "config get notify-keyspace-events", "config get proto-max-bulk-len",
		"config get maxclients", "config get hz", "config get replica-read-only",
		"config set maxmemory 100mb", "config get maxmemory", "config set maxmemory 0",
		"wait x 0", "wait 0 x", "wait 0 -1", "wait 0 0", "wait 1 10", "wait -1 0", "wait 0",
		"role", "lastsave x",
		"command getkeys", "command getkeys get", "command getkeys get a", "command getkeys get a b",
		"command getkeys ping x", "command getkeys bogus x", "command getkeys del a b c", "command getkeys mset a 1 b 2",
		// keys Redis's procedures find (SET, BITFIELD, SORT), and shard
		// channels, which are no keys
		"command getkeys sort k BY x STORE d", "command getkeysandflags sort k STORE d STORE e",
		"command getkeysandflags sort k LIMIT 0 STORE d", "command getkeysandflags sort k STORE",
		"command getkeysandflags set k v", "command getkeysandflags set k v GET",
		"command getkeysandflags bitfield k GET u8 0", "command getkeysandflags bitfield k SET u8 0 1",
		"command getkeys spublish ch m", "command getkeys ssubscribe a b", "command getkeys sunsubscribe a",
		"command info bogus", "command info get set del ping client|setname", "command docs bogus",
		"command list filterby", "command list filterby module x", "command list filterby acllog x", "command bogus",
		"command help", "command count x",
		"info bogus", "info modules", "info cluster", "info keyspace",
		"memory bogus", "memory help", "memory usage",
		"latency latest", "latency history x", "latency reset", "latency graph x", "latency bogus", "latency help",
		"slowlog len", "slowlog get", "slowlog get -2", "slowlog get x", "slowlog bogus", "slowlog help",
		"bgsave x", "shutdown bogus", "debug",
		"pubsub", "pubsub help", "pubsub help x", "pubsub numpat", "pubsub numpat x", "pubsub bogus",
		"pubsub channels a b", "pubsub channels", "pubsub numsub a", "pubsub shardnumsub a", "pubsub shardchannels",
		"hello x", "hello 4", `hello 2 setname "a b"`, "hello 2 bogus",
		"echo", "ping a b", "ping", "ping hi", "select 99", "select x", "select -1",
		"auth x", "auth a b c",
		"multi", "multi", "set k v", "get", "exec", "exec", "discard",
		"multi", "discard", "watch", "unwatch x",
		"subscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
		"subscribe a", "get x", "client getname", "ping", "ping x", "unsubscribe a", "quit",
	))
}

// TestRedisDiffCommandInfo compares COMMAND INFO for every command both
// know. Redis lists a container's subcommands in hash order, so those are
// compared sorted.
func TestRedisDiffCommandInfo(t *testing.T) {
	ref := dial(t, testredis.Start(t))
	s := newTestServer(t)
	c := dial(t, s.addr)
	sortSubs := func(r resp.Reply) resp.Reply {
		if len(r.Elems) == 10 {
			slices.SortFunc(r.Elems[9].Elems, func(a, b resp.Reply) int {
				return strings.Compare(a.Elems[0].String(), b.Elems[0].String())
			})
		}
		return r
	}
	compared := 0
	for _, name := range c.do("command", "list").Elems {
		want := ref.do("command", "info", name.String()).Elems[0]
		if want.Type == resp.Nil {
			continue // not in Redis 7.0 (WAITAOF, CLIENT SETINFO, RAFT, ...)
		}
		got := c.do("command", "info", name.String()).Elems[0]
		if len(got.Elems) == 10 {
			// Subcommands Redis 7.0 does not have (CLIENT SETINFO).
			got.Elems[9].Elems = slices.DeleteFunc(got.Elems[9].Elems, func(sub resp.Reply) bool {
				return ref.do("command", "info", sub.Elems[0].String()).Elems[0].Type == resp.Nil
			})
		}
		if !sortSubs(got).Equal(sortSubs(want)) {
			t.Errorf("COMMAND INFO %s:\n deadbolt %q\n    redis %q", name, got.Append(nil), want.Append(nil))
		}
		compared++
	}
	if compared < 50 {
		t.Errorf("only %d commands compared", compared)
	}
	// Docs (summary, since, group) agree with Redis's for the same commands.
	for _, name := range []string{"get", "set", "client", "config", "wait", "info", "publish", "subscribe"} {
		want := ref.do("command", "docs", name)
		got := c.do("command", "docs", name)
		if len(got.Elems) != 2 || len(want.Elems) != 2 {
			t.Errorf("COMMAND DOCS %s: %v / %v", name, got, want)
			continue
		}
		g, w := mapOf(got.Elems[1]), mapOf(want.Elems[1])
		for _, k := range []string{"summary", "since", "group"} {
			if g[k] != w[k] {
				t.Errorf("COMMAND DOCS %s %s: %q, redis %q", name, k, g[k], w[k])
			}
		}
	}
}

func mapOf(r resp.Reply) map[string]string {
	m := make(map[string]string)
	for i := 0; i+1 < len(r.Elems); i += 2 {
		m[r.Elems[i].String()] = r.Elems[i+1].String()
	}
	return m
}

// TestRedisDiffInfoLayout checks that INFO has Redis's sections in
// Redis's order and, in each, Redis's fields in Redis's order (deadbolt
// adds a few of its own).
func TestRedisDiffInfoLayout(t *testing.T) {
	ref := dial(t, testredis.Start(t))
	s := newTestServer(t)
	c := dial(t, s.addr)
	for _, args := range [][]string{{"info"}, {"info", "all"}, {"info", "server", "replication", "persistence"}} {
		want := ref.do(args...).String()
		got := c.do(args...).String()
		ws, gs := sectionTitles(t, want), sectionTitles(t, got)
		if strings.Join(ws, ",") != strings.Join(gs, ",") {
			t.Errorf("%v: sections %v, redis %v", args, gs, ws)
			continue
		}
		wf, gf := infoFieldNames(want), infoFieldNames(got)
		for sec, names := range wf {
			if sec == "Commandstats" || sec == "Errorstats" || sec == "Latencystats" || sec == "Keyspace" {
				continue // depend on what ran
			}
			if !isSubsequence(names, gf[sec]) {
				t.Errorf("%v: section %s fields\n deadbolt %v\n    redis %v", args, sec, gf[sec], names)
			}
		}
	}
}

func infoFieldNames(info string) map[string][]string {
	out := make(map[string][]string)
	sec := ""
	for _, line := range strings.Split(info, "\r\n") {
		if title, ok := strings.CutPrefix(line, "# "); ok {
			sec = title
			continue
		}
		if k, _, ok := strings.Cut(line, ":"); ok {
			out[sec] = append(out[sec], k)
		}
	}
	return out
}

func isSubsequence(sub, of []string) bool {
	i := 0
	for _, x := range of {
		if i < len(sub) && sub[i] == x {
			i++
		}
	}
	return i == len(sub)
}

// shutdownCombos is every SHUTDOWN with up to three modifiers (and a word
// that is none), in mixed case, split by what deadbolt's parser says
// Redis does with it: refuse it with an error, or exit. The two tests
// below check both halves against redis-server.
func shutdownCombos() (refused, accepted [][]string) {
	words := []string{"nosave", "SAVE", "Now", "force", "ABORT", "bogus"}
	var walk func(cmd []string)
	walk = func(cmd []string) {
		args := make([][]byte, len(cmd))
		for i, a := range cmd {
			args[i] = []byte(a)
		}
		if abort, msg := shutdownArgs(args); abort || msg != "" {
			refused = append(refused, slices.Clone(cmd))
		} else {
			accepted = append(accepted, slices.Clone(cmd))
		}
		if len(cmd) == 4 {
			return
		}
		for _, w := range words {
			walk(append(cmd, w))
		}
	}
	walk([]string{"shutdown"})
	return refused, accepted
}

// Every refused SHUTDOWN, and SHUTDOWN inside MULTI, from scripts and
// while subscribed, answers what redis-server answers.
func TestRedisDiffShutdownErrors(t *testing.T) {
	refused, accepted := shutdownCombos()
	if len(refused) != 194 || len(accepted) != 65 {
		t.Fatalf("%d refused and %d accepted SHUTDOWNs", len(refused), len(accepted))
	}
	cmds := append(refused, split(
		"multi", "shutdown", "shutdown nosave", "shutdown bogus", "shutdown abort", "save", "ping", "exec",
		`eval "return redis.call('shutdown')" 0`, `eval "return redis.call('shutdown', 'bogus')" 0`,
		`eval "return redis.pcall('shutdown', 'abort')" 0`, `eval "return redis.pcall('SHUTDOWN', 'nosave')" 0`,
		"command info shutdown save", "command getkeys shutdown nosave",
		// Subscribed: RESP2 refuses SHUTDOWN, RESP3 runs it (so no SHUTDOWN
		// that Redis accepts here).
		"subscribe a", "shutdown abort", "shutdown bogus", "unsubscribe a",
	)...)
	sameReplies(t, cmds)
}

// A SHUTDOWN that Redis accepts closes the connection without a reply;
// deadbolt's, with a Config.Shutdown that closes the server, does the
// same. A redis-server for each (about 30 ms to start).
func TestRedisDiffShutdownCloses(t *testing.T) {
	_, accepted := shutdownCombos()
	for i := range 2 * len(accepted) {
		cmd, proto := accepted[i/2], strconv.Itoa(2+i%2)
		t.Run("RESP"+proto+" "+strings.Join(cmd, " "), func(t *testing.T) {
			var s *testServer
			s = newTestServer(t, func(c *Config) { c.Shutdown = func() { go s.Close() } })
			ref, got := dial(t, testredis.Start(t)), dial(t, s.addr)
			for _, c := range []*client{ref, got} {
				c.doRaw("hello", proto)
				c.send(cmd...)
			}
			if want, have := ref.expectClosed(), got.expectClosed(); have != want {
				t.Errorf("deadbolt %q, redis %q before EOF", have, want)
			}
		})
	}
}

// Before a client has authenticated, Redis 7.0's dispatcher answers an
// unknown command, an unknown subcommand and a wrong number of arguments
// (a known subcommand's too) before NOAUTH; so does deadbolt.
func TestRedisDiffBeforeAuth(t *testing.T) {
	redisAddr := testredis.Start(t)
	s := newTestServer(t)
	cmds := split("CLIENT NOSUCH", "CONFIG NOSUCH x", "OBJECT NOSUCH k", "CLIENT KILL", "CONFIG GET",
		"CONFIG SET maxclients", "GET", "NOSUCH a", "CLIENT ID", "CONFIG GET maxclients", "GET k",
		"CLIENT SETINFO LIB-NAME x", "AUTH secret", "CLIENT NOSUCH", "CLIENT KILL")
	replies := map[string][]string{}
	for name, addr := range map[string]string{"redis": redisAddr, "deadbolt": s.addr} {
		dial(t, addr).doRaw("config", "set", "requirepass", "secret")
		c := dial(t, addr) // opened after the password: not authenticated
		for _, cmd := range cmds {
			replies[name] = append(replies[name], c.doRaw(cmd...))
		}
	}
	for i, cmd := range cmds {
		if r, d := replies["redis"][i], replies["deadbolt"][i]; r != d {
			// CLIENT SETINFO is Redis 7.2's; 7.0 does not know it.
			if cmd[0] == "CLIENT" && cmd[1] == "SETINFO" && d == "-NOAUTH Authentication required.\r\n" {
				continue
			}
			t.Errorf("%q before AUTH:\n deadbolt %q\n    redis %q", cmd, d, r)
		}
	}
}
