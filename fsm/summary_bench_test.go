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
