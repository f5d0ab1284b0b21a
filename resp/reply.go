package resp

import (
	"bufio"
	"bytes"
	"strconv"

	"github.com/tidwall/redcon"
)

// Type is the type of a Reply. The RESP2 types come first; the RESP3 ones
// after them each have a RESP2 form that Append writes for a RESP2
// connection, the same one Redis 7.0 sends.
type Type uint8

// The reply types. The zero Type is Nil, so a zero Reply is a nil bulk.
const (
	Nil       Type = iota // $-1 (RESP3: _)
	Status                // +text
	Error                 // -text
	Int                   // :n
	Bulk                  // $n payload
	Array                 // *n elements
	NilArray              // *-1 (RESP3: _)
	Map                   // %n pairs, Elems holds key, value, key, value...; RESP2: a flat array
	Set                   // ~n elements; RESP2: an array
	Double                // ,text with Str as Redis formats it; RESP2: a bulk of the same text
	Bool                  // #t or #f, Int 1 or 0; RESP2: :1 or :0
	Verbatim              // =n fmt:text, Str holds "fmt:text"; RESP2: a bulk of the text
	BigNumber             // (digits; RESP2: a bulk of the digits
	Push                  // >n elements, out of band; RESP2: an array
	Pairs                 // an array of arrays (member, score); RESP2 flattens them into one array
	Encoded               // already encoded, the same in every protocol: Str, then each of Elems's Str (NewEncoded)
)

// ProtoMember is what AppendProto writes for another cluster member: RESP3,
// except that RESP2's two nulls stay apart ($-1 and *-1) and that pairs
// carry an attribute that names them (pairsAttr), so that a reply
// forwarded through a member reaches a client of either protocol intact.
// ReadReply reads it back.
const ProtoMember = 4

// pairsAttr is the RESP3 attribute in front of a Pairs reply sent to a
// member; other RESP3 readers skip attributes.
const pairsAttr = "|1\r\n+deadbolt-pairs\r\n#t\r\n"

