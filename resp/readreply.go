package resp

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// maxReplyDepth bounds the nesting of a reply ReadReply believes.
const maxReplyDepth = 1000

var (
	errBadLine   = errors.New("resp: malformed reply line")
	errBadLength = errors.New("resp: bad length in reply")
	errTooDeep   = errors.New("resp: reply nested too deeply")
	errBadType   = errors.New("resp: unknown reply type")
)

// ReadReply reads one RESP2 or RESP3 reply from rd. No string or
// aggregate may claim more than maxLen bytes or elements, so that a
// garbled header cannot make it allocate without bound. RESP3 attributes
// are read and dropped; a blob error becomes an Error, a null a Nil.
func ReadReply(rd *bufio.Reader, maxLen int) (Reply, error) {
	return readReply(rd, maxLen, 0)
}

func readReply(rd *bufio.Reader, maxLen, depth int) (Reply, error) {
	if depth > maxReplyDepth {
		return Reply{}, errTooDeep
	}
	line, err := rd.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return Reply{}, errBadLine
		}
		return Reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Reply{}, errBadLine
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return Reply{Type: Status, Str: append([]byte(nil), body...)}, nil
	case '-':
		return Reply{Type: Error, Str: append([]byte(nil), body...)}, nil
	case ':':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return Reply{}, errBadLine
		}
		return Reply{Type: Int, Int: n}, nil
	case ',':
		return Reply{Type: Double, Str: append([]byte(nil), body...)}, nil
	case '(':
		return Reply{Type: BigNumber, Str: append([]byte(nil), body...)}, nil
	case '_':
		if len(body) != 0 {
			return Reply{}, errBadLine
		}
		return Reply{}, nil
	case '#':
		switch string(body) {
		case "t":
			return Reply{Type: Bool, Int: 1}, nil
		case "f":
			return Reply{Type: Bool}, nil
		}
		return Reply{}, errBadLine
	case '$', '!', '=':
		n, err := length(body, maxLen)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			if kind != '$' {
				return Reply{}, errBadLength
			}
			return Reply{}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return Reply{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Reply{}, errBadLine
		}
		switch kind {
		case '!':
			return Reply{Type: Error, Str: buf[:n:n]}, nil
		case '=':
			if n < 4 || buf[3] != ':' {
				return Reply{}, errBadLine
			}
			return Reply{Type: Verbatim, Str: buf[:n:n]}, nil
		}
		return Reply{Type: Bulk, Str: buf[:n:n]}, nil
	case '*', '~', '>', '%', '|':
		n, err := length(body, maxLen)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			if kind != '*' {
				return Reply{}, errBadLength
			}
			return Reply{Type: NilArray}, nil
		}
		count := n
		if kind == '%' || kind == '|' {
			if n > maxLen/2 {
				return Reply{}, errBadLength
			}
			count = 2 * n
		}
		elems := make([]Reply, count)
		for i := range elems {
			if elems[i], err = readReply(rd, maxLen, depth+1); err != nil {
				return Reply{}, err
			}
		}
		switch kind {
		case '~':
			return Reply{Type: Set, Elems: elems}, nil
		case '>':
			return Reply{Type: Push, Elems: elems}, nil
		case '%':
			return Reply{Type: Map, Elems: elems}, nil
		case '|':
			// An attribute describes the reply that follows it; the only
			// one that matters here is a member's mark of pairs.
			next, err := readReply(rd, maxLen, depth+1)
			if err == nil && next.Type == Array && count == 2 && elems[0].Type == Status &&
				string(elems[0].Str) == "deadbolt-pairs" && pairsOK(next.Elems) {
				next.Type = Pairs
			}
			return next, err
		}
		return Reply{Type: Array, Elems: elems}, nil
	}
	return Reply{}, errBadType
}

// length parses an aggregate or string length: -1 (a RESP2 null) or
// 0..maxLen.
func length(body []byte, maxLen int) (int, error) {
	n, err := strconv.Atoi(string(body))
	if err != nil || n < -1 || n > maxLen {
		return 0, errBadLength
	}
	return n, nil
}

// pairsOK reports whether elems can be the elements of a Pairs reply.
func pairsOK(elems []Reply) bool {
	for _, e := range elems {
		if e.Type != Array || len(e.Elems) != 2 {
			return false
		}
	}
	return true
}
