package deadbolt

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	dbclient "github.com/deadbolt/deadbolt/client"
)

// pageStatus is the part of /api/status the tests read.
type pageStatus struct {
	Node    string `json:"node"`
	Role    string `json:"role"`
	Leader  string `json:"leader"`
	Members []struct {
		ID      string `json:"id"`
		Role    string `json:"role"`
		Term    uint64 `json:"term"`
		Applied uint64 `json:"applied_index"`
		Health  string `json:"health"`
		Self    bool   `json:"self"`
	} `json:"members"`
	Timeline []struct {
		Kind   string `json:"kind"`
		Leader string `json:"leader"`
		Reason string `json:"reason"`
	} `json:"timeline"`
	Locks []map[string]any `json:"locks"`
}

func getJSON(t *testing.T, addr, path string, into any) int {
	t.Helper()
	code, body := httpGet(t, addr, path)
	if err := json.Unmarshal([]byte(body), into); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %v\n%s", path, code, err, body)
	}
	return code
}

// TestStatusAPICluster: /api/status on a follower names every member with
// the role it reports, the timeline has the start and the leader, and the
// locks held are listed; /api/locks filters as DEADBOLT LOCKS does.
func TestStatusAPICluster(t *testing.T) {
	c := RunClusterT(t, 3, func(_ int, cfg *Config) { withHTTP(cfg) })
	l := c.WaitLeader()
	f := c.Followers()[0]
	ctx := context.Background()
	lc := dbclient.New(redis.NewClient(&redis.Options{Addr: c.Addr(l)}))
	defer lc.Close()
	if err := lc.NewLock("orders", dbclient.WithOwner(dbclient.OwnerOf("svc-a", 1))).LockLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := resp2(t, c.Addr(l)).SetNX(ctx, "job", "tok", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	addr := c.Nodes[f].HTTPAddr()
	var st pageStatus
	if code := getJSON(t, addr, "/api/status", &st); code != 200 {
		t.Fatalf("/api/status: %d", code)
	}
	leaderID := c.IDs()[l]
	if st.Node != c.IDs()[f] || st.Role != "Follower" || st.Leader != leaderID || len(st.Members) != 3 {
		t.Fatalf("status: %+v", st)
	}
	for _, m := range st.Members {
		wantRole := "Follower"
		if m.ID == leaderID {
			wantRole = "Leader"
		}
		if m.Role != wantRole || m.Term == 0 || m.Applied == 0 || m.Health != "ok" || m.Self != (m.ID == st.Node) {
			t.Errorf("member %+v, want role %s, healthy", m, wantRole)
		}
	}
	var sawStart, sawLeader bool
	for _, e := range st.Timeline {
		sawStart = sawStart || e.Kind == "start"
		sawLeader = sawLeader || (e.Kind == "leader" && e.Leader == leaderID && strings.Contains(e.Reason, leaderID+" leads in term"))
	}
	if !sawStart || !sawLeader {
		t.Errorf("timeline: %+v", st.Timeline)
	}
	names := map[string]map[string]any{}
	for _, lk := range st.Locks {
		names[lk["name"].(string)] = lk
	}
	if names["orders"]["kind"] != "reentrant" || names["job"]["kind"] != "string" {
		t.Errorf("locks: %v", st.Locks)
	}
	var locks []map[string]any
	if code := getJSON(t, addr, "/api/locks?match=ord*&kind=reentrant&count=5", &locks); code != 200 || len(locks) != 1 {
		t.Fatalf("/api/locks filtered: %d %v", code, locks)
	}
	h := locks[0]["holders"].([]any)[0].(map[string]any)
	if locks[0]["name"] != "orders" || h["id"] != "svc-a:1" || h["count"] != float64(1) {
		t.Errorf("/api/locks entry: %v", locks[0])
	}
	if code := getJSON(t, addr, "/api/locks?count=1", &locks); code != 200 || len(locks) != 1 {
		t.Errorf("/api/locks?count=1: %d %v", code, locks)
	}
}

// TestStatusBadInput: malformed query strings, unknown or repeated
// parameters, a MATCH pattern over 1 KiB, counts out of range and an
// unknown kind each get a 400 with a Redis-style error and nothing else.
func TestStatusBadInput(t *testing.T) {
	n := RunT(t, withHTTP)
	addr := n.HTTPAddr()
	long := strings.Repeat("a", 1025)
	for _, q := range []string{
		"match=%zz", "match=a&match=b", "bogus=1", "count=0", "count=-1", "count=abc", "count=10001",
		"count=99999999999999999999", "kind=bogus", "match=" + long, "match=" + strings.Repeat("*", 4000), "a;b=c",
	} {
		var e map[string]string
		code := getJSON(t, addr, "/api/locks?"+q, &e)
		if code != 400 || !strings.HasPrefix(e["error"], "ERR ") {
			t.Errorf("/api/locks?%.60s: %d %v, want 400 and an ERR message", q, code, e)
		}
	}
	// Past the server's 8 KiB of headers, the request line is refused
	// before it reaches the handler.
	if code, _ := httpGet(t, addr, "/api/locks?match="+strings.Repeat("*", 1<<15)); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 32 KiB pattern: %d", code)
	}
	var e map[string]string
	if code := getJSON(t, addr, "/api/status?x=1", &e); code != 400 {
		t.Errorf("/api/status?x=1: %d %v", code, e)
	}
	// At the bound, a pattern is served.
	var locks []any
	if code := getJSON(t, addr, "/api/locks?match="+strings.Repeat("a", 1024), &locks); code != 200 || len(locks) != 0 {
		t.Errorf("a 1024-byte pattern: %d %v", code, locks)
	}
	if code := getJSON(t, addr, "/api/locks?match=&kind=&count=", &locks); code != 200 {
		t.Errorf("empty parameters: %d", code)
	}
	r, err := http.Post("http://"+addr+"/api/locks", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", r.StatusCode)
	}
	// The single node's page state.
	var st pageStatus
	if code := getJSON(t, addr, "/api/status", &st); code != 200 || st.Role != "single" || len(st.Members) != 1 {
		t.Errorf("single node status: %d %+v", code, st)
	}
	if code, body := httpGet(t, addr, "/"); code != 200 || !strings.Contains(body, "<title>deadbolt status</title>") {
		t.Errorf("GET /: %d %.200s", code, body)
	}
	if code, _ := httpGet(t, addr, "/app.js"); code != 200 {
		t.Errorf("GET /app.js: %d", code)
	}
	for range 100 { // HEAD takes no viewer's place
		r, err := http.Head("http://" + addr + "/events")
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("HEAD /events: %v %v", r, err)
		}
		r.Body.Close()
	}
	if r, _ := openStream(t, context.Background(), addr); r.StatusCode != 200 {
		t.Errorf("GET /events after HEADs: %d", r.StatusCode)
	} else {
		r.Body.Close()
	}
}

