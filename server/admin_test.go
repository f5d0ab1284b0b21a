package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/resp"
)

// clientFields parses one CLIENT LIST line into its fields, checking
// their order against Redis's.
func clientFields(t *testing.T, line string) map[string]string {
	t.Helper()
	order := []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
		"multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem",
		"events", "cmd", "user", "redir", "resp", "lib-name", "lib-ver"}
	parts := strings.Split(line, " ")
	if len(parts) != len(order) {
		t.Fatalf("CLIENT LIST line has %d fields, want %d: %q", len(parts), len(order), line)
	}
	m := make(map[string]string)
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k != order[i] {
			t.Fatalf("field %d is %q, want %s=: %q", i, p, order[i], line)
		}
		m[k] = v
	}
	return m
}

// clientLines returns CLIENT LIST's lines by client id.
func clientLines(t *testing.T, c *client, args ...string) map[string]map[string]string {
	t.Helper()
	r := c.do(append([]string{"client", "list"}, args...)...)
	if r.Type != resp.Bulk {
		t.Fatalf("CLIENT LIST: %v", r)
	}
	out := make(map[string]map[string]string)
	text := r.String()
	if text == "" {
		return out
	}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("CLIENT LIST does not end in a newline: %q", text)
	}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		f := clientFields(t, line)
		out[f["id"]] = f
	}
	return out
}

func TestClientNameAndID(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	id := c.do("client", "id").Int
	if id <= 0 {
		t.Fatalf("CLIENT ID = %d", id)
	}
	if id2 := dial(t, s.addr).do("client", "id").Int; id2 <= id {
		t.Errorf("ids do not grow: %d then %d", id, id2)
	}
	c.must(nilReply, "client", "getname")
	c.mustErr("ERR Client names cannot contain spaces, newlines or special characters.", "client", "setname", "a b")
	c.mustErr("ERR Client names cannot contain spaces, newlines or special characters.", "client", "setname", "a\nb")
	c.must(okReply, "client", "setname", "worker-1")
	c.must(bulk("worker-1"), "client", "getname")
	c.must(okReply, "client", "setname", "")
	c.must(nilReply, "client", "getname")
	c.mustErr("ERR wrong number of arguments for 'client|getname' command", "client", "getname", "x")
}

