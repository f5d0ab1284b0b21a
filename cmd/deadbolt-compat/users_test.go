package main

import (
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/acl"
)

// Every cell's user is accepted by ACL SETUSER, is held to its run's keys
// and refuses what the clients' negative checks send; the reference
// column's users carry no rule redis-server would reject (it has no
// SENTINEL command).
func TestCellUsers(t *testing.T) {
	for _, rw := range rows {
		if _, ok := rowAccess[rw.name]; !ok {
			t.Errorf("row %q has no entry in rowAccess", rw.name)
		}
		for _, name := range rw.cols {
			c := &cell{row: rw, col: columnByName(name)}
			rules, err := c.aclRules("pw")
			if err != nil {
				t.Fatal(err)
			}
			users, u, err := acl.NewUsers().SetUser(c.user(), rules)
			if err != nil {
				t.Fatalf("%s: ACL SETUSER %s %q: %v", c.id(), c.user(), rules, err)
			}
			if u.Unrestricted() || users.Authenticate([]byte(c.user()), []byte("pw")) == nil {
				t.Errorf("%s: user %s unrestricted or not logged in with its password", c.id(), c.user())
			}
			check := func(want int, args ...string) {
				t.Helper()
				argv := make([][]byte, len(args))
				for i, a := range args {
					argv[i] = []byte(a)
				}
				if d := u.Check(acl.LookupArgs(argv), argv); d.Reason != want {
					t.Errorf("%s: %v: denial %d, want %d", c.id(), args, d.Reason, want)
				}
			}
			check(acl.DeniedCmd, "FLUSHALL")
			check(acl.DeniedCmd, "KEYS", "*")
			check(acl.DeniedCmd, "CONFIG", "SET", "maxmemory", "1")
			check(acl.DeniedCmd, "ACL", "SETUSER", c.user(), "+@all")
			// The key check each client family sends (compat/matrix/*):
			// a command its user may run, on a key outside its rules.
			keyCheck := func(key string) []string {
				switch rw.kind {
				case "node", "php", "ruby":
					return []string{"EVAL", "return 1", "1", key}
				case "cli":
					return []string{"SET", key, "x"}
				}
				return []string{"EVALSHA", strings.Repeat("0", 40), "1", key}
			}
			inside := func(c *cell) string {
				return strings.ReplaceAll(strings.ReplaceAll(rowAccess[rw.name].keys[0], "$P", c.keyPrefix()+"check:1:"), "*", "x")
			}
			check(acl.DeniedKey, keyCheck("compat:outside:"+c.user())...)
			check(acl.DeniedNone, keyCheck(inside(c))...)
			// Another cell's keys are as far out of reach.
			other := &cell{row: rw, col: columnByName(rw.cols[(indexOf(rw.cols, name)+1)%len(rw.cols)])}
			check(acl.DeniedKey, keyCheck(inside(other))...)
			if c.col.topo == "redis" {
				for _, r := range rules {
					if strings.HasPrefix(r, "+sentinel") {
						t.Errorf("%s: %s in the reference column", c.id(), r)
					}
				}
			}
		}
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}
