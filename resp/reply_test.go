package resp

import (
	"bufio"
	"bytes"
	"testing"
)

// samples are replies of every type, nested where the type allows.
var samples = []Reply{
	NilReply,
	{Type: NilArray},
	OK,
	Err("ERR bad"),
	IntReply(-7),
	BulkString("a\r\nb"),
	ArrayReply(BulkString("x"), NilReply, ArrayReply()),
	MapReply(BulkString("k"), IntReply(1), BulkString("m"), MapReply()),
	SetReply(BulkString("s1"), BulkString("s2")),
	DoubleReply([]byte("1.5")),
	DoubleReply([]byte("-inf")),
	BoolReply(true),
	BoolReply(false),
	VerbatimReply("txt", "line\n"),
	{Type: BigNumber, Str: []byte("12345678901234567890")},
	{Type: Push, Elems: []Reply{BulkString("message"), BulkString("ch"), BulkString("hi")}},
	PairsReply(BulkString("a"), DoubleReply([]byte("1")), BulkString("b"), DoubleReply([]byte("2"))),
	PairsReply(),
	ArrayReply(PairsReply(BulkString("f"), BulkString("v")), Reply{Type: NilArray}),
}

func TestAppendProto(t *testing.T) {
	for _, tc := range []struct {
		r          Reply
		resp2, rs3 string
	}{
		{NilReply, "$-1\r\n", "_\r\n"},
		{Reply{Type: NilArray}, "*-1\r\n", "_\r\n"},
		{MapReply(BulkString("k"), IntReply(1)), "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
		{SetReply(BulkString("a")), "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n"},
		{DoubleReply([]byte("0.5")), "$3\r\n0.5\r\n", ",0.5\r\n"},
		{BoolReply(true), ":1\r\n", "#t\r\n"},
		{BoolReply(false), ":0\r\n", "#f\r\n"},
		{VerbatimReply("txt", "hi"), "$2\r\nhi\r\n", "=6\r\ntxt:hi\r\n"},
		{Reply{Type: BigNumber, Str: []byte("9")}, "$1\r\n9\r\n", "(9\r\n"},
		{Reply{Type: Push, Elems: []Reply{BulkString("a")}}, "*1\r\n$1\r\na\r\n", ">1\r\n$1\r\na\r\n"},
		{PairsReply(BulkString("m"), DoubleReply([]byte("2"))), "*2\r\n$1\r\nm\r\n$1\r\n2\r\n", "*1\r\n*2\r\n$1\r\nm\r\n,2\r\n"},
	} {
		if got := string(tc.r.AppendProto(nil, 2)); got != tc.resp2 {
			t.Errorf("RESP2 %+v: %q, want %q", tc.r, got, tc.resp2)
		}
		if got := string(tc.r.AppendProto(nil, 3)); got != tc.rs3 {
			t.Errorf("RESP3 %+v: %q, want %q", tc.r, got, tc.rs3)
		}
	}
}

// What a member sends reads back as the very reply, so that a follower
// answers its clients of either protocol as the leader would have.
func TestMemberRoundTrip(t *testing.T) {
	for _, r := range samples {
		wire := r.AppendProto(nil, ProtoMember)
		got, err := ReadReply(bufio.NewReader(bytes.NewReader(wire)), len(wire))
		if err != nil {
			t.Errorf("%q: %v", wire, err)
			continue
		}
		for _, proto := range []int{2, 3} {
			if a, b := got.AppendProto(nil, proto), r.AppendProto(nil, proto); !bytes.Equal(a, b) {
				t.Errorf("RESP%d after a member's hop: %q, want %q", proto, a, b)
			}
		}
	}
}

// RESP2 is the reply a RESP2 connection receives, as a value of RESP2
// types only.
func TestRESP2(t *testing.T) {
	var only2 func(r Reply) bool
	only2 = func(r Reply) bool {
		if r.Type > NilArray {
			return false
		}
		for _, e := range r.Elems {
			if !only2(e) {
				return false
			}
		}
		return true
	}
	for _, r := range samples {
		c := r.RESP2()
		if !only2(c) {
			t.Errorf("%+v: RESP2() is %+v", r, c)
		}
		if a, b := c.AppendProto(nil, 2), r.AppendProto(nil, 2); !bytes.Equal(a, b) {
			t.Errorf("%+v: RESP2() encodes as %q, the reply as %q", r, a, b)
		}
	}
}

func FuzzReadReply(f *testing.F) {
	for _, r := range samples {
		for _, proto := range []int{2, 3, ProtoMember} {
			f.Add(r.AppendProto(nil, proto))
		}
	}
	f.Add([]byte("|1\r\n+deadbolt-pairs\r\n#t\r\n*1\r\n:1\r\n"))
	f.Add([]byte("%99999999999\r\n"))
	f.Add([]byte("=3\r\ntxt\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, ok := Parse(b)
		if !ok {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		// Whatever was read encodes, for every protocol, and a member's
		// encoding reads back the same.
		for _, proto := range []int{2, 3} {
			r.AppendProto(nil, proto)
		}
		wire := r.AppendProto(nil, ProtoMember)
		again, _, ok := Parse(wire)
		if !ok {
			t.Fatalf("%q re-encoded as %q does not parse", b[:n], wire)
		}
		if !bytes.Equal(again.AppendProto(nil, ProtoMember), wire) {
			t.Fatalf("%q: a member's encoding changed on a second hop", b[:n])
		}
	})
}
