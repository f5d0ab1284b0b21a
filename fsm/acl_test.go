package fsm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/acl"
)

// ACL users are in snapshots: a restored state machine has the same users,
// the published table follows a restore, and a snapshot without users
// restores the node's start-up users.
func TestACLUsersInSnapshot(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	read := f.UsersFunc()
	set := ACLSetUserCommand([]byte("locker"), [][]byte{[]byte("on"), []byte(">pw"), []byte("~lock:*"), []byte("-@all"), []byte("+get")})
	if r := f.Apply(1000, set).Reply; r.IsError() {
		t.Fatalf("__acl setuser: %v", r)
	}
	if r := f.Apply(1001, ACLPasswordCommand("s3cret")).Reply; r.IsError() {
		t.Fatalf("__acl password: %v", r)
	}
	want := strings.Join(f.Users().List(), "\n")
	if got := strings.Join(read().List(), "\n"); got != want {
		t.Fatalf("published users %q, want %q", got, want)
	}
	var buf bytes.Buffer
	if err := f.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	start := acl.NewUsers().WithDefaultPassword("startup")
	g := New(Options{Users: start})
	defer g.Close()
	gread := g.UsersFunc()
	if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(gread().List(), "\n"); got != want {
		t.Fatalf("restored users %q, want %q", got, want)
	}
	if g.Users().Authenticate([]byte("default"), []byte("s3cret")) == nil {
		t.Fatal("the replicated password does not log in after a restore")
	}
	// A snapshot of a state machine without ACL changes restores the
	// start-up users.
	var empty bytes.Buffer
	e := New(Options{})
	defer e.Close()
	if err := e.Snapshot(&empty); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(bytes.NewReader(empty.Bytes())); err != nil {
		t.Fatal(err)
	}
	if gread().Authenticate([]byte("default"), []byte("startup")) == nil || gread().Get("locker") != nil {
		t.Fatalf("after restoring a snapshot without users: %q", gread().List())
	}
	// A script's redis.call is checked against the command's user.
	f.Apply(1002, ACLSetUserCommand([]byte("scripter"), [][]byte{[]byte("on"), []byte("nopass"), []byte("~a"), []byte("+@all")}))
	cmd := Command{User: "scripter", Args: [][]byte{[]byte("EVAL"), []byte("return redis.call('set', 'b', 1)"), []byte("0")}}
	res := f.Apply(1003, cmd)
	if !strings.Contains(res.Reply.String(), "The user executing the script can't access at least one of the keys") || len(res.Denials) != 1 {
		t.Fatalf("a script's denied call: %v, denials %v", res.Reply, res.Denials)
	}
	cmd.User = ""
	if r := f.Apply(1004, cmd).Reply; r.IsError() {
		t.Fatalf("the same script without a user: %v", r)
	}
}
