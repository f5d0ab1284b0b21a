package server

import (
	"strconv"
	"strings"
	"testing"
)

// Bad ACL input gets an error and changes nothing: too many rules in one
// ACL SETUSER, a huge pattern list, a rule in error after good ones.
func TestACLBadInput(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	args := []string{"ACL", "SETUSER", "big"}
	for i := range maxACLRules + 1 {
		args = append(args, "~k"+strconv.Itoa(i))
	}
	c.mustErr("ERR too many ACL rules in one ACL SETUSER (at most 1024)", args...)
	c.must("$-1\r\n", "ACL", "GETUSER", "big")
	// At the limit it is taken.
	c.must(status("OK"), args[:len(args)-1]...)
	// A rule in error: nothing of the others applies.
	c.mustErr("ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL", "ACL", "SETUSER", "big", "on", "+nosuch")
	if r := c.do("ACL", "GETUSER", "big"); strings.Contains(r.String(), "on") {
		t.Fatalf("half applied: %v", r)
	}
	c.mustErr("ERR The 'default' user cannot be removed", "ACL", "DELUSER", "big", "default")
	c.must(bulk("default"), "ACL", "WHOAMI")
	// deadbolt's own commands have categories.
	for _, cmd := range []string{"raft|remove", "raft|join", "raft|transfer", "sentinel"} {
		if r := c.do("ACL", "CAT", "admin"); !strings.Contains(string(r.Append(nil)), cmd) {
			t.Errorf("%s is not in @admin", cmd)
		}
	}
	if r := c.do("ACL", "CAT", "admin"); strings.Contains(string(r.Append(nil)), "raft|leader") {
		t.Error("RAFT LEADER is in @admin")
	}
}