func TestClientListAndInfo(t *testing.T) {
	s := newTestServer(t)
	me := dial(t, s.addr)
	other := dial(t, s.addr)
	sub := dial(t, s.addr)
	meID := strconv.FormatInt(me.do("client", "id").Int, 10)
	otherID := strconv.FormatInt(other.do("client", "id").Int, 10)
	subID := strconv.FormatInt(sub.do("client", "id").Int, 10)
	me.must(okReply, "client", "setname", "me")
	me.must(okReply, "client", "setinfo", "lib-name", "mylib")
	me.must(okReply, "client", "setinfo", "LIB-VER", "1.2.3")
	me.mustErr("ERR Unrecognized option 'lib-x'", "client", "setinfo", "lib-x", "1")
	me.mustErr("ERR lib-name cannot contain spaces, newlines or special characters.", "client", "setinfo", "lib-name", "a b")
	other.must(okReply, "select", "3")
	other.must(okReply, "multi")
	other.must(status("QUEUED"), "set", "k", "v")
	sub.must(arr(bulk("subscribe"), bulk("c"), integer(1)), "subscribe", "c")
	sub.must(arr(bulk("psubscribe"), bulk("p*"), integer(2)), "psubscribe", "p*")

	idle := dial(t, s.addr) // has sent nothing yet
	waitFor(t, "the idle client", func() bool { return len(s.clients()) == 4 })
	all := clientLines(t, me)
	if len(all) != 4 {
		t.Fatalf("CLIENT LIST has %d clients", len(all))
	}
	for id, f := range all {
		if id != meID && id != otherID && id != subID {
			if f["flags"] != "N" || f["multi"] != "-1" || f["cmd"] != "NULL" || f["db"] != "0" {
				t.Errorf("a new client: %v", f)
			}
		}
	}
	idle.nc.Close()
	waitFor(t, "the idle client to go", func() bool { return len(s.clients()) == 3 })
	m := all[meID]
	for k, want := range map[string]string{"name": "me", "flags": "N", "db": "0", "multi": "-1", "cmd": "client|list",
		"lib-name": "mylib", "lib-ver": "1.2.3", "user": "default", "resp": "2", "redir": "-1", "idle": "0", "laddr": s.addr} {
		if m[k] != want {
			t.Errorf("own %s=%q, want %q", k, m[k], want)
		}
	}
	if m["addr"] != me.nc.LocalAddr().String() {
		t.Errorf("addr=%s, want %s", m["addr"], me.nc.LocalAddr())
	}
	o := all[otherID]
	for k, want := range map[string]string{"flags": "x", "db": "3", "multi": "1", "cmd": "set", "name": ""} {
		if o[k] != want {
			t.Errorf("other %s=%q, want %q", k, o[k], want)
		}
	}
	p := all[subID]
	for k, want := range map[string]string{"flags": "P", "sub": "1", "psub": "1", "ssub": "0", "cmd": "psubscribe"} {
		if p[k] != want {
			t.Errorf("subscriber %s=%q, want %q", k, p[k], want)
		}
	}

	if got := clientLines(t, me, "type", "pubsub"); len(got) != 1 || got[subID] == nil {
		t.Errorf("CLIENT LIST TYPE pubsub: %v", got)
	}
	if got := clientLines(t, me, "TYPE", "normal"); len(got) != 2 || got[subID] != nil {
		t.Errorf("CLIENT LIST TYPE normal: %v", got)
	}
	if got := clientLines(t, me, "type", "replica"); len(got) != 0 {
		t.Errorf("CLIENT LIST TYPE replica: %v", got)
	}
	if got := clientLines(t, me, "id", otherID, "999999", subID); len(got) != 2 || got[otherID] == nil || got[subID] == nil {
		t.Errorf("CLIENT LIST ID: %v", got)
	}
	me.mustErr("ERR Unknown client type 'x'", "client", "list", "type", "x")
	me.mustErr("ERR Invalid client ID", "client", "list", "id", "x")
	me.mustErr("ERR syntax error", "client", "list", "bogus")

	info := me.do("client", "info").String()
	if !strings.HasSuffix(info, "\n") || strings.Count(info, "\n") != 1 {
		t.Fatalf("CLIENT INFO: %q", info)
	}
	if f := clientFields(t, strings.TrimSuffix(info, "\n")); f["id"] != meID || f["cmd"] != "client|info" {
		t.Errorf("CLIENT INFO: %v", f)
	}

	me.must(okReply, "client", "no-evict", "on")
	me.must(okReply, "client", "no-touch", "on")
	me.must(okReply, "readonly")
	if f := clientLines(t, me)[meID]; f["flags"] != "reT" {
		t.Errorf("flags=%s, want reT", f["flags"])
	}
	me.must(status("RESET"), "reset")
	if f := clientLines(t, me)[meID]; f["flags"] != "N" || f["name"] != "" {
		t.Errorf("after RESET: flags=%s name=%s", f["flags"], f["name"])
	}
	me.mustErr("ERR syntax error", "client", "no-evict", "maybe")
	me.mustErr("ERR syntax error", "client", "no-touch", "maybe")
}

func TestClientKill(t *testing.T) {
	s := newTestServer(t)
	me := dial(t, s.addr)
	victim := dial(t, s.addr)
	vid := strconv.FormatInt(victim.do("client", "id").Int, 10)

	me.must(integer(0), "client", "kill", "id", "999999")
	me.mustErr("ERR client-id should be greater than 0", "client", "kill", "id", "x")
	me.mustErr("ERR client-id should be greater than 0", "client", "kill", "id", "0")
	me.mustErr("ERR syntax error", "client", "kill", "id", "1", "skipme")
	me.mustErr("ERR syntax error", "client", "kill", "bogus", "1")
	me.mustErr("ERR syntax error", "client", "kill", "skipme", "maybe")
	me.mustErr("ERR Unknown client type 'x'", "client", "kill", "type", "x")
	me.mustErr("ERR No such user 'alice'", "client", "kill", "user", "alice")
	me.mustErr("ERR No such client", "client", "kill", "1.2.3.4:5")

	me.must(integer(1), "client", "kill", "id", vid)
	victim.expectClosed()
	waitFor(t, "the victim to go", func() bool { return len(s.clients()) == 1 })

	// The old form, by address.
	v2 := dial(t, s.addr)
	v2.must(status("PONG"), "ping")
	me.must(okReply, "client", "kill", v2.nc.LocalAddr().String())
	v2.expectClosed()

	// By address, by local address, by type.
	v3 := dial(t, s.addr)
	v3.must(status("PONG"), "ping")
	me.must(integer(1), "client", "kill", "addr", v3.nc.LocalAddr().String(), "skipme", "yes")
	v3.expectClosed()
	v4 := dial(t, s.addr)
	v4.must(arr(bulk("subscribe"), bulk("c"), integer(1)), "subscribe", "c")
	me.must(integer(1), "client", "kill", "type", "pubsub")
	v4.expectClosed()
	v5 := dial(t, s.addr)
	v5.must(status("PONG"), "ping")
	waitFor(t, "two clients", func() bool { return len(s.clients()) == 2 })
	me.must(integer(1), "client", "kill", "laddr", s.addr) // skips itself
	v5.expectClosed()

	// SKIPME no kills the caller too, after its reply.
	v6 := dial(t, s.addr)
	v6.must(status("PONG"), "ping")
	waitFor(t, "only me and v6", func() bool { return len(s.clients()) == 2 })
	me.send("client", "kill", "user", "default", "skipme", "no")
	if got := me.expectClosed(); got != integer(2) {
		t.Fatalf("CLIENT KILL SKIPME no: %q", got)
	}
	v6.expectClosed()
}

