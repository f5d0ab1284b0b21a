package deadbolt

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scrape fetches a node's /metrics and returns each sample by its name
// and labels as the text format writes them: `deadbolt_keys`,
// `deadbolt_commands_total{command="set",outcome="ok"}`.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	code, body := httpGet(t, addr, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := make(map[string]float64)
	for _, l := range strings.Split(body, "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", l)
		}
		out[l[:i]] = v
	}
	return out
}

func httpGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	r, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

func withHTTP(cfg *Config) { cfg.HTTPAddr = "127.0.0.1:0" }

func TestMetricsSingleNode(t *testing.T) {
	n := RunT(t, withHTTP)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2})
	defer rdb.Close()

	before := scrape(t, n.HTTPAddr())
	sub := rdb.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := rdb.SetNX(ctx, fmt.Sprintf("lock:%d", i), "owner", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.Set(ctx, "plain", "v", 0)
	rdb.Get(ctx, "plain")
	if err := rdb.LPush(ctx, "plain", "x").Err(); err == nil {
		t.Fatal("LPUSH on a string succeeded")
	}
	if err := rdb.Do(ctx, "get").Err(); err == nil {
		t.Fatal("GET without a key succeeded")
	}
	if err := rdb.Publish(ctx, "news", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.ReceiveMessage(ctx); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, n.HTTPAddr())

	moved := func(series string, by float64) {
		t.Helper()
		if d := after[series] - before[series]; d != by {
			t.Errorf("%s moved by %v, want %v (before %v, after %v)", series, d, by, before[series], after[series])
		}
	}
	moved(`deadbolt_commands_total{command="set",outcome="ok"}`, 21)
	moved(`deadbolt_commands_total{command="get",outcome="ok"}`, 1)
	moved(`deadbolt_commands_total{command="get",outcome="rejected"}`, 1)
	moved(`deadbolt_commands_total{command="lpush",outcome="error"}`, 1)
	moved(`deadbolt_command_duration_seconds_count{command="set"}`, 21)
	moved(`deadbolt_error_replies_total{kind="WRONGTYPE"}`, 1)
	moved(`deadbolt_pubsub_messages_delivered_total`, 1)
	// The key counts are taken at most once a second.
	keys := waitScrape(t, n.HTTPAddr(), func(m map[string]float64) bool { return m[`deadbolt_keys`] == 21 })
	if keys[`deadbolt_keys`] != 21 || keys[`deadbolt_keys_with_deadline`] != 20 {
		t.Errorf("keys %v, with deadline %v; want 21 and 20", keys[`deadbolt_keys`], keys[`deadbolt_keys_with_deadline`])
	}
	// lock:0..lock:9 (6 bytes each), lock:10..19 (7), "owner" in each, plain=v.
	if got, want := keys[`deadbolt_logical_memory_bytes`], float64(10*6+10*7+20*5+5+1); got != want {
		t.Errorf("logical memory %v, want %v", got, want)
	}
	// What maxmemory limits is counted only while there is a limit:
	// without one the series is absent.
	if got, ok := keys[`deadbolt_maxmemory_used_bytes`]; ok || keys[`deadbolt_maxmemory_bytes`] != 0 {
		t.Errorf("no maxmemory: maxmemory used %v (present %v), maxmemory %v", got, ok, keys[`deadbolt_maxmemory_bytes`])
	}
	// Set, it is the keys' MEMORY USAGE, summed.
	if err := rdb.ConfigSet(ctx, "maxmemory", "1gb").Err(); err != nil {
		t.Fatal(err)
	}
	var usage int64
	for _, k := range append(rdb.Keys(ctx, "lock:*").Val(), "plain") {
		usage += rdb.MemoryUsage(ctx, k).Val()
	}
	limited := waitScrape(t, n.HTTPAddr(), func(m map[string]float64) bool { return m[`deadbolt_maxmemory_bytes`] == 1<<30 })
	if got := limited[`deadbolt_maxmemory_used_bytes`]; got != float64(usage) || usage == 0 || limited[`deadbolt_maxmemory_bytes`] != 1<<30 {
		t.Errorf("maxmemory used %v (MEMORY USAGE adds up to %d), maxmemory %v", got, usage, limited[`deadbolt_maxmemory_bytes`])
	}
	if after[`deadbolt_pubsub_channels`] != 1 || after[`deadbolt_connections`] < 2 {
		t.Errorf("channels %v, connections %v", after[`deadbolt_pubsub_channels`], after[`deadbolt_connections`])
	}
	if _, ok := after[`deadbolt_raft_term`]; ok {
		t.Error("a single node without a log reports Raft series")
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet(t, n.HTTPAddr(), path); code != 200 || body != "ok\n" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
}

// Bad HTTP clients get an HTTP error or are cut off, and never hold up
// the RESP side: with many connections stalled in their headers, commands
// and scrapes go on.
func TestMetricsHTTPBadClients(t *testing.T) {
	n := RunT(t, withHTTP)
	addr := n.HTTPAddr()
	r, err := http.Post("http://"+addr+"/metrics", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d", r.StatusCode)
	}
	// A header larger than the limit.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 64<<10))
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, _ := bufio.NewReader(nc).ReadString('\n')
	nc.Close()
	if !regexp.MustCompile(`^HTTP/1.1 431 `).MatchString(status) {
		t.Errorf("oversized header: %q", status)
	}
	// Slow clients: connections that send half a request and stop.
	for range 50 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		io.WriteString(nc, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
	}
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer rdb.Close()
	for i := range 100 {
		if err := rdb.Set(context.Background(), "k"+strconv.Itoa(i), "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if m := scrape(t, addr); m[`deadbolt_commands_total{command="set",outcome="ok"}`] != 100 {
		t.Errorf("scrape beside stalled clients: %v sets", m[`deadbolt_commands_total{command="set",outcome="ok"}`])
	}
}

// waitHTTP polls path until it answers code, or fails after 15 s.
func waitHTTP(t *testing.T, addr, path string, code int) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, body := httpGet(t, addr, path)
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s: %d %q, want %d", path, addr, got, body, code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMetricsCluster(t *testing.T) {
	c := RunClusterT(t, 3, func(_ int, cfg *Config) { withHTTP(cfg) })
	l := c.WaitLeader()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: c.Addr(l)})
	defer rdb.Close()

	before := make([]map[string]float64, 3)
	for i, node := range c.Nodes {
		before[i] = scrape(t, node.HTTPAddr())
	}
	for i := range 30 {
		if err := rdb.SetNX(ctx, fmt.Sprintf("lock:%d", i), "owner", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// WAIT 2: both followers have the writes, so their counts below are
	// final.
	if got, err := rdb.Do(ctx, "wait", 2, 5000).Int(); err != nil || got != 2 {
		t.Fatalf("WAIT: %d %v", got, err)
	}
	leader := scrape(t, c.Nodes[l].HTTPAddr())
	if d := leader[`deadbolt_commands_total{command="set",outcome="ok"}`] - before[l][`deadbolt_commands_total{command="set",outcome="ok"}`]; d != 30 {
		t.Errorf("leader counted %v SETs, want 30", d)
	}
	if leader[`deadbolt_raft_state{state="Leader"}`] != 1 || leader[`deadbolt_raft_leader_known`] != 1 {
		t.Errorf("leader's state series: %v %v", leader[`deadbolt_raft_state{state="Leader"}`], leader[`deadbolt_raft_leader_known`])
	}
	if leader[`deadbolt_raft_log_sync_duration_seconds_count`] == 0 || leader[`deadbolt_raft_log_disk_bytes`] == 0 {
		t.Errorf("leader's log series: syncs %v, bytes %v", leader[`deadbolt_raft_log_sync_duration_seconds_count`], leader[`deadbolt_raft_log_disk_bytes`])
	}
	for _, f := range c.Followers() {
		id := c.IDs()[f]
		if v, ok := leader[`deadbolt_raft_follower_last_contact_seconds{follower="`+id+`"}`]; !ok || v < 0 || v > 5 {
			t.Errorf("leader's last contact with %s: %v (present %v)", id, v, ok)
		}
		// A follower's applied index moves without it serving any command.
		m := waitScrape(t, c.Nodes[f].HTTPAddr(), func(m map[string]float64) bool {
			return m[`deadbolt_keys`] == 30
		})
		if m[`deadbolt_raft_fsm_applied_index`] < before[f][`deadbolt_raft_fsm_applied_index`]+1 ||
			m[`deadbolt_raft_applied_index`] < m[`deadbolt_raft_fsm_applied_index`] {
			t.Errorf("follower %s: applied %v (before %v), raft applied %v", id, m[`deadbolt_raft_fsm_applied_index`],
				before[f][`deadbolt_raft_fsm_applied_index`], m[`deadbolt_raft_applied_index`])
		}
		if m[`deadbolt_raft_state{state="Follower"}`] != 1 || m[`deadbolt_keys_with_deadline`] != 30 {
			t.Errorf("follower %s: state %v, keys with deadline %v", id, m[`deadbolt_raft_state{state="Follower"}`], m[`deadbolt_keys_with_deadline`])
		}
		if _, ok := m[`deadbolt_raft_last_contact_seconds`]; !ok {
			t.Errorf("follower %s: no last contact", id)
		}
		waitHTTP(t, c.Nodes[f].HTTPAddr(), "/readyz", 200)
	}

	// A write that waited for the log (the event loop's asynchronous
	// path) is in the slow log with its own arguments.
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, "slow-key", strings.Repeat("v", 200), 0)
	entries, err := rdb.SlowLogGet(ctx, 1).Result()
	if err != nil || len(entries) != 1 || len(entries[0].Args) != 3 || entries[0].Args[1] != "slow-key" ||
		entries[0].Args[2] != strings.Repeat("v", 128)+"... (72 more bytes)" {
		t.Errorf("SLOWLOG GET 1 after a replicated SET: %+v %v", entries, err)
	}

	// The leader dies and the other follower is cut off: the remaining
	// node knows no leader, and says so, until the two can elect one.
	fs := c.Followers()
	a, b := fs[0], fs[1]
	c.Kill(l)
	c.Isolate(b)
	if body := waitHTTP(t, c.Nodes[a].HTTPAddr(), "/readyz", 503); body != "no leader known\n" {
		t.Errorf("/readyz without a leader: %q", body)
	}
	if code, _ := httpGet(t, c.Nodes[a].HTTPAddr(), "/healthz"); code != 200 {
		t.Errorf("/healthz without a leader: %d", code)
	}
	c.Heal()
	c.WaitNewLeader(l)
	waitHTTP(t, c.Nodes[a].HTTPAddr(), "/readyz", 200)
	if m := scrape(t, c.Nodes[a].HTTPAddr()); m[`deadbolt_raft_leader_changes_total`] < before[a][`deadbolt_raft_leader_changes_total`]+1 {
		t.Errorf("leader changes: %v, before %v", m[`deadbolt_raft_leader_changes_total`], before[a][`deadbolt_raft_leader_changes_total`])
	}
}

// waitScrape scrapes until ok holds, or fails after 15 s.
func waitScrape(t *testing.T, addr string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		m := scrape(t, addr)
		if ok(m) || time.Now().After(deadline) {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Error kinds are whatever a script answers: bytes a label cannot hold are
// replaced, and kinds that then read the same are added up, rather than
// failing the scrape.
func TestMetricsOddErrorKinds(t *testing.T) {
	n := RunT(t, withHTTP)
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer rdb.Close()
	for _, script := range []string{`return redis.error_reply('\255A boom')`, `return redis.error_reply('\254A bang')`} {
		if err := rdb.Eval(context.Background(), script, nil).Err(); err == nil {
			t.Fatalf("%s succeeded", script)
		}
	}
	if got := scrape(t, n.HTTPAddr())["deadbolt_error_replies_total{kind=\"\uFFFDA\"}"]; got != 2 {
		t.Errorf("error kind with bytes replaced: %v, want 2", got)
	}
}
