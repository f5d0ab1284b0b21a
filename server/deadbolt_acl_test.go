package server

import (
	"context"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
)

// unfilteredLocks answers __locks as a state machine that does not filter
// by user does (a leader from before the filter, answering a forwarded
// read during a rolling upgrade): a test double, since no such build is at
// hand here; the rest is the real single-node backend.
type unfilteredLocks struct{ *cluster.Local }

func (b unfilteredLocks) Read(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	if len(cmd.Args) > 0 && string(cmd.Args[0]) == fsm.LocksCommand {
		cmd.User = ""
	}
	return b.Local.Read(ctx, cmd)
}

// TestDeadboltLocksNamesCheckedAgain: the server checks each lock's name
// against the connection's user again, so a read answered without the
// filter still shows a restricted user only the locks it may read.
func TestDeadboltLocksNamesCheckedAgain(t *testing.T) {
	s := newTestServerWith(t, func(l *cluster.Local) Backend { return unfilteredLocks{l} })
	admin := dial(t, s.addr)
	admin.must(status("OK"), "acl", "setuser", "locker", "on", ">pw", "~lock:*", "+@all", "-@admin", "-@dangerous")
	admin.must(status("OK"), "set", "lock:a", "tok-a", "NX", "PX", "10000")
	admin.must(status("OK"), "set", "other", "secret-token", "NX", "PX", "10000")
	if got := admin.doRaw("deadbolt", "locks"); !strings.Contains(got, "lock:a") || !strings.Contains(got, "secret-token") {
		t.Fatalf("the default user: %q", got)
	}
	u := dial(t, s.addr)
	u.must(status("OK"), "auth", "locker", "pw")
	got := u.doRaw("deadbolt", "locks")
	if !strings.Contains(got, "tok-a") || strings.Contains(got, "other") || strings.Contains(got, "secret-token") || !strings.HasPrefix(got, "*1\r\n") {
		t.Errorf("locker: %q, want lock:a alone", got)
	}
}
