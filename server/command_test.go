package server

import (
	"github.com/deadbolt/deadbolt/acl"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

func TestCommandTable(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	all := c.do("command")
	count := c.do("command", "count").Int
	if int64(len(all.Elems)) != count {
		t.Fatalf("COMMAND has %d entries, COMMAND COUNT says %d", len(all.Elems), count)
	}
	names := make(map[string]bool)
	for _, e := range all.Elems {
		if len(e.Elems) != 10 {
			t.Fatalf("entry with %d fields: %v", len(e.Elems), e)
		}
		names[e.Elems[0].String()] = true
	}
	for _, spec := range fsm.Commands() {
		if spec.Flags&fsm.Internal == 0 && !names[spec.Name] {
			t.Errorf("COMMAND lacks %s", spec.Name)
		}
	}
	for name := range connCommands {
		if strings.Contains(name, ".") == names[name] {
			t.Errorf("COMMAND shows %s: %v", name, names[name])
		}
	}
	var top int64
	for _, e := range c.do("command", "list").Elems {
		if !strings.Contains(e.String(), "|") {
			top++
		}
	}
	if top != count {
		t.Errorf("COMMAND LIST has %d commands, COMMAND COUNT %d", top, count)
	}
}

func TestCommandInfo(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	// Byte for byte as redis-server 7.0.15 answers.
	getInfo := "*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n" +
		"*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
	c.must("*2\r\n"+nilReply+getInfo, "command", "info", "bogus", "GET")
	ping := "*10\r\n$4\r\nping\r\n:-1\r\n*1\r\n+fast\r\n:0\r\n:0\r\n:0\r\n*2\r\n+@fast\r\n+@connection\r\n*2\r\n$25\r\nrequest_policy:all_shards\r\n$29\r\nresponse_policy:all_succeeded\r\n*0\r\n*0\r\n"
	c.must("*1\r\n"+ping, "command", "info", "ping")
	c.must("*1\r\n*10\r\n$11\r\nclient|list\r\n:-2\r\n*4\r\n+admin\r\n+noscript\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n*4\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n+@connection\r\n*1\r\n$23\r\nnondeterministic_output\r\n*0\r\n*0\r\n",
		"command", "info", "client|list")

	client := c.do("command", "info", "client").Elems[0]
	var subs []string
	for _, e := range client.Elems[9].Elems {
		subs = append(subs, e.Elems[0].String())
	}
	for _, want := range []string{"client|id", "client|kill", "client|list", "client|setinfo", "client|setname"} {
		if !strings.Contains(strings.Join(subs, " "), want) {
			t.Errorf("CLIENT's subcommands lack %s: %v", want, subs)
		}
	}
	// A command missing from Redis's table is described from its flags.
	if r := c.do("command", "info", "raft"); len(r.Elems) != 1 || len(r.Elems[0].Elems) != 10 {
		t.Errorf("COMMAND INFO raft: %v", r)
	}
	if r := c.do("command", "info"); len(r.Elems) != int(c.do("command", "count").Int) {
		t.Errorf("COMMAND INFO without names has %d entries", len(r.Elems))
	}
}

func TestCommandDocsAndList(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(arr(bulk("get"), bulks("summary", "Get the value of a key", "since", "1.0.0", "group", "string")), "command", "docs", "get", "bogus")
	c.must(arr(), "command", "docs", "bogus")
	docs := c.do("command", "docs", "config")
	if len(docs.Elems) != 2 || len(docs.Elems[1].Elems) != 8 || docs.Elems[1].Elems[6].String() != "subcommands" {
		t.Errorf("COMMAND DOCS config: %v", docs)
	}
	if n := len(c.do("command", "docs").Elems); n != 2*int(c.do("command", "count").Int) {
		t.Errorf("COMMAND DOCS has %d entries", n/2)
	}

	list := func(args ...string) string {
		var out []string
		for _, e := range c.do(append([]string{"command", "list"}, args...)...).Elems {
			out = append(out, e.String())
		}
		return strings.Join(out, " ")
	}
	if got := list("filterby", "pattern", "conf*"); got != "config config|get config|help config|resetstat config|rewrite config|set" {
		t.Errorf("FILTERBY PATTERN conf*: %s", got)
	}
	if got := list("FILTERBY", "aclcat", "pubsub"); !strings.Contains(got, "publish") || !strings.Contains(got, "pubsub|numsub") || strings.Contains(got, "get ") {
		t.Errorf("FILTERBY ACLCAT pubsub: %s", got)
	}
	if got := list("filterby", "module", "x"); got != "" {
		t.Errorf("FILTERBY MODULE: %s", got)
	}
	c.mustErr("ERR syntax error", "command", "list", "filterby")
	c.mustErr("ERR syntax error", "command", "list", "filterby", "acllog", "x")
	c.mustErr("ERR unknown subcommand 'bogus'. Try COMMAND HELP.", "command", "bogus")
	help := c.do("command", "help")
	if len(help.Elems) != 21 || help.Elems[0].String() != "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" {
		t.Errorf("COMMAND HELP: %v", help)
	}
}

func TestCommandGetKeys(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(bulks("a"), "command", "getkeys", "get", "a")
	c.must(bulks("a", "b", "c"), "command", "getkeys", "del", "a", "b", "c")
	c.must(bulks("a", "c"), "command", "getkeys", "mset", "a", "1", "c", "2")
	c.must(bulks("k"), "command", "getkeys", "set", "k", "v", "px", "100")
	c.must(arr(arr(bulk("a"), arr(status("RM"), status("delete"))), arr(bulk("b"), arr(status("RM"), status("delete")))),
		"command", "getkeysandflags", "del", "a", "b")
	c.mustErr("ERR wrong number of arguments for 'command|getkeys' command", "command", "getkeys", "get")
	c.mustErr("ERR Invalid number of arguments specified for command", "command", "getkeys", "get", "a", "b")
	c.mustErr("ERR The command has no key arguments", "command", "getkeys", "ping", "x")
	c.mustErr("ERR Invalid command specified", "command", "getkeys", "bogus", "x")
	c.must(bulks("k"), "command", "getkeys", "watch", "k")
	// A shard channel is not a key (its spec is not_key), as redis-server
	// 7.0.15 answers (TestRedisDiffErrors compares the two).
	c.mustErr("ERR The command has no key arguments", "command", "getkeys", "spublish", "ch", "m")
}

// TestKeysFromSpecs covers the key-spec forms the table uses, whatever
// commands the state machine has registered.
func TestKeysFromSpecs(t *testing.T) {
	argv := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	positions := func(specs string, args string) string {
		keys, ok := acl.FindKeys(acl.ParseKeySpecs(specs), argv(args))
		if !ok {
			return "invalid"
		}
		var out []string
		for _, k := range keys {
			out = append(out, string(argv(args)[k.Pos]))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ specs, args, want string }{
		{"RW|i1|r0,1,0", "get k", "k"},
		{"RW|i1|r-1,1,0", "del a b c", "a,b,c"},
		{"RW|i1|r-1,2,0", "mset a 1 b 2", "a,b"},
		{"RW|i1|r-2,1,0", "blpop a b 0", "a,b"},
		{"RW|i2|n0,1,1", "eval body 2 k1 k2 arg", "k1,k2"},
		{"RW|i2|n0,1,1", "eval body 0 arg", "invalid"},
		{"RW|i2|n0,1,1", "eval body 5 k1", "invalid"},
		{"RW|i2|n0,1,1", "eval body x", "invalid"},
		{"OW|i1|r0,1,0;RO|i2|n0,1,1", "zunionstore d 2 a b", "d,a,b"},
		{"RO|kSTREAMS,1|r-1,1,2", "xread count 1 streams s1 s2 0 0", "s1,s2"},
		{"OW|kSTORE,6|r0,1,0", "georadius k 0 0 1 km STORE dst", "dst"},
		{"OW|kSTORE,6|r0,1,0", "georadius k 0 0 1 km", ""},
		{"RW|kKEYS,-2|r-1,1,0", "migrate h p \"\" 0 5 KEYS a b", "a,b"},
		{"RO|u|u", "sort k by x", ""},
	} {
		if got := positions(tc.specs, tc.args); got != tc.want {
			t.Errorf("%s on %q: %s, want %s", tc.specs, tc.args, got, tc.want)
		}
	}
}

func TestCommandTableRows(t *testing.T) {
	// Every row decodes, names are unique and subcommands have parents.
	seen := make(map[string]bool)
	for _, row := range redisCommands {
		if seen[row.name] {
			t.Errorf("%s twice", row.name)
		}
		seen[row.name] = true
		if parent, _, ok := strings.Cut(row.name, "|"); ok && !seen[parent] && docs()[parent] == nil {
			t.Errorf("%s has no parent row", row.name)
		}
		for _, ks := range acl.ParseKeySpecs(row.keys) {
			if r := specReply(ks); r.Type != resp.Map || len(r.Elems)%2 != 0 {
				t.Errorf("%s: bad key spec", row.name)
			}
		}
	}
}