func TestClientMisc(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)

	// CLIENT REPLY OFF / SKIP / ON.
	c.send("client", "reply", "off")
	c.send("set", "k", "1")
	c.send("client", "reply", "on")
	if got := c.readRaw(); got != okReply {
		t.Fatalf("after REPLY OFF: %q", got)
	}
	c.send("client", "reply", "skip")
	c.send("incr", "k")
	c.send("incr", "k")
	if got := c.readRaw(); got != integer(3) {
		t.Fatalf("after REPLY SKIP: %q", got)
	}
	c.mustErr("ERR syntax error", "client", "reply", "bogus")

	c.must(okReply, "client", "pause", "100")
	c.must(okReply, "client", "pause", "100", "WRITE")
	c.must(okReply, "client", "pause", "100", "all")
	c.mustErr("ERR CLIENT PAUSE mode must be WRITE or ALL", "client", "pause", "100", "bogus")
	c.mustErr("ERR timeout is not an integer or out of range", "client", "pause", "x")
	c.mustErr("ERR timeout is negative", "client", "pause", "-1")
	c.must(okReply, "client", "unpause")
	c.must(okReply, "client", "tracking", "off")
	if r := c.do("client", "tracking", "on"); !r.IsError() {
		t.Errorf("CLIENT TRACKING ON: %v", r)
	}
	c.mustErr("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled", "client", "caching", "yes")
	c.must(integer(-1), "client", "getredir")
	c.must(arr(bulk("flags"), bulks("off"), bulk("redirect"), integer(-1), bulk("prefixes"), arr()), "client", "trackinginfo")
	c.must(integer(0), "client", "unblock", "5")
	c.mustErr("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR", "client", "unblock", "5", "bogus")
	// Redis 7.0 has no CLIENT CAPA: Redisson 3.52 relies on this exact error.
	c.mustErr("ERR unknown subcommand 'capa'. Try CLIENT HELP.", "client", "capa", "redirect")

	help := c.do("client", "help")
	if len(help.Elems) < 10 || help.Elems[0].String() != "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" ||
		help.Elems[len(help.Elems)-1].String() != "    Prints this help." {
		t.Errorf("CLIENT HELP: %v", help)
	}
}