// Reply is one value of the protocol. It is a plain value (no interface,
// no pointer) so that command handlers can return it without allocating.
type Reply struct {
	Type  Type
	Int   int64
	Str   []byte  // payload of Status, Error, Bulk, Double, Verbatim, BigNumber
	Elems []Reply // elements of Array, Map, Set and Push
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

// NewEncoded returns a reply already encoded in pieces (a long read's
// reply, built without the lock and handed to the socket piece by piece):
// pieces must hold one value whose encoding is the same in every
// protocol (an array of bulk strings) and are not copied: they pass to
// whoever writes the reply, who may reuse their memory once written (a
// connection's event loop does), so they must be fresh, shared with no
// one and never cached.
func NewEncoded(pieces [][]byte) Reply {
	r := Reply{Type: Encoded, Elems: make([]Reply, len(pieces))}
	for i, p := range pieces {
		r.Elems[i].Str = p
	}
	return r
}

// EncodedPieces returns the pieces of an Encoded reply, in order (its Str
// first if not empty).
func (r Reply) EncodedPieces() [][]byte {
	out := make([][]byte, 0, len(r.Elems)+1)
	if len(r.Str) > 0 {
		out = append(out, r.Str)
	}
	for _, e := range r.Elems {
		if len(e.Str) > 0 {
			out = append(out, e.Str)
		}
	}
	return out
}

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

// MapReply returns a map reply of key, value, key, value...
func MapReply(kvs ...Reply) Reply {
	if kvs == nil {
		kvs = []Reply{}
	}
	return Reply{Type: Map, Elems: kvs}
}

// SetReply returns a set reply.
func SetReply(elems ...Reply) Reply {
	if elems == nil {
		elems = []Reply{}
	}
	return Reply{Type: Set, Elems: elems}
}

// BulkSet returns a set of bulk strings.
func BulkSet(items [][]byte) Reply {
	r := BulkArray(items)
	r.Type = Set
	return r
}

// PairsReply returns pairs of a and b: one array of two-element arrays in
// RESP3 (ZRANGE WITHSCORES, HRANDFIELD WITHVALUES), flat in RESP2.
func PairsReply(ab ...Reply) Reply {
	pairs := make([]Reply, len(ab)/2)
	for i := range pairs {
		pairs[i] = Reply{Type: Array, Elems: ab[2*i : 2*i+2 : 2*i+2]}
	}
	return Reply{Type: Pairs, Elems: pairs}
}

// DoubleReply returns a double whose text is already formatted the way
// Redis formats it (%.17g, "inf", "-inf").
func DoubleReply(text []byte) Reply { return Reply{Type: Double, Str: text} }

// BoolReply returns a boolean reply.
func BoolReply(b bool) Reply {
	if b {
		return Reply{Type: Bool, Int: 1}
	}
	return Reply{Type: Bool}
}

// VerbatimReply returns a verbatim string of a three-letter format ("txt",
// "mkd") and its text.
func VerbatimReply(format, text string) Reply {
	return Reply{Type: Verbatim, Str: []byte(format + ":" + text)}
}

// IsError reports whether r is an error reply.
func (r Reply) IsError() bool { return r.Type == Error }

// String returns the text of a status, error or bulk reply.
func (r Reply) String() string { return string(r.Str) }

// Append appends the RESP2 encoding of r to dst.
func (r Reply) Append(dst []byte) []byte { return r.AppendProto(dst, 2) }

// AppendProto appends the encoding of r for a connection speaking RESP
// version proto (2 or 3) to dst.
func (r Reply) AppendProto(dst []byte, proto int) []byte {
	switch r.Type {
	case Encoded:
		dst = append(dst, r.Str...)
		for _, e := range r.Elems {
			dst = append(dst, e.Str...)
		}
		return dst
	case Nil, NilArray:
		if proto >= 3 && !(proto == ProtoMember && r.Type == NilArray) {
			return append(dst, "_\r\n"...)
		}
		if r.Type == NilArray {
			return append(dst, "*-1\r\n"...)
		}
		return redcon.AppendNull(dst)
	case Status:
		return redcon.AppendString(dst, string(r.Str))
	case Error:
		return redcon.AppendError(dst, string(r.Str))
	case Int:
		return redcon.AppendInt(dst, r.Int)
	case Bulk:
		return redcon.AppendBulk(dst, r.Str)
	case Pairs:
		if proto >= 3 {
			if proto == ProtoMember {
				dst = append(dst, pairsAttr...)
			}
			dst = appendHeader(dst, '*', len(r.Elems))
			for _, e := range r.Elems {
				dst = e.AppendProto(dst, proto)
			}
			return dst
		}
		n := 0
		for _, e := range r.Elems {
			n += len(e.Elems)
		}
		dst = appendHeader(dst, '*', n)
		for _, e := range r.Elems {
			for _, x := range e.Elems {
				dst = x.AppendProto(dst, proto)
			}
		}
		return dst
	case Array, Set, Push, Map:
		n := len(r.Elems)
		switch {
		case proto < 3:
			dst = appendHeader(dst, '*', n)
		case r.Type == Map:
			dst = appendHeader(dst, '%', n/2)
		case r.Type == Set:
			dst = appendHeader(dst, '~', n)
		case r.Type == Push:
			dst = appendHeader(dst, '>', n)
		default:
			dst = appendHeader(dst, '*', n)
		}
		for _, e := range r.Elems {
			dst = e.AppendProto(dst, proto)
		}
		return dst
	case Double:
		if proto < 3 {
			return redcon.AppendBulk(dst, r.Str)
		}
		dst = append(dst, ',')
		dst = append(dst, r.Str...)
		return append(dst, "\r\n"...)
	case Bool:
		switch {
		case proto < 3:
			return redcon.AppendInt(dst, r.Int)
		case r.Int != 0:
			return append(dst, "#t\r\n"...)
		}
		return append(dst, "#f\r\n"...)
	case Verbatim:
		if proto < 3 {
			text := r.Str
			if len(text) >= 4 {
				text = text[4:]
			}
			return redcon.AppendBulk(dst, text)
		}
		dst = appendHeader(dst, '=', len(r.Str))
		dst = append(dst, r.Str...)
		return append(dst, "\r\n"...)
	case BigNumber:
		if proto < 3 {
			return redcon.AppendBulk(dst, r.Str)
		}
		dst = append(dst, '(')
		dst = append(dst, r.Str...)
		return append(dst, "\r\n"...)
	}
	panic("resp: unknown reply type " + strconv.Itoa(int(r.Type)))
}

func appendHeader(dst []byte, c byte, n int) []byte {
	dst = append(dst, c)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n"...)
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

// Parse decodes one RESP2 or RESP3 reply from the front of b. It returns
// the reply, the bytes consumed, and ok=false when b holds no complete
// valid reply.
func Parse(b []byte) (Reply, int, bool) {
	br := bytes.NewReader(b)
	rd := bufio.NewReader(br)
	r, err := ReadReply(rd, len(b))
	if err != nil {
		return Reply{}, 0, false
	}
	return r, len(b) - br.Len() - rd.Buffered(), true
}

// RESP2 returns r as a RESP2 connection receives it: maps, sets, pairs and
// pushes become arrays, doubles, verbatim strings and big numbers bulks,
// booleans integers. A reply that is RESP2 already is returned as it is.
func (r Reply) RESP2() Reply {
	switch r.Type {
	case Double, BigNumber:
		return Reply{Type: Bulk, Str: r.Str}
	case Verbatim:
		text := r.Str
		if len(text) >= 4 {
			text = text[4:]
		}
		return Reply{Type: Bulk, Str: text}
	case Bool:
		return Reply{Type: Int, Int: r.Int}
	case Pairs:
		out := make([]Reply, 0, 2*len(r.Elems))
		for _, p := range r.Elems {
			for _, e := range p.Elems {
				out = append(out, e.RESP2())
			}
		}
		return Reply{Type: Array, Elems: out}
	case Array, Map, Set, Push:
		var out []Reply
		for i, e := range r.Elems {
			if c := e.RESP2(); out != nil || !c.Equal(e) {
				if out == nil {
					out = make([]Reply, len(r.Elems))
					copy(out, r.Elems[:i])
				}
				out[i] = c
			}
		}
		if out == nil {
			out = r.Elems
		}
		return Reply{Type: Array, Elems: out}
	}
	return r
}
