//go:build unix

package deadbolt

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	dbclient "github.com/deadbolt/deadbolt/client"
)

// updateScreenshot writes the page's screenshot to docs/status-page.png
// (go test -run TestStatusPageBrowser -update-screenshot .); without it
// the screenshot is taken and checked but left in the test's directory.
var updateScreenshot = flag.Bool("update-screenshot", false, "write docs/status-page.png from TestStatusPageBrowser")

// cdp is a minimal client of the Chrome DevTools protocol over one page's
// websocket: a command and its answer, events ignored.
type cdp struct {
	ws   *websocket.Conn
	mu   sync.Mutex
	next int
}

func (c *cdp) call(ctx context.Context, method string, params any, result any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	id := c.next
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err := c.ws.Write(ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return err
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &r) != nil || r.ID != id {
			continue // an event, or another answer
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	}
}

// eval runs expression in the page and decodes its value (a string the
// expression builds with JSON.stringify) into out.
func (c *cdp) eval(ctx context.Context, expression string, out any) error {
	var r struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := c.call(ctx, "Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true}, &r); err != nil {
		return err
	}
	return json.Unmarshal([]byte(r.Result.Value), out)
}

// startChromium starts Debian's chromium headless with a DevTools port
// and returns a client of its first page. Without chromium the test is
// skipped, except in CI, where it fails (scripts/deps.sh installs it).
func startChromium(t *testing.T) *cdp {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (scripts/deps.sh installs Debian's chromium)")
		}
		t.Skip("chromium is not installed: apt-get install chromium (CI installs it through scripts/deps.sh)")
	}
	// These flags keep it from reaching for the network, which on a
	// closed machine makes it hang.
	// Its profile directory is removed by hand once every chromium
	// process is gone (t.TempDir's removal would race with them).
	profile, err := os.MkdirTemp("", "deadbolt-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+profile,
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--window-size=1200,900", "about:blank")
	// A process group of its own: chromium starts helpers (zygote,
	// renderer), and all of them are stopped with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		// Helpers may take a moment to go after the signal.
		for try := 0; try < 50; try++ {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove chromium's profile %s", profile)
	})
	found := make(chan string, 1)
	var logMu sync.Mutex
	var log []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			log = append(log, line)
			logMu.Unlock()
			if _, url, ok := strings.Cut(line, "DevTools listening on "); ok {
				found <- url
			}
		}
	}()
	var browserURL string
	select {
	case browserURL = <-found:
	case <-time.After(30 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("chromium did not open its DevTools port within 30 s:\n%s", strings.Join(log, "\n"))
	}
	host := strings.TrimPrefix(browserURL, "ws://")
	host, _, _ = strings.Cut(host, "/")
	// The page it opened.
	var wsURL string
	deadline := time.Now().Add(10 * time.Second)
	for wsURL == "" {
		var targets []struct {
			Type string `json:"type"`
			WS   string `json:"webSocketDebuggerUrl"`
		}
		if r, err := http.Get("http://" + host + "/json/list"); err == nil {
			json.NewDecoder(r.Body).Decode(&targets)
			r.Body.Close()
		}
		for _, tg := range targets {
			if tg.Type == "page" && wsURL == "" {
				wsURL = tg.WS
			}
		}
		if wsURL == "" {
			if time.Now().After(deadline) {
				t.Fatal("chromium has no page target")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatalf("DevTools websocket: %v", err)
	}
	ws.SetReadLimit(64 << 20) // screenshots
	t.Cleanup(func() { ws.CloseNow() })
	return &cdp{ws: ws}
}

// pageView is what the test reads of the page's DOM.
type pageView struct {
	Leader   string     `json:"leader"`
	Rows     int        `json:"rows"`
	Roles    []string   `json:"roles"`
	Timeline [][]string `json:"timeline"` // kind, leader, text
	Locks    int        `json:"locks"`
	Conn     string     `json:"conn"`
}

const pageViewJS = `JSON.stringify({
  leader: document.getElementById("leader").textContent,
  rows: document.querySelectorAll("#members tbody tr").length,
  roles: [...document.querySelectorAll("#members tbody tr")].map(r => r.children[1].textContent),
  timeline: [...document.querySelectorAll("#timeline li")].map(li => [li.dataset.kind, li.dataset.leader, li.textContent]),
  locks: document.querySelectorAll("#locks tbody tr").length,
  conn: document.getElementById("conn").textContent,
})`

// TestStatusPageBrowser loads a follower's status page in a real browser
// (Debian's chromium, headless, driven over the DevTools protocol), kills
// the leader, and requires the page to show the new leader and the
// timeline entry of its election within 2 s of the kill. The screenshot
// in docs/status-page.png is the page at that moment (-update-screenshot).
func TestStatusPageBrowser(t *testing.T) {
	browser := startChromium(t)
	// Short Raft timeouts, so that an election fits in the 2 s.
	c := RunClusterT(t, 3, func(_ int, cfg *Config) {
		withHTTP(cfg)
		cfg.HeartbeatTimeout = 300 * time.Millisecond
		cfg.ElectionTimeout = 300 * time.Millisecond
		cfg.LeaderLease = 150 * time.Millisecond
	})
	old := c.WaitLeader()
	f := c.Followers()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Something to see: a Redisson lock with a waiter subscribed to its
	// channel, a string lock, a fair lock.
	viaF := redis.NewClient(&redis.Options{Addr: c.Addr(f)})
	defer viaF.Close()
	a := dbclient.New(viaF)
	if err := a.NewLock("orders", dbclient.WithOwner(dbclient.OwnerOf("svc-a", 1))).LockLease(ctx, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.NewFairLock("invoices", dbclient.WithOwner(dbclient.OwnerOf("svc-b", 7))).TryLock(ctx, 0, 10*time.Minute); err != nil || !ok {
		t.Fatalf("fair lock: %v %v", ok, err)
	}
	if err := viaF.SetNX(ctx, "job:42", "worker-3", 10*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	sub := viaF.Subscribe(ctx, "redisson_lock__channel:{orders}")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	if err := browser.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	if err := browser.call(ctx, "Page.navigate", map[string]any{"url": "http://" + c.Nodes[f].HTTPAddr() + "/"}, nil); err != nil {
		t.Fatal(err)
	}
	view := func() pageView {
		t.Helper()
		var v pageView
		if err := browser.eval(ctx, pageViewJS, &v); err != nil {
			return pageView{} // the page is still loading
		}
		return v
	}
	// The leader may have changed since (short timeouts on a loaded
	// machine): the page must show the one the cluster has now.
	var (
		v     pageView
		oldID string
	)
	deadline := time.Now().Add(15 * time.Second)
	for {
		v = view()
		if old = c.Leader(); old >= 0 {
			oldID = c.IDs()[old]
		}
		if old >= 0 && old != f && v.Leader == oldID && v.Rows == 3 && v.Locks == 3 && strings.Count(strings.Join(v.Roles, ","), "Follower") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed the cluster (leader %q): %+v", oldID, v)
		}
		time.Sleep(50 * time.Millisecond)
	}

	killed := time.Now()
	c.Kill(old)
	var (
		newID   string
		learned time.Duration // when the follower itself knew the new leader
	)
	deadline = killed.Add(2 * time.Second)
	for {
		if id, _, ok := c.Nodes[f].Raft().Leader(); learned == 0 && ok && id != oldID {
			learned = time.Since(killed)
		}
		v = view()
		if v.Leader != oldID && v.Leader != "none" && v.Leader != "" {
			for _, e := range v.Timeline {
				if e[0] == "leader" && e[1] == v.Leader && strings.Contains(e[2], v.Leader+" leads in term") {
					newID = v.Leader
				}
			}
		}
		if newID != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(killed)
	if newID == "" {
		t.Fatalf("2 s after killing %s the page shows %+v (the node knew a new leader after %v; 0: not yet)", oldID, v, learned)
	}
	t.Logf("the page showed %s leading %v after %s was killed (the node knew after %v)", newID, took.Round(time.Millisecond), oldID, learned.Round(time.Millisecond))
	if id, _, ok := c.Nodes[f].Raft().Leader(); !ok || id != newID {
		t.Errorf("the page says %s leads, the node says %s (%v)", newID, id, ok)
	}
	// The dead member shows as unreachable once the others' answers are in.
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(v.Roles, ","), "?") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		v = view()
	}
	if !strings.Contains(strings.Join(v.Roles, ","), "?") {
		t.Errorf("the killed member is not shown as unreachable: %+v", v.Roles)
	}

	var shot struct {
		Data string `json:"data"`
	}
	if err := browser.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 1000 {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
	if !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("the screenshot is not a PNG: % x", png[:8])
	}
	out := filepath.Join(t.TempDir(), "status-page.png")
	if *updateScreenshot {
		out = filepath.Join("docs", "status-page.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
