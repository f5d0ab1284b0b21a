package resp

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// Type is the RESP2 type of a Reply.
type Type uint8

// The RESP2 reply types. The zero Type is Nil, so a zero Reply is a nil bulk.
const (
	Nil      Type = iota // $-1
	Status               // +text
	Error                // -text
	Int                  // :n
	Bulk                 // $n payload
	Array                // *n elements
	NilArray             // *-1
)

// Reply is one RESP2 value. It is a plain value (no interface, no pointer)
// so that command handlers can return it without allocating.
type Reply struct {
	Type  Type
	Int   int64
	Str   []byte  // payload of Status, Error and Bulk
	Elems []Reply // elements of Array
}

// Common replies.
var (
	OK       = Reply{Type: Status, Str: []byte("OK")}
	Queued   = Reply{Type: Status, Str: []byte("QUEUED")}
	NilReply = Reply{}
	Zero     = Reply{Type: Int, Int: 0}
	One      = Reply{Type: Int, Int: 1}
	EmptyArr = Reply{Type: Array, Elems: []Reply{}}
)

// StatusReply returns a simple string reply.
func StatusReply(s string) Reply { return Reply{Type: Status, Str: []byte(s)} }

// Err returns an error reply; msg carries its own prefix ("ERR ...",
// "WRONGTYPE ...").
func Err(msg string) Reply { return Reply{Type: Error, Str: []byte(msg)} }

// IntReply returns an integer reply.
func IntReply(n int64) Reply { return Reply{Type: Int, Int: n} }

// BulkReply returns a bulk string reply; b is not copied.
func BulkReply(b []byte) Reply {
	if b == nil {
		b = []byte{}
	}
	return Reply{Type: Bulk, Str: b}
}

// BulkString returns a bulk string reply.
func BulkString(s string) Reply { return Reply{Type: Bulk, Str: []byte(s)} }

// BulkInt returns an integer formatted as a bulk string.
func BulkInt(n int64) Reply { return Reply{Type: Bulk, Str: strconv.AppendInt(nil, n, 10)} }

// ArrayReply returns an array reply.
func ArrayReply(elems ...Reply) Reply {
	if elems == nil {
		elems = []Reply{}
	}
	return Reply{Type: Array, Elems: elems}
}

// BulkArray returns an array of bulk strings.
func BulkArray(items [][]byte) Reply {
	elems := make([]Reply, len(items))
	for i, b := range items {
		elems[i] = BulkReply(b)
	}
	return Reply{Type: Array, Elems: elems}
}

// IsError reports whether r is an error reply.
func (r Reply) IsError() bool { return r.Type == Error }

// String returns the text of a status, error or bulk reply.
func (r Reply) String() string { return string(r.Str) }

// Append appends the RESP2 encoding of r to dst.
func (r Reply) Append(dst []byte) []byte {
	switch r.Type {
	case Nil:
		return redcon.AppendNull(dst)
	case Status:
		return redcon.AppendString(dst, string(r.Str))
	case Error:
		return redcon.AppendError(dst, string(r.Str))
	case Int:
		return redcon.AppendInt(dst, r.Int)
	case Bulk:
		return redcon.AppendBulk(dst, r.Str)
	case Array:
		dst = redcon.AppendArray(dst, len(r.Elems))
		for _, e := range r.Elems {
			dst = e.Append(dst)
		}
		return dst
	case NilArray:
		return append(dst, "*-1\r\n"...)
	}
	panic("resp: unknown reply type " + strconv.Itoa(int(r.Type)))
}

// Equal reports whether two replies are the same value.
func (r Reply) Equal(o Reply) bool {
	if r.Type != o.Type || r.Int != o.Int || string(r.Str) != string(o.Str) || len(r.Elems) != len(o.Elems) {
		return false
	}
	for i := range r.Elems {
		if !r.Elems[i].Equal(o.Elems[i]) {
			return false
		}
	}
	return true
}

// Parse decodes one RESP2 reply from the front of b. It returns the reply,
// the bytes consumed, and ok=false when b holds no complete valid reply.
func Parse(b []byte) (Reply, int, bool) {
	n, v := redcon.ReadNextRESP(b)
	if n == 0 {
		return Reply{}, 0, false
	}
	return fromRedcon(v), n, true
}

func fromRedcon(v redcon.RESP) Reply {
	switch v.Type {
	case redcon.String:
		return Reply{Type: Status, Str: append([]byte(nil), v.Data...)}
	case redcon.Error:
		return Reply{Type: Error, Str: append([]byte(nil), v.Data...)}
	case redcon.Integer:
		return Reply{Type: Int, Int: v.Int()}
	case redcon.Bulk:
		if v.Data == nil {
			return Reply{}
		}
		return Reply{Type: Bulk, Str: append([]byte{}, v.Data...)}
	case redcon.Array:
		if string(v.Raw[:3]) == "*-1" {
			return Reply{Type: NilArray}
		}
		elems := []Reply{}
		v.ForEach(func(e redcon.RESP) bool {
			elems = append(elems, fromRedcon(e))
			return true
		})
		return Reply{Type: Array, Elems: elems}
	}
	return Reply{}
}
