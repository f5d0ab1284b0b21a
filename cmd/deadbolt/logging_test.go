package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// --log-format json: every line is a JSON object, and leader changes,
// membership changes and slow commands are records with their details as
// attributes.
func TestRunLogFormatJSON(t *testing.T) {
	dir := t.TempDir()
	a1, r1, a2, r2 := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var log1, log2, out lockedBuffer
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() {
		done1 <- run(ctx, []string{"--log-format", "json", "--enable-debug-command", "yes", "--id", "n1", "--addr", a1, "--raft-addr", r1, "--data-dir", dir + "/n1"}, &out, &log1)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		// Stopped together, a leader's hand-over to the other may fail:
		// that error says nothing about logging.
		cancel()
		for _, d := range []chan error{done1, done2} {
			select {
			case err := <-d:
				if err != nil {
					t.Logf("run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("run did not return")
			}
		}
	}
	defer stop()
	c := dialWhenUp(t, a1)
	defer c.Close()
	waitLog(t, &log1, `"msg":"leader ready"`)
	// The first command n1 runs, and a slow one (n2's RAFT JOIN may be one
	// too, and records are rate-limited): 30 ms is over
	// slowlog-log-slower-than's default, 10 ms.
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("DEBUG SLEEP 0.03\r\n"))
	if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != "+OK\r\n" {
		t.Fatalf("DEBUG SLEEP: %q %v", got, err)
	}
	waitLog(t, &log1, `"msg":"slow command"`)
	go func() {
		done2 <- run(ctx, []string{"--log-format", "json", "--id", "n2", "--addr", a2, "--raft-addr", r2, "--data-dir", dir + "/n2", "--join", a1}, &out, &log2)
	}()
	waitLog(t, &log1, `"msg":"cluster: membership changed"`)
	waitLog(t, &log2, `"msg":"cluster: leader changed"`)

	stop()

	records := func(name string, b *lockedBuffer) []map[string]any {
		var out []map[string]any
		sc := bufio.NewScanner(strings.NewReader(b.String()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r map[string]any
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("%s: a line that is not JSON: %q: %v", name, sc.Text(), err)
				continue
			}
			out = append(out, r)
		}
		return out
	}
	find := func(rs []map[string]any, msg string) map[string]any {
		for _, r := range rs {
			if r["msg"] == msg && (msg != "slow command" || r["command"] == "debug") {
				return r
			}
		}
		t.Errorf("no %q record", msg)
		return map[string]any{}
	}
	rs1, rs2 := records("n1", &log1), records("n2", &log2)
	if r := find(rs1, "leader ready"); r["id"] != "n1" || r["level"] != "INFO" {
		t.Errorf("leader ready: %v", r)
	}
	if r := find(rs1, "cluster: membership changed"); !slices.Equal(toStrings(r["added"]), []string{"n2"}) || r["members"] != 2.0 {
		t.Errorf("membership changed: %v", r)
	}
	if r := find(rs2, "cluster: leader changed"); r["leader"] != "n1" || r["id"] != "n2" || r["leader_raft_addr"] != r1 {
		t.Errorf("leader changed: %v", r)
	}
	if r := find(rs1, "slow command"); r["command"] != "debug" || r["level"] != "WARN" || r["duration_us"].(float64) < 30000 {
		t.Errorf("slow command: %v", r)
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// waitLog waits until b holds want.
func waitLog(t *testing.T, b *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the log:\n%s", want, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A duration in a JSON record reads as in the text format, with its unit:
// "cluster: the leader's Raft address refuses connections" logged its
// silent=375ms as "silent":375000000 (nanoseconds, unnamed).
func TestLogJSONDurations(t *testing.T) {
	var b strings.Builder
	newLogger(&b, "json", slog.LevelInfo).Info("x", "silent", 375*time.Millisecond, "n", 3)
	var rec map[string]any
	if err := json.Unmarshal([]byte(b.String()), &rec); err != nil {
		t.Fatalf("%q: %v", b.String(), err)
	}
	if rec["silent"] != "375ms" || rec["n"] != float64(3) {
		t.Fatalf("silent=%#v n=%#v in %s; want \"375ms\" and 3", rec["silent"], rec["n"], b.String())
	}
	b.Reset()
	newLogger(&b, "text", slog.LevelInfo).Info("x", "silent", 375*time.Millisecond)
	if !strings.Contains(b.String(), "silent=375ms") {
		t.Fatalf("text: %s", b.String())
	}
}