func TestConfig(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MaxClients = 500 })
	c := dial(t, s.addr)
	c.must(bulks("maxmemory", "0"), "config", "get", "maxmemory")
	c.must(bulks("MAXMEMORY", "0"), "config", "get", "MAXMEMORY")
	c.must(bulks("maxmemory", "0"), "config", "get", "maxmemory", "MaxMemory")
	c.must(bulks("save", "", "appendonly", "no"), "config", "get", "save", "appendonly")
	c.must(bulks("maxclients", "500", "maxmemory", "0", "maxmemory-policy", "noeviction", "maxmemory-samples", "5"), "config", "get", "max*")
	c.must(bulks("slave-read-only", "yes", "replica-read-only", "yes"), "config", "get", "slave-read-only", "replica-read-only")
	c.must(bulks("databases", "16"), "config", "get", "databases")
	c.must(bulks("cluster-enabled", "no"), "config", "get", "cluster-enabled")
	c.must(bulks("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"), "config", "get", "client-output-buffer-limit")
	_, port, _ := strings.Cut(s.addr, ":")
	c.must(bulks("port", port, "bind", "127.0.0.1"), "config", "get", "port", "bind")
	c.must(arr(), "config", "get", "nosuchparam")
	c.must(bulks("lua-time-limit", "5000", "busy-reply-threshold", "5000"), "config", "get", "lua-time-limit", "busy-reply-threshold")

	c.must(okReply, "config", "set", "maxmemory", "100mb")
	c.must(bulks("maxmemory", "104857600"), "config", "get", "maxmemory")
	// noeviction is the only policy; CONFIG SET is all or nothing.
	c.must("-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - "+msgPolicy+"\r\n", "config", "set", "maxmemory", "1k", "maxmemory-policy", "ALLKEYS-LRU")
	c.must(bulks("maxmemory", "104857600", "maxmemory-policy", "noeviction"), "config", "get", "maxmemory", "maxmemory-policy")
	c.must(okReply, "config", "set", "maxmemory", "1k", "maxmemory-policy", "NOEVICTION")
	c.must(bulks("maxmemory", "1000", "maxmemory-policy", "noeviction"), "config", "get", "maxmemory", "maxmemory-policy")
	c.must(okReply, "config", "set", "maxmemory", "0")
	c.must(okReply, "config", "set", "slave-read-only", "no")
	c.must(bulks("replica-read-only", "no"), "config", "get", "replica-read-only")
	c.must(okReply, "config", "set", "lua-time-limit", "100")
	c.must(bulks("busy-reply-threshold", "100"), "config", "get", "busy-reply-threshold")
	c.must(okReply, "config", "set", "save", "3600  1 300 100")
	c.must(bulks("save", "3600 1 300 100"), "config", "get", "save")
	c.must(okReply, "config", "set", "hz", "1000")
	c.must(bulks("hz", "500"), "config", "get", "hz")
	c.must(okReply, "config", "set", "client-output-buffer-limit", "pubsub 1mb 0 0")
	c.must(bulks("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 0 0"), "config", "get", "client-output-buffer-limit")
	if got := s.pubsubOutputLimit(); got != 1<<20 {
		t.Errorf("pub/sub output limit = %d", got)
	}
	c.must(okReply, "config", "set", "maxclients", "7")
	if v, _ := infoField(c.do("info", "clients").String(), "maxclients"); v != "7" {
		t.Errorf("INFO maxclients:%s", v)
	}

	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"x"}, "ERR wrong number of arguments for 'config|set' command"},
		{[]string{"x", "y"}, "ERR Unknown option or number of arguments for CONFIG SET - 'x'"},
		{[]string{"maxmemory", "1", "x"}, "ERR syntax error"},
		{[]string{"maxmemory", "1", "bogus", "2"}, "ERR Unknown option or number of arguments for CONFIG SET - 'bogus'"},
		{[]string{"maxmemory", "1", "maxmemory", "2"}, "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - duplicate parameter"},
		{[]string{"maxmemory", "x"}, "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"},
		{[]string{"maxmemory", "-1"}, "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"},
		{[]string{"maxmemory-policy", "bogus"}, "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"},
		{[]string{"appendonly", "maybe"}, "ERR CONFIG SET failed (possibly related to argument 'appendonly') - can't set immutable config"},
		{[]string{"databases", "4"}, "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"},
		{[]string{"maxclients", "0"}, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"},
		{[]string{"timeout", "-1"}, "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive"},
		{[]string{"proto-max-bulk-len", "10"}, "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive"},
		{[]string{"loglevel", "x"}, "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning"},
		{[]string{"protected-mode", "maybe"}, "ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument must be 'yes' or 'no'"},
		{[]string{"tcp-keepalive", "x"}, "ERR CONFIG SET failed (possibly related to argument 'tcp-keepalive') - argument couldn't be parsed into an integer"},
		{[]string{"save", "x"}, "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"},
		{[]string{"client-output-buffer-limit", "x"}, "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration."},
		{[]string{"client-output-buffer-limit", "bogus 1 1 1"}, "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration."},
		{[]string{"notify-keyspace-events", "Z"}, "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."},
	} {
		c.mustErr(tc.err, append([]string{"config", "set"}, tc.args...)...)
	}
	// A failed CONFIG SET changes nothing.
	c.mustErr("ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction",
		"config", "set", "maxmemory", "5", "maxmemory-policy", "nope")
	c.must(bulks("maxmemory", "0"), "config", "get", "maxmemory")
	c.must(okReply, "config", "set", "notify-keyspace-events", "")

	c.mustErr("ERR wrong number of arguments for 'config|get' command", "config", "get")
	c.mustErr("ERR The server is running without a config file", "config", "rewrite")
	c.mustErr("ERR unknown subcommand 'bogus'. Try CONFIG HELP.", "config", "bogus")
	c.must(okReply, "config", "resetstat")
	if v, _ := infoField(c.do("info", "stats").String(), "total_commands_processed"); v != "1" {
		t.Errorf("after RESETSTAT total_commands_processed:%s", v)
	}
}

