package server

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
	"github.com/redis/go-redis/v9"
)

// The fields of Redis Sentinel 7.0's replies, in order (captured from
// redis-sentinel 7.0.15 monitoring a master with two replicas).
var (
	sentinelMasterKeys = []string{"name", "ip", "port", "runid", "flags", "link-pending-commands",
		"link-refcount", "last-ping-sent", "last-ok-ping-reply", "last-ping-reply", "down-after-milliseconds",
		"info-refresh", "role-reported", "role-reported-time", "config-epoch", "num-slaves",
		"num-other-sentinels", "quorum", "failover-timeout", "parallel-syncs"}
	sentinelReplicaKeys = []string{"name", "ip", "port", "runid", "flags", "link-pending-commands",
		"link-refcount", "last-ping-sent", "last-ok-ping-reply", "last-ping-reply", "down-after-milliseconds",
		"info-refresh", "role-reported", "role-reported-time", "master-link-down-time", "master-link-status",
		"master-host", "master-port", "slave-priority", "slave-repl-offset", "replica-announced"}
	sentinelSentinelKeys = []string{"name", "ip", "port", "runid", "flags", "link-pending-commands",
		"link-refcount", "last-ping-sent", "last-ok-ping-reply", "last-ping-reply", "down-after-milliseconds",
		"last-hello-message", "voted-leader", "voted-leader-epoch"}
)

// fieldMap decodes a flat field/value array of bulk strings.
func fieldMap(tb testing.TB, r resp.Reply) map[string]string {
	tb.Helper()
	if r.Type != resp.Array || len(r.Elems)%2 != 0 {
		tb.Fatalf("not a field/value array: %v", r)
	}
	m := make(map[string]string)
	for i := 0; i < len(r.Elems); i += 2 {
		if r.Elems[i].Type != resp.Bulk || r.Elems[i+1].Type != resp.Bulk {
			tb.Fatalf("field %d of %v is not a bulk string", i, r)
		}
		m[r.Elems[i].String()] = r.Elems[i+1].String()
	}
	return m
}

func fieldKeys(r resp.Reply) []string {
	var out []string
	for i := 0; i < len(r.Elems); i += 2 {
		out = append(out, r.Elems[i].String())
	}
	return out
}

