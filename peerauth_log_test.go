package deadbolt

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A member with another secret or certificate fails its handshake at every
// dial, several times a second (23 records in 8 s between two nodes with
// different secrets): the log keeps one record per peer host every 10 s,
// and the next says how many it left out.
func TestAuthFailureLogRateLimited(t *testing.T) {
	var b strings.Builder
	now := time.Unix(1_700_000_000, 0)
	f := newFailureLog(slog.New(slog.NewTextHandler(&b, nil)), 10*time.Second, func() time.Time { return now })
	bad := errors.New("wrong proof from the node dialed: it holds another secret")
	for i := range 5 {
		f.report("10.0.0.2:"+string(rune('0'+i))+"7000", bad)
	}
	f.report("10.0.0.3:7000", bad)
	if n := strings.Count(b.String(), "failed authentication"); n != 2 {
		t.Fatalf("%d records for 5 failures of one host and 1 of another, want 2:\n%s", n, b.String())
	}
	now = now.Add(11 * time.Second)
	f.report("10.0.0.2:7000", bad)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "remote=10.0.0.2:7000") || !strings.Contains(lines[2], "suppressed=4") {
		t.Fatalf("after 10 s: %q, want a third record with suppressed=4", lines)
	}
}

// A scan from many addresses (2000 IPv6 hosts) logs at most
// authFailureLogBurst records per period, not one per address, and the
// next record after the period counts what was left out.
func TestAuthFailureLogBoundedOverall(t *testing.T) {
	var b strings.Builder
	now := time.Unix(1_700_000_000, 0)
	f := newFailureLog(slog.New(slog.NewTextHandler(&b, nil)), 10*time.Second, func() time.Time { return now })
	bad := errors.New("not a member")
	for i := range 2000 {
		f.report(fmt.Sprintf("[2001:db8::%x]:7000", i), bad)
	}
	if n := strings.Count(b.String(), "failed authentication"); n != authFailureLogBurst {
		t.Fatalf("%d records for 2000 hosts in one period, want %d", n, authFailureLogBurst)
	}
	now = now.Add(11 * time.Second)
	f.report("[2001:db8::1:0]:7000", bad)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if want := fmt.Sprintf("suppressed=%d", 2000-authFailureLogBurst); !strings.Contains(lines[len(lines)-1], want) {
		t.Fatalf("the record after the period: %q, want %s", lines[len(lines)-1], want)
	}
}
