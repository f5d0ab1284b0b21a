package server

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sectionTitles returns an INFO reply's "# Title" lines in order, checking
// Redis's layout on the way: every line ends in CRLF, sections are
// separated by one empty line, and each is a title then field:value lines.
func sectionTitles(t *testing.T, info string) []string {
	t.Helper()
	if info == "" {
		return nil
	}
	if !strings.HasSuffix(info, "\r\n") || strings.HasSuffix(info, "\r\n\r\n") {
		t.Fatalf("INFO does not end in exactly one CRLF: %q", info[max(0, len(info)-40):])
	}
	var titles []string
	for i, sec := range strings.Split(strings.TrimSuffix(info, "\r\n"), "\r\n\r\n") {
		lines := strings.Split(sec, "\r\n")
		title, ok := strings.CutPrefix(lines[0], "# ")
		if !ok {
			t.Fatalf("section %d starts with %q", i, lines[0])
		}
		titles = append(titles, title)
		for _, l := range lines[1:] {
			if k, _, ok := strings.Cut(l, ":"); !ok || k == "" || strings.ContainsAny(l, "\r\n") {
				t.Fatalf("section %s: bad line %q", title, l)
			}
		}
	}
	return titles
}

func TestInfoSections(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	def := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules", "Errorstats", "Cluster", "Keyspace"}
	all := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules", "Commandstats", "Errorstats", "Latencystats", "Cluster", "Keyspace"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, def},
		{[]string{"default"}, def},
		{[]string{"DEFAULT", "cpu"}, def},
		{[]string{"all"}, all},
		{[]string{"everything"}, append(all[:len(all):len(all)], "Raft")},
		{[]string{"raft"}, []string{"Raft"}},
		{[]string{"raft", "server"}, []string{"Server", "Raft"}},
		{[]string{"default", "commandstats"}, []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules", "Commandstats", "Errorstats", "Cluster", "Keyspace"}},
		{[]string{"server", "clients"}, []string{"Server", "Clients"}},
		{[]string{"keyspace", "SERVER", "server"}, []string{"Server", "Keyspace"}},
		{[]string{"replication"}, []string{"Replication"}},
		{[]string{"bogus"}, nil},
		{[]string{"keyspace", "bogus"}, []string{"Keyspace"}},
	} {
		r := c.do(append([]string{"info"}, tc.args...)...)
		if got := sectionTitles(t, r.String()); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("INFO %v: sections %v, want %v", tc.args, got, tc.want)
		}
	}
	c.must("$0\r\n\r\n", "info", "bogus")
	c.must(bulk("# Modules\r\n"), "info", "modules")
	c.must(bulk("# Cluster\r\ncluster_enabled:0\r\n"), "info", "cluster")
	c.must(bulk("# Keyspace\r\n"), "info", "keyspace")
	c.must(bulk("# Raft\r\nraft_enabled:0\r\n"), "info", "raft")
}

