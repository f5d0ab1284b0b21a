package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// A burst of slow commands writes one record; the next one, a second
// later, says how many were left out.
func TestSlowRecordsRateLimited(t *testing.T) {
	var b bytes.Buffer
	r := slowRecords{logger: slog.New(slog.NewJSONHandler(&b, nil))}
	for i := range 3 {
		r.note(&slowEntry{id: int64(i), usec: 20000, addr: "127.0.0.1:1"}, "GET")
	}
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Fatalf("%d records for a burst, want 1:\n%s", n, b.String())
	}
	r.mu.Lock()
	r.last = r.last.Add(-2 * slowRecordEvery)
	r.mu.Unlock()
	r.note(&slowEntry{id: 3, usec: 30000}, "SET")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["msg"] != "slow command" || rec["command"] != "set" || rec["suppressed"] != 2.0 || rec["slowlog_id"] != 3.0 || rec["duration_us"] != 30000.0 {
		t.Fatalf("record: %v", rec)
	}
}