// A single node is a Sentinel of itself: the master, without replicas or
// other Sentinels.
func TestSentinelSingleNode(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	host, port, _ := net.SplitHostPort(s.addr)
	c.must(bulks(host, port), "sentinel", "get-master-addr-by-name", "mymaster")
	c.must(bulks(host, port), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
	c.must(nilReply, "sentinel", "get-master-addr-by-name", "other")
	m := c.do("sentinel", "master", "mymaster")
	if got := fieldKeys(m); !slices.Equal(got, sentinelMasterKeys) {
		t.Errorf("SENTINEL MASTER fields:\n got %q\nwant %q", got, sentinelMasterKeys)
	}
	f := fieldMap(t, m)
	if f["name"] != "mymaster" || f["ip"] != host || f["port"] != port || f["flags"] != "master" ||
		f["num-slaves"] != "0" || f["num-other-sentinels"] != "0" || f["quorum"] != "1" || len(f["runid"]) != 40 {
		t.Errorf("SENTINEL MASTER: %v", f)
	}
	if ms := c.do("sentinel", "masters"); len(ms.Elems) != 1 || fieldMap(t, ms.Elems[0])["name"] != "mymaster" {
		t.Errorf("SENTINEL MASTERS: %v", ms)
	}
	c.must(arr(), "sentinel", "replicas", "mymaster")
	c.must(arr(), "sentinel", "slaves", "mymaster")
	c.must(arr(), "sentinel", "sentinels", "mymaster")
	c.must(bulk(f["runid"]), "sentinel", "myid")
	c.must(status("OK 1 usable Sentinels. Quorum and failover authorization can be reached"), "sentinel", "ckquorum", "mymaster")
	c.must(arr(integer(0), bulk("*"), integer(0)), "sentinel", "is-master-down-by-addr", host, port, "0", "*")
	c.mustErr("NOGOODSLAVE No suitable replica to promote", "sentinel", "failover", "mymaster")
	c.must(arr(), "sentinel", "pending-scripts")
	c.must(okReply, "sentinel", "flushconfig")
	c.must(integer(1), "sentinel", "reset", "my*")
	c.must(bulks("announce-hostnames", "no", "announce-ip", "", "announce-port", "0"), "sentinel", "config", "get", "ANNOUNCE-*")

	// Errors as Redis Sentinel 7.0 words them.
	for _, tc := range []struct{ want, cmd string }{
		{"ERR wrong number of arguments for 'sentinel' command", "sentinel"},
		{"ERR wrong number of arguments for 'sentinel|masters' command", "sentinel masters x"},
		{"ERR wrong number of arguments for 'sentinel|master' command", "sentinel master"},
		{"ERR wrong number of arguments for 'sentinel|get-master-addr-by-name' command", "sentinel get-master-addr-by-name"},
		{"ERR wrong number of arguments for 'sentinel|is-master-down-by-addr' command", "sentinel is-master-down-by-addr 1 2 3"},
		{"ERR unknown subcommand 'foo'. Try SENTINEL HELP.", "sentinel foo"},
		{"ERR No such master with that name", "sentinel master nosuch"},
		{"ERR No such master with that name", "sentinel replicas nosuch"},
		{"ERR No such master with that name", "sentinel slaves nosuch"},
		{"ERR No such master with that name", "sentinel sentinels nosuch"},
		{"ERR No such master with that name", "sentinel ckquorum nosuch"},
		{"ERR No such master with that name", "sentinel failover nosuch"},
		{"ERR value is not an integer or out of range", "sentinel is-master-down-by-addr 127.0.0.1 1 x *"},
		{"ERR Only SENTINEL CONFIG GET <option> / SET <option> <value> are supported.", "sentinel config bogus x"},
	} {
		c.mustErr(tc.want, strings.Fields(tc.cmd)...)
	}
	if h := c.do("sentinel", "help"); len(h.Elems) != 49 || h.Elems[0].String() != "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" {
		t.Errorf("SENTINEL HELP: %d lines, first %q", len(h.Elems), h.Elems[0].String())
	}

	// go-redis's Sentinel client reads the same replies.
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr})
	t.Cleanup(func() { sc.Close() })
	addr, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
	if err != nil || !slices.Equal(addr, []string{host, port}) {
		t.Errorf("go-redis GetMasterAddrByName = %v, %v", addr, err)
	}
	if mm, err := sc.Master(ctx, "mymaster").Result(); err != nil || mm["ip"] != host {
		t.Errorf("go-redis Master = %v, %v", mm, err)
	}
}

func TestSentinelMasterName(t *testing.T) {
	s := newTestServer(t)
	d := s.StartDiscovery(DiscoveryConfig{MasterName: "locks"})
	c := dial(t, s.addr)
	host, port, _ := net.SplitHostPort(s.addr)
	c.must(bulks(host, port), "sentinel", "get-master-addr-by-name", "locks")
	c.must(nilReply, "sentinel", "get-master-addr-by-name", "mymaster")
	d.Close()
	c.must(bulks(host, port), "sentinel", "get-master-addr-by-name", "mymaster")
}

// A second listener serves the same commands.
func TestServeSentinel(t *testing.T) {
	s := newTestServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeSentinel(ln) }()
	c := dial(t, ln.Addr().String())
	host, port, _ := net.SplitHostPort(s.addr)
	c.must(bulks(host, port), "sentinel", "get-master-addr-by-name", "mymaster")
	c.must(okReply, "set", "k", "v")
	dial(t, s.addr).must(bulk("v"), "get", "k")
	ln.Close()
	if err := <-done; err != nil {
		t.Fatalf("ServeSentinel after Close: %v", err)
	}
}