func TestInfoFields(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Version = "1.2.3" })
	c := dial(t, s.addr)
	sub := dial(t, s.addr)
	sub.must(arr(bulk("subscribe"), bulk("ch"), integer(1)), "subscribe", "ch")
	sub.must(arr(bulk("psubscribe"), bulk("p*"), integer(2)), "psubscribe", "p*")
	c.must(okReply, "set", "a", "1")
	c.must(okReply, "set", "b", "1", "EX", "100")
	c.must(okReply, "select", "5")
	c.must(okReply, "set", "c", "1")
	c.mustErr("ERR unknown command 'nope', with args beginning with: ", "nope")
	c.send("get", "a", "b") // wrong arity: rejected
	c.readRaw()
	c.must(okReply, "select", "0")
	c.must(bulk("1"), "eval", "return '1'", "0")
	c.must(bulk("7f923f79fe76194c868d7e1d0820de36700eb649"), "script", "load", "return 2")

	info := c.do("info", "everything").String()
	_, port, _ := strings.Cut(s.addr, ":")
	for field, want := range map[string]string{
		"redis_version":            "7.0.15",
		"redis_mode":               "standalone",
		"arch_bits":                strconv.Itoa(strconv.IntSize),
		"tcp_port":                 port,
		"process_id":               strconv.Itoa(os.Getpid()),
		"run_id":                   s.runID,
		"deadbolt_version":         "1.2.3",
		"uptime_in_days":           "0",
		"connected_clients":        "2",
		"blocked_clients":          "0",
		"pubsub_clients":           "1",
		"maxclients":               "10000",
		"maxmemory":                "0",
		"maxmemory_human":          "0B",
		"maxmemory_policy":         "noeviction",
		"number_of_cached_scripts": "2",
		"loading":                  "0",
		"aof_enabled":              "0",
		"rejected_connections":     "0",
		"pubsub_channels":          "1",
		"pubsub_patterns":          "1",
		"pubsubshard_channels":     "0",
		"role":                     "master",
		"connected_slaves":         "0",
		"master_failover_state":    "no-failover",
		"cluster_enabled":          "0",
		"db0":                      "keys=2,expires=1,avg_ttl=0",
		"db5":                      "keys=1,expires=0,avg_ttl=0",
		"errorstat_ERR":            "count=2",
		"total_error_replies":      "2",
	} {
		if got, ok := infoField(info, field); !ok || got != want {
			t.Errorf("%s:%q, want %q", field, got, want)
		}
	}
	for _, field := range []string{"used_memory", "used_memory_rss", "used_memory_peak", "total_connections_received",
		"total_commands_processed", "instantaneous_ops_per_sec", "uptime_in_seconds", "server_time_usec", "lru_clock"} {
		v, ok := infoField(info, field)
		if n, err := strconv.ParseInt(v, 10, 64); !ok || err != nil || n < 0 {
			t.Errorf("%s:%q is not a count", field, v)
		}
	}
	if v, _ := infoField(info, "used_memory_human"); !strings.HasSuffix(v, "K") && !strings.HasSuffix(v, "M") && !strings.HasSuffix(v, "G") {
		t.Errorf("used_memory_human:%s", v)
	}
	if v, _ := infoField(info, "mem_fragmentation_ratio"); !strings.Contains(v, ".") {
		t.Errorf("mem_fragmentation_ratio:%s", v)
	}
	if v, _ := infoField(info, "master_replid"); len(v) != 40 {
		t.Errorf("master_replid:%s", v)
	}
	if v, _ := infoField(info, "cmdstat_set"); !strings.HasPrefix(v, "calls=3,usec=") || !strings.HasSuffix(v, ",rejected_calls=0,failed_calls=0") {
		t.Errorf("cmdstat_set:%s", v)
	}
	if v, _ := infoField(info, "cmdstat_get"); !strings.HasPrefix(v, "calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,") {
		t.Errorf("cmdstat_get:%s", v)
	}
	if v, _ := infoField(info, "cmdstat_subscribe"); !strings.HasPrefix(v, "calls=1,") {
		t.Errorf("cmdstat_subscribe:%s", v)
	}

	// instantaneous_ops_per_sec measures between INFO calls.
	c.do("info", "stats")
	for range 50 {
		c.do("ping")
	}
	time.Sleep(120 * time.Millisecond)
	if v, _ := infoField(c.do("info", "stats").String(), "instantaneous_ops_per_sec"); v == "0" {
		t.Errorf("instantaneous_ops_per_sec:%s after 50 commands", v)
	}
}

func TestBytesToHuman(t *testing.T) {
	for n, want := range map[uint64]string{0: "0B", 1023: "1023B", 1024: "1.00K", 1138688: "1.09M", 25276026880: "23.54G", 1 << 40: "1.00T"} {
		if got := bytesToHuman(n); got != want {
			t.Errorf("bytesToHuman(%d) = %s, want %s", n, got, want)
		}
	}
}
