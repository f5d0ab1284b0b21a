package difftest

import (
	"bufio"
	"net"
	"testing"

	"github.com/deadbolt/deadbolt"
)

// TestSortStoreKeywordDestination: a user allowed ~k* and a key named
// like a SORT option (by, get, limit) may not write another key with
// "SORT k STORE by STORE victim", at the top level or in a script.
// redis-server 7.0.15 lets it (its key finder checks "by" and SORT writes
// victim); deadbolt checks the key SORT writes (COMPATIBILITY.md), so this
// is no transcript against Redis.
func TestSortStoreKeywordDestination(t *testing.T) {
	node := deadbolt.RunT(t)
	do := func(c net.Conn, rd *bufio.Reader, args ...string) Value {
		t.Helper()
		var a [][]byte
		for _, s := range args {
			a = append(a, []byte(s))
		}
		if _, err := c.Write(appendCommand(nil, a)); err != nil {
			t.Fatal(err)
		}
		v, err := readValue(rd)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	admin, err := net.Dial("tcp", node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ard := bufio.NewReader(admin)
	do(admin, ard, "ACL", "SETUSER", "u", "on", "nopass", "~k*", "~by", "~get", "~limit", "+@all")
	do(admin, ard, "RPUSH", "k", "1")
	user, err := net.Dial("tcp", node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer user.Close()
	urd := bufio.NewReader(user)
	do(user, urd, "AUTH", "u", "x")
	for _, kw := range []string{"by", "GET", "Limit"} {
		victim := "victim-" + kw
		if r := do(user, urd, "SORT", "k", "STORE", kw, "STORE", victim); string(r.Raw) == "" || r.Raw[0] != '-' {
			t.Errorf("SORT k STORE %s STORE %s: %q, want NOPERM", kw, victim, r.Raw)
		}
		do(user, urd, "EVAL", "return redis.pcall('sort','k','STORE','"+kw+"','STORE','"+victim+"-lua')", "0")
		do(user, urd, "MULTI")
		do(user, urd, "SORT", "k", "STORE", kw, "STORE", victim+"-tx")
		do(user, urd, "EXEC")
		if e := do(admin, ard, "EXISTS", victim, victim+"-lua", victim+"-tx"); e.Int != 0 {
			t.Errorf("a user limited to ~k* ~%s wrote %d of %s, %s-lua, %s-tx", kw, e.Int, victim, victim, victim)
		}
	}
}
