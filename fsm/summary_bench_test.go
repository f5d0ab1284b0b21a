package fsm

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkSummary is the metrics endpoint's count of 100k keys, half of
// them with a deadline: how long it holds the state machine's lock.
func BenchmarkSummary(b *testing.B) {
	f := New(Options{})
	for i := range 100000 {
		args := [][]byte{[]byte("set"), []byte("k" + strconv.Itoa(i)), []byte("v")}
		if i%2 == 0 {
			args = append(args, []byte("px"), []byte("100000"))
		}
		f.Apply(1, Command{Args: args})
	}
	if s := f.Summary(); s.Keys != 100000 || s.Expires != 50000 || s.Bytes < 100000*3 {
		b.Fatalf("summary %+v", s)
	}
	for b.Loop() {
		f.Summary()
	}
}

// Summary's logical size adds up key names and what each kind of value
// holds, as written.
func TestSummaryBytes(t *testing.T) {
	f := New(Options{})
	for _, c := range []string{
		"set s 12345",          // 1 + 5
		"hset h ab cde fg h",   // 1 + 2+3 + 2+1
		"rpush l x yy zzz",     // 1 + 6
		"sadd st m1 m22",       // 2 + 2+3
		"zadd z 1 aa 2 bbb",    // 1 + 2+8 + 3+8
		"set gone v px 100000", // 4 + 1
	} {
		var args [][]byte
		for _, a := range strings.Fields(c) {
			args = append(args, []byte(a))
		}
		if r := f.Apply(1, Command{Args: args}); r.Reply.IsError() {
			t.Fatalf("%s: %s", c, r.Reply.Str)
		}
	}
	f.Apply(1, Command{Args: [][]byte{[]byte("hdel"), []byte("h"), []byte("ab")}}) // 5 fewer
	want := int64(6 + 9 + 7 + 7 + 22 + 5 - 5)
	if s := f.Summary(); s.Bytes != want || s.Keys != 6 || s.Expires != 1 {
		t.Errorf("summary %+v, want %d bytes, 6 keys, 1 with a deadline", s, want)
	}
}

// Summary counts the locks held by kind: lock-shaped keys only, and not
// those past their deadline at the state machine's clock.
func TestSummaryLocksHeld(t *testing.T) {
	f := New(Options{})
	apply := func(now int64, c string) {
		t.Helper()
		var args [][]byte
		for _, a := range strings.Fields(c) {
			args = append(args, []byte(a))
		}
		if r := f.Apply(now, Command{Args: args}); r.Reply.IsError() {
			t.Fatalf("%s: %s", c, r.Reply.Str)
		}
	}
	apply(1000, "set a tok nx px 10000")
	apply(1000, "set b tok nx px 500") // runs out at 1500
	apply(1000, "set plain v")         // data, not a lock
	apply(1000, "hincrby orders svc-a:1 1")
	apply(1000, "pexpire orders 30000")
	apply(1000, "hset rw mode read")
	apply(1000, "hset settings mode fast") // a hash with a mode field is data
	if s := f.Summary(); s.LocksHeld != [NumLockKinds]int{LockString: 2, LockReentrant: 1, LockReadWrite: 1} {
		t.Errorf("held at 1000: %v", s.LocksHeld)
	}
	apply(2000, "set plain w") // the clock moves past b's lease; b is not yet reaped
	if s := f.Summary(); s.LocksHeld[LockString] != 1 || s.Keys != 6 {
		t.Errorf("held at 2000: %v (keys %d)", s.LocksHeld, s.Keys)
	}
}