// replicated is a backend with followers: WAIT and WAITAOF ask it.
type replicated struct {
	*cluster.Local
	followers int
	waited    []string
}

func (r *replicated) Wait(_ context.Context, n int, timeout time.Duration) (int, error) {
	r.waited = append(r.waited, fmt.Sprintf("wait %d %v", n, timeout))
	return min(n, r.followers), nil
}

func (r *replicated) WaitAOF(_ context.Context, local, n int, timeout time.Duration) (int, int, error) {
	r.waited = append(r.waited, fmt.Sprintf("waitaof %d %d %v", local, n, timeout))
	return 1, min(n, r.followers), nil
}

// leaderInfo reports a leader with two followers.
type leaderInfo struct{}

func (leaderInfo) Replication() []string {
	return []string{"role:master", "connected_slaves:2", "master_failover_state:no-failover"}
}

func (leaderInfo) Role() resp.Reply {
	return resp.ArrayReply(resp.BulkString("master"), resp.IntReply(7), resp.EmptyArr)
}

type followerInfo struct{}

func (followerInfo) Replication() []string { return []string{"role:slave", "master_host:10.0.0.1"} }
func (followerInfo) Role() resp.Reply {
	return resp.ArrayReply(resp.BulkString("slave"), resp.BulkString("10.0.0.1"), resp.IntReply(6379),
		resp.BulkString("connected"), resp.IntReply(7))
}

func TestWaitSingleNode(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(integer(0), "wait", "0", "0")
	c.must(integer(0), "wait", "1", "0") // no replicas: at once, not forever
	c.must(integer(0), "wait", "-1", "0")
	c.mustErr("ERR value is not an integer or out of range", "wait", "x", "0")
	c.mustErr("ERR timeout is not an integer or out of range", "wait", "0", "x")
	c.mustErr("ERR timeout is negative", "wait", "0", "-1")
	c.mustErr("ERR wrong number of arguments for 'wait' command", "wait", "0")
	c.must(arr(integer(0), integer(0)), "waitaof", "0", "0", "0")
	c.must(arr(integer(0), integer(0)), "waitaof", "0", "1", "10")
	c.mustErr("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.", "waitaof", "1", "0", "0")
	c.mustErr("ERR value is out of range, value must between 0 and 1", "waitaof", "2", "0", "0")
	c.mustErr("ERR value is out of range, must be positive", "waitaof", "0", "-1", "0")
	c.mustErr("ERR timeout is negative", "waitaof", "0", "0", "-5")
	c.must(arr(bulk("master"), integer(0), arr()), "role")
	rep := c.do("info", "replication").String()
	for _, f := range []string{"role:master", "connected_slaves:0", "master_failover_state:no-failover", "master_repl_offset:0"} {
		if !strings.Contains(rep, f+"\r\n") {
			t.Errorf("INFO replication lacks %s: %q", f, rep)
		}
	}
}

func TestWaitAsksTheBackend(t *testing.T) {
	var r *replicated
	s := newTestServerWith(t, func(l *cluster.Local) Backend {
		r = &replicated{Local: l, followers: 2}
		return r
	}, func(c *Config) { c.Info = leaderInfo{} })
	c := dial(t, s.addr)
	c.must(integer(2), "wait", "2", "1000")
	c.must(integer(2), "wait", "3", "0")
	c.must(arr(integer(1), integer(1)), "waitaof", "1", "1", "50")
	if want := []string{"wait 2 1s", "wait 3 0s", "waitaof 1 1 50ms"}; fmt.Sprint(r.waited) != fmt.Sprint(want) {
		t.Errorf("backend saw %v, want %v", r.waited, want)
	}
	c.must(arr(bulk("master"), integer(7), arr()), "role")
	c.must(bulk("# Replication\r\nrole:master\r\nconnected_slaves:2\r\nmaster_failover_state:no-failover\r\n"), "info", "replication")
}

