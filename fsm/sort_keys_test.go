package fsm

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/acl"
)

// TestSortStoreKeyIsTheOneChecked ties the two readers of SORT's options
// together: for any SORT line the state machine runs, the key it writes is
// the write key acl.ProcKeys finds, the one an ACL check looks at. Redis's
// own key finder does not skip STORE's argument, so "SORT k STORE by
// STORE victim" had a user allowed ~k* ~by write victim (in Redis too).
func TestSortStoreKeyIsTheOneChecked(t *testing.T) {
	words := []string{"STORE", "store", "BY", "by", "GET", "get", "LIMIT", "limit", "ASC", "DESC", "ALPHA",
		"0", "1", "#", "nosort", "d1", "d2", "Store", "bY"}
	rng := rand.New(rand.NewSource(1))
	checked := 0
	for range 4000 {
		f := New(Options{})
		applyArgs(f, 1, "RPUSH", "k", "3", "1", "2")
		argv := []string{"SORT", "k"}
		for range rng.Intn(7) {
			argv = append(argv, words[rng.Intn(len(words))])
		}
		applyArgs(f, 1, argv...)
		var b [][]byte
		for _, a := range argv {
			b = append(b, []byte(a))
		}
		checkedKeys := map[string]bool{}
		for _, k := range acl.ProcKeys("sort", b, nil) {
			if k.Perm&acl.PermWrite != 0 {
				checkedKeys[argv[k.Pos]] = true
			}
		}
		for _, k := range sortKeys(f) {
			if k == "k" {
				continue
			}
			checked++
			if !checkedKeys[k] {
				t.Fatalf("%s wrote %q, which the ACL check does not look at (it checks %v)", strings.Join(argv, " "), k, checkedKeys)
			}
		}
		f.Close()
	}
	if checked == 0 {
		t.Fatal("no generated SORT stored anything")
	}
}

// sortKeys lists the keys of f's database 0.
func sortKeys(f *FSM) []string {
	r := applyArgs(f, 1, "KEYS", "*")
	var out []string
	for _, e := range r.Elems {
		out = append(out, string(e.Str))
	}
	return out
}
