package acl

import (
	"strings"
	"testing"
)

// FuzzSetUser applies arbitrary rules: never a panic, and a user that
// took them is described by rules that make the same user again (what
// ACL SAVE writes, ACL LOAD and snapshots read back).
func FuzzSetUser(f *testing.F) {
	for _, seed := range []string{
		"on >pw ~lock:* &redisson_lock__channel:* +@all -@dangerous",
		"-@all +config|get +select|0 %R~r:* %W~w:*",
		"(~a:* +get) (%RW~b:* +@read) clearselectors",
		"reset nopass allkeys allchannels allcommands -flushall",
		"+@all -@slow +keys #" + strings.Repeat("0", 64) + " !" + strings.Repeat("0", 64),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rules string) {
		t1, u, err := NewUsers().SetUser("fuzz", strings.Fields(rules))
		if err != nil {
			return
		}
		desc := u.Describe()
		t2, err := ParseFile("fuzz.acl", "user fuzz "+desc+"\n")
		if err != nil {
			t.Fatalf("rules %q: the description %q does not load: %v", rules, desc, err)
		}
		if again := t2.Get("fuzz").Describe(); again != desc {
			t.Fatalf("rules %q: described %q, reloaded %q", rules, desc, again)
		}
		_ = t1
	})
}
