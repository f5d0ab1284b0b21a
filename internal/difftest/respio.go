package difftest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Value is one RESP2 or RESP3 reply as read off the wire: its kind, its
// payload and the exact bytes it was read from.
type Value struct {
	Kind  byte    // the type byte: + - : $ * (RESP2), _ , # ( ! = ~ % > (RESP3)
	Null  bool    // $-1, *-1 or _
	Str   []byte  // payload of a status, error, bulk, double, boolean, big number, verbatim
	Int   int64   // value of an integer
	Elems []Value // elements of an array, set or push; a map's keys and values in turn
	Raw   []byte  // the bytes on the wire, CRLFs included
}

// appendCommand appends args as a RESP multibulk request.
func appendCommand(dst []byte, args [][]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, "\r\n"...)
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, a...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// maxReplyLen bounds a single bulk or array header the harness will
// believe, so that a garbled reply cannot make it allocate gigabytes.
const maxReplyLen = 64 << 20

// readValue reads one RESP2 or RESP3 reply.
func readValue(rd *bufio.Reader) (Value, error) {
	var raw []byte
	v, err := readInto(rd, &raw)
	if err != nil {
		return Value{}, err
	}
	v.Raw = raw
	return v, nil
}

// readInto reads one reply and appends its bytes to *raw; the Raw fields
// of nested values are slices of what this call appended.
func readInto(rd *bufio.Reader, raw *[]byte) (Value, error) {
	start := len(*raw)
	line, err := rd.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return Value{}, errors.New("resp: header line too long")
		}
		return Value{}, err
	}
	*raw = append(*raw, line...)
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Value{}, fmt.Errorf("resp: malformed line %q", line)
	}
	body := line[1 : len(line)-2]
	v := Value{Kind: line[0]}
	switch v.Kind {
	case '+', '-', ',', '#', '(':
		v.Str = append([]byte(nil), body...)
	case '_':
		v.Null = true
	case ':':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return Value{}, fmt.Errorf("resp: bad integer %q", line)
		}
		v.Int = n
	case '$', '!', '=':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil || n < -1 || n > maxReplyLen || (n == -1 && v.Kind != '$') {
			return Value{}, fmt.Errorf("resp: bad bulk length %q", line)
		}
		if n == -1 {
			v.Null = true
			break
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return Value{}, err
		}
		*raw = append(*raw, buf...)
		if !bytes.HasSuffix(buf, []byte("\r\n")) {
			return Value{}, errors.New("resp: bulk string not followed by CRLF")
		}
		v.Str = buf[:n]
	case '*', '~', '%', '>':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil || n < -1 || n > maxReplyLen || (n == -1 && v.Kind != '*') {
			return Value{}, fmt.Errorf("resp: bad array length %q", line)
		}
		if n == -1 {
			v.Null = true
			break
		}
		if v.Kind == '%' {
			n *= 2
		}
		v.Elems = make([]Value, n)
		for i := range v.Elems {
			e, err := readInto(rd, raw)
			if err != nil {
				return Value{}, err
			}
			v.Elems[i] = e
		}
	default:
		return Value{}, fmt.Errorf("resp: unknown reply type %q", line)
	}
	v.Raw = (*raw)[start:len(*raw):len(*raw)]
	return v, nil
}

// encode returns the RESP bytes of v, rebuilt from its fields (Raw is
// ignored), so that a value changed by an option can be compared as bytes.
func (v Value) encode(dst []byte) []byte {
	dst = append(dst, v.Kind)
	switch {
	case v.Null && v.Kind == '_':
		return append(dst, "\r\n"...)
	case v.Null:
		return append(dst, "-1\r\n"...)
	case v.Kind == '+' || v.Kind == '-' || v.Kind == ',' || v.Kind == '#' || v.Kind == '(':
		dst = append(dst, v.Str...)
	case v.Kind == ':':
		dst = strconv.AppendInt(dst, v.Int, 10)
	case v.Kind == '$' || v.Kind == '!' || v.Kind == '=':
		dst = strconv.AppendInt(dst, int64(len(v.Str)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, v.Str...)
	case isAggregate(v.Kind):
		n := len(v.Elems)
		if v.Kind == '%' {
			n /= 2
		}
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, "\r\n"...)
		for _, e := range v.Elems {
			dst = e.encode(dst)
		}
		return dst
	}
	return append(dst, "\r\n"...)
}

// isAggregate reports whether a reply of this kind has elements.
func isAggregate(kind byte) bool {
	return kind == '*' || kind == '~' || kind == '%' || kind == '>'
}
