package fsm

import (
	"strings"
	"testing"
)

// TestLocksACLUser: __locks, read for a restricted ACL user
// (Command.User), lists only the locks whose key, and every companion key
// the entry is read from, that user may read with DEADBOLT LOCKS; COUNT
// counts what it lists. No user lists everything; a user the state
// machine does not have, or one whose selectors do not allow the
// command, nothing.
func TestLocksACLUser(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	t0 := kvT0
	users := map[string][]string{
		// fair's queue and deadlines are readable; fence's token counter
		// and psem's permits are not.
		"svc":   {"on", "nopass", "~orders", "~job", "~fair", "~redisson_lock_queue:{fair}", "~redisson_lock_timeout:{fair}", "~fence", "~psem", "+@all"},
		"all":   {"on", "nopass", "%R~*", "+deadbolt|locks"},
		"nocmd": {"on", "nopass", "~*", "-@all", "+get"},
	}
	for name, rules := range users {
		var rs [][]byte
		for _, r := range rules {
			rs = append(rs, []byte(r))
		}
		if r := f.Apply(t0, ACLSetUserCommand([]byte(name), rs)); r.Reply.IsError() {
			t.Fatalf("setuser %s: %s", name, r.Reply.Str)
		}
	}
	for _, s := range [][]string{
		evalArgs(benchLock, []string{"orders"}, "30000", "u1:7"),
		evalArgs(benchLock, []string{"other"}, "30000", "u9:7"),
		evalArgs(benchLock, []string{"fair"}, "30000", "u1:1"),
		{"RPUSH", "redisson_lock_queue:{fair}", "u2:5"},
		{"ZADD", "redisson_lock_timeout:{fair}", "1700000305000", "u2:5"},
		evalArgs(benchLock, []string{"fence"}, "30000", "u3:2"),
		{"INCR", "redisson_lock_token:{fence}"},
		evalArgs(testSemSet, []string{"psem", "redisson_sc:{psem}"}, "1"),
		{"ZADD", "{psem}:timeout", "1700000060000", "p1"},
		{"SET", "job", "tok-1", "NX", "PX", "8000"},
		{"SET", "job2", "tok-2", "NX", "PX", "8000"},
	} {
		if r := f.Apply(t0, Command{Args: kvArgs(s...)}); r.Reply.IsError() {
			t.Fatalf("%q: %s", s, r.Reply.Str)
		}
	}
	names := func(user string, opts ...string) string {
		t.Helper()
		r := f.Read(t0+1000, Command{Args: kvArgs(append([]string{LocksCommand}, opts...)...), User: user}).Reply
		if r.IsError() {
			t.Fatalf("%s: %s", user, r.Str)
		}
		var out []string
		for _, l := range r.Elems {
			out = append(out, string(l.Elems[1].Str))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		user string
		opts []string
		want string
	}{
		{"", nil, "fair,fence,job,job2,orders,other,psem"},
		{"all", nil, "fair,fence,job,job2,orders,other,psem"},
		{"svc", nil, "fair,job,orders"},
		{"svc", []string{"COUNT", "1"}, "fair"},
		{"svc", []string{"MATCH", "job*"}, "job"},
		{"svc", []string{"KIND", "fenced"}, ""},
		{"nocmd", nil, ""},
		{"ghost", nil, ""},
	} {
		if got := names(tc.user, tc.opts...); got != tc.want {
			t.Errorf("user %q %q: %s, want %s", tc.user, tc.opts, got, tc.want)
		}
	}
}

// TestLocksACLOneSelectorForAllKeys: a lock whose entry is read from a
// companion key (a fenced lock's token) is shown only when one selector
// grants reading both, as Redis asks of a command naming both keys (MGET
// fence redisson_lock_token:{fence} is NOPERM for this user); two
// selectors each granting one showed it.
func TestLocksACLOneSelectorForAllKeys(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	t0 := kvT0
	for name, rules := range map[string][]string{
		"split": {"on", "nopass", "~fence", "+deadbolt|locks", "(~redisson_lock_token:* +deadbolt|locks)"},
		"both":  {"on", "nopass", "~fence", "~redisson_lock_token:*", "+deadbolt|locks"},
	} {
		if r := f.Apply(t0, ACLSetUserCommand([]byte(name), toArgs(rules))); r.Reply.IsError() {
			t.Fatalf("setuser %s: %s", name, r.Reply.Str)
		}
	}
	for _, s := range [][]string{
		evalArgs(benchLock, []string{"fence"}, "30000", "u3:2"),
		{"INCR", "redisson_lock_token:{fence}"},
	} {
		if r := f.Apply(t0, Command{Args: kvArgs(s...)}); r.Reply.IsError() {
			t.Fatalf("%q: %s", s, r.Reply.Str)
		}
	}
	shown := func(user string) int {
		r := f.Read(t0+1000, Command{Args: kvArgs(LocksCommand), User: user}).Reply
		if r.IsError() {
			t.Fatalf("%s: %s", user, r.Str)
		}
		return len(r.Elems)
	}
	if n := shown("both"); n != 1 {
		t.Fatalf("a user reading the lock and its token sees %d locks, want 1", n)
	}
	if n := shown("split"); n != 0 {
		t.Fatalf("a user whose two selectors each read one of the lock's keys sees %d locks, want 0", n)
	}
}