func TestFollowerRole(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Info = followerInfo{} })
	c := dial(t, s.addr)
	c.must(arr(bulk("slave"), bulk("10.0.0.1"), integer(6379), bulk("connected"), integer(7)), "role")
	c.mustErr("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.", "wait", "0", "0")
	c.mustErr("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.", "waitaof", "0", "0", "0")
	if v, _ := infoField(c.do("info", "replication").String(), "role"); v != "slave" {
		t.Errorf("role:%s", v)
	}
	if r := c.do("hello", "2"); r.Elems[11].String() != "replica" {
		t.Errorf("HELLO role: %v", r.Elems[11])
	}
}

func TestAdminCommands(t *testing.T) {
	s := newTestServer(t, withDebug)
	c := dial(t, s.addr)
	before := time.Now().Unix()
	c.must(okReply, "set", "a", "1")
	if v, _ := infoField(c.do("info", "persistence").String(), "rdb_changes_since_last_save"); v != "1" {
		t.Errorf("rdb_changes_since_last_save:%s", v)
	}
	// A single node in memory says it saves nothing (a cluster node takes
	// a Raft snapshot: TestSaveTakesSnapshot).
	nothing := "ERR " + errNothingSaved.Error()
	c.mustErr(nothing, "save")
	c.mustErr(nothing, "bgsave")
	c.mustErr(nothing, "bgsave", "schedule")
	c.mustErr("ERR syntax error", "bgsave", "x")
	if v, _ := infoField(c.do("info", "persistence").String(), "rdb_changes_since_last_save"); v != "1" {
		t.Errorf("after a SAVE that saved nothing rdb_changes_since_last_save:%s", v)
	}
	if n := c.do("lastsave").Int; n < before-1 || n > time.Now().Unix()+1 {
		t.Errorf("LASTSAVE = %d", n)
	}
	c.must(status("Background append only file rewriting started"), "bgrewriteaof")

	c.must(okReply, "debug", "sleep", "0")
	c.must(okReply, "debug", "sleep", "0.01")
	c.must(okReply, "debug", "sleep", "x")
	c.mustErr("ERR unknown subcommand 'bogus'. Try DEBUG HELP.", "debug", "bogus")
	c.mustErr("ERR wrong number of arguments for 'debug' command", "debug")

	c.must(okReply, "readonly")
	c.must(okReply, "readwrite")
	c.must(okReply, "asking")
	c.must(arr(), "latency", "latest")
	c.must(arr(), "latency", "history", "command")
	c.must(integer(0), "latency", "reset")
	c.mustErr("ERR No samples available for event 'x'", "latency", "graph", "x")
	c.mustErr("ERR unknown subcommand 'bogus'. Try LATENCY HELP.", "latency", "bogus")
	c.must(integer(1), "slowlog", "len") // DEBUG SLEEP 0.01: 10 ms, at the 10000 µs default
	c.must(okReply, "slowlog", "reset")
	c.must(arr(), "slowlog", "get")
	c.must(arr(), "slowlog", "get", "-1")
	c.mustErr("ERR count should be greater than or equal to -1", "slowlog", "get", "-2")
	c.must(integer(0), "slowlog", "len")
	c.must(okReply, "slowlog", "reset")
	c.must(nilReply, "memory", "usage", "nosuch") // MEMORY USAGE: fsm/encoding_test.go, objects.txt
	c.mustErr("ERR unknown subcommand 'bogus'. Try MEMORY HELP.", "memory", "bogus")
	if r := c.do("memory", "stats"); len(r.Elems)%2 != 0 || len(r.Elems) < 10 {
		t.Errorf("MEMORY STATS: %v", r)
	}
	c.mustErr("ERR syntax error", "shutdown", "bogus")
	if r := c.do("shutdown", "nosave"); !r.IsError() {
		t.Fatalf("SHUTDOWN: %v", r)
	}
	if r := c.do("monitor"); !r.IsError() {
		t.Fatalf("MONITOR: %v", r)
	}
	c.must(status("PONG"), "ping") // still here
}