// openStream opens /events and returns the response once its first push
// has arrived, or the response of a refusal.
func openStream(t *testing.T, ctx context.Context, addr string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/events", nil)
	r, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET /events: %v", err)
	}
	if r.StatusCode != 200 {
		return r, nil
	}
	br := bufio.NewReader(r.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading /events: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			return r, br
		}
	}
}

// TestStatusViewersCap: 64 viewers stream at once; thousands more are
// refused with 503 at once while they stay; when one leaves, another can
// come in; the streams carry the state.
func TestStatusViewersCap(t *testing.T) {
	n := RunT(t, withHTTP)
	addr := n.HTTPAddr()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var streams []*http.Response
	var first *bufio.Reader
	for i := range 64 {
		r, br := openStream(t, ctx, addr)
		if r.StatusCode != 200 {
			t.Fatalf("viewer %d: %d", i+1, r.StatusCode)
		}
		if first == nil {
			first = br
		}
		streams = append(streams, r)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 100}
	defer tr.CloseIdleConnections()
	for range 2000 {
		wg.Go(func() {
			r, err := tr.RoundTrip(must(http.NewRequest("GET", "http://"+addr+"/events", nil)))
			code := -1
			if err == nil {
				code = r.StatusCode
				r.Body.Close()
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[503] != 2000 {
		t.Errorf("past the cap: %v, want 2000 × 503", codes)
	}
	// A push of the state reaches a viewer.
	deadline := time.Now().Add(10 * time.Second)
	for {
		line, err := first.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"role":"single"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no state pushed; last line %q", line)
		}
	}
	streams[0].Body.Close()
	deadline = time.Now().Add(10 * time.Second)
	for {
		r, _ := openStream(t, ctx, addr)
		if r.StatusCode == 200 {
			r.Body.Close()
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("a viewer that left did not free its place")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range streams[1:] {
		r.Body.Close()
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var _ = url.QueryEscape

// waitTimeline polls a node's /api/status until its timeline has an
// event of kind whose reason contains text.
func waitTimeline(t *testing.T, addr, kind, text string) pageStatus {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var st pageStatus
		getJSON(t, addr, "/api/status", &st)
		for _, e := range st.Timeline {
			if e.Kind == kind && strings.Contains(e.Reason, text) {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s event with %q: %+v", addr, kind, text, st.Timeline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStatusTimelineCluster: a leadership hand-over (RAFT TRANSFER) and a
// member's removal (RAFT REMOVE) show in the timeline with their reasons,
// and the removed member leaves the members' list.
func TestStatusTimelineCluster(t *testing.T) {
	c := RunClusterT(t, 3, func(_ int, cfg *Config) { withHTTP(cfg) })
	ctx := context.Background()
	old := c.WaitLeader()
	oldID := c.IDs()[old]
	if err := client(t, c.Addr(old)).Do(ctx, "RAFT", "TRANSFER").Err(); err != nil {
		t.Fatalf("RAFT TRANSFER: %v", err)
	}
	nl := c.WaitNewLeader(old)
	waitTimeline(t, c.Nodes[old].HTTPAddr(), "leader", c.IDs()[nl]+" leads in term")
	st := waitTimeline(t, c.Nodes[old].HTTPAddr(), "leader", oldID+" handed its leadership over")
	if st.Leader != c.IDs()[nl] {
		t.Errorf("after the hand-over the old leader's page says %q leads", st.Leader)
	}
	victim := c.Followers()[0]
	if victim == old {
		victim = c.Followers()[1]
	}
	victimID := c.IDs()[victim]
	if err := client(t, c.Addr(nl)).Do(ctx, "RAFT", "REMOVE", victimID).Err(); err != nil {
		t.Fatalf("RAFT REMOVE: %v", err)
	}
	st = waitTimeline(t, c.Nodes[old].HTTPAddr(), "members", "removed "+victimID)
	ids := []string{}
	for _, m := range st.Members {
		ids = append(ids, m.ID)
	}
	if len(ids) != 2 || strings.Contains(strings.Join(ids, ","), victimID) {
		t.Errorf("members after removing %s: %v", victimID, ids)
	}
}
