package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
)

// Limits on what a client may send. The defaults are Redis's.
const (
	DefaultMaxBulkLen   = 512 << 20 // proto-max-bulk-len
	MaxInlineSize       = 64 << 10  // PROTO_INLINE_MAX_SIZE
	unauthMaxMultibulk  = 10
	unauthMaxBulkLength = 16384
)

// ProtocolError is a malformed request. Redis answers it with
// "-ERR Protocol error: ..." and closes the connection.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// ErrBufferLimit is returned when a single request is larger than the
// query buffer limit.
var ErrBufferLimit = errors.New("resp: request exceeds the query buffer limit")

// Reader reads client requests: RESP multibulk arrays or inline commands.
type Reader struct {
	rd         *bufio.Reader
	MaxBulkLen int64 // largest bulk argument accepted
	MaxRequest int64 // largest request (sum of arguments) accepted
	// Unauthenticated, when set, applies Redis's tighter limits for clients
	// that have not yet passed AUTH.
	Unauthenticated bool
}

// NewReader returns a reader with Redis's default limits.
func NewReader(r io.Reader) *Reader {
	return &Reader{rd: bufio.NewReaderSize(r, 16<<10), MaxBulkLen: DefaultMaxBulkLen, MaxRequest: 1 << 30}
}

// Buffered reports how many bytes are already read from the connection and
// waiting to be parsed: more than zero means a pipelined request follows.
func (r *Reader) Buffered() int { return r.rd.Buffered() }

// ReadCommand returns the next request's arguments. Empty requests
// (a blank inline line, "*0") are skipped. A *ProtocolError means the
// request was malformed; the caller replies and closes the connection.
func (r *Reader) ReadCommand() ([][]byte, error) {
	for {
		b, err := r.rd.Peek(1)
		if err != nil {
			return nil, err
		}
		var args [][]byte
		if b[0] == '*' {
			args, err = r.readMultibulk()
		} else {
			args, err = r.readInline()
		}
		if err != nil {
			return nil, err
		}
		if len(args) > 0 {
			return args, nil
		}
	}
}

// readLine reads up to "\n" and returns the line without "\r\n". A line
// longer than MaxInlineSize is a protocol error with the given message.
func (r *Reader) readLine(tooBig string) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.rd.ReadSlice('\n')
		if err == nil {
			line = append(line, frag...)
			break
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			if len(line) > MaxInlineSize {
				return nil, &ProtocolError{tooBig}
			}
			return nil, err
		}
		// 64 KiB without a newline: refuse now rather than wait for
		// more of a request that can no longer be valid.
		if len(line) >= MaxInlineSize {
			return nil, &ProtocolError{tooBig}
		}
	}
	if len(line) > MaxInlineSize {
		return nil, &ProtocolError{tooBig}
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func (r *Reader) readMultibulk() ([][]byte, error) {
	line, err := r.readLine("too big mbulk count string")
	if err != nil {
		return nil, err
	}
	n, ok := parseLen(line[1:])
	if !ok || n > math.MaxInt32 || (r.Unauthenticated && n > unauthMaxMultibulk) {
		return nil, &ProtocolError{"invalid multibulk length"}
	}
	if n <= 0 {
		return nil, nil
	}
	args := make([][]byte, 0, min(n, 1024))
	var total int64
	for i := int64(0); i < n; i++ {
		line, err := r.readLine("too big bulk count string")
		if err != nil {
			return nil, err
		}
		if len(line) == 0 || line[0] != '$' {
			got := byte(0)
			if len(line) > 0 {
				got = line[0]
			}
			return nil, &ProtocolError{"expected '$', got '" + string(got) + "'"}
		}
		size, ok := parseLen(line[1:])
		if !ok || size < 0 || size > r.MaxBulkLen || (r.Unauthenticated && size > unauthMaxBulkLength) {
			return nil, &ProtocolError{"invalid bulk length"}
		}
		total += size
		if total > r.MaxRequest {
			return nil, ErrBufferLimit
		}
		arg, err := r.readBulk(int(size))
		if err != nil {
			return nil, err
		}
		args = append(args, arg)
	}
	return args, nil
}

// readBulk reads size bytes and the trailing CRLF. Large arguments are read
// in growing chunks so that a lying length header cannot make the server
// allocate memory the client never sends.
func (r *Reader) readBulk(size int) ([]byte, error) {
	const chunk = 1 << 20
	buf := make([]byte, 0, min(size, chunk))
	for len(buf) < size {
		want := min(size-len(buf), max(chunk, len(buf)))
		start := len(buf)
		buf = append(buf, make([]byte, want)...)
		if _, err := io.ReadFull(r.rd, buf[start:]); err != nil {
			return nil, err
		}
	}
	var crlf [2]byte
	if _, err := io.ReadFull(r.rd, crlf[:]); err != nil {
		return nil, err
	}
	if crlf != [2]byte{'\r', '\n'} {
		return nil, &ProtocolError{"invalid bulk length"}
	}
	return buf, nil
}

func (r *Reader) readInline() ([][]byte, error) {
	line, err := r.readLine("too big inline request")
	if err != nil {
		return nil, err
	}
	args, ok := SplitInline(line)
	if !ok {
		return nil, &ProtocolError{"unbalanced quotes in request"}
	}
	return args, nil
}

func parseLen(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// SplitInline splits an inline request the way redis-cli and Redis's
// sdssplitargs do: spaces separate words, "double quotes" understand
// escapes (\n \r \t \b \a \\ \" \xHH), 'single quotes' only \'. A closing
// quote must be followed by a space or the end of the line.
func SplitInline(line []byte) ([][]byte, bool) {
	var args [][]byte
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, true
		}
		var cur []byte
		inDouble, inSingle, done := false, false, false
		for !done {
			if inDouble {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					cur = append(cur, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else if inSingle {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					break
				}
				switch c := line[i]; {
				case isSpace(c):
					done = true
				case c == '"':
					inDouble = true
				case c == '\'':
					inSingle = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		args = append(args, cur)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return bytes.IndexByte([]byte("0123456789abcdefABCDEF"), c) >= 0
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
