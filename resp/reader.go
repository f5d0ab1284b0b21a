package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
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

// TooLargeError reports a request read whole whose argument of Size bytes
// was dropped for being larger than Limit (Reader.SkipAbove). Unlike the
// reader's other errors it leaves the reader usable.
type TooLargeError struct{ Size, Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("resp: an argument of %d bytes is larger than %d", e.Size, e.Limit)
}

// ErrBufferLimit is returned when a single request is larger than the
// query buffer limit.
var ErrBufferLimit = errors.New("resp: request exceeds the query buffer limit")

// Reader reads client requests: RESP multibulk arrays or inline commands.
//
// It keeps its own buffer and parses incrementally, so it serves both
// ways the server reads: ReadCommand pulls from an io.Reader and waits
// for a whole request; an event loop instead reads the socket into Space,
// calls Commit, and takes requests with Next until it reports that the
// rest has not arrived yet.
type Reader struct {
	src  io.Reader // nil for a reader fed through Space and Commit
	buf  []byte
	r, w int // buf[r:w] is read but not yet parsed

	// A multibulk request being parsed: the arguments so far, how many
	// are still to come and their total size. Small arguments are copied
	// into an arena (shared by the requests that fit in it) rather than
	// allocated one by one; the arguments handed out are capped slices of
	// it, so appending to one never writes into another.
	inMulti bool
	args    [][]byte
	want    int64
	total   int64
	arena   []byte

	MaxBulkLen int64 // largest bulk argument accepted
	MaxRequest int64 // largest request (sum of arguments) accepted
	// SkipAbove, if positive, is the largest bulk argument kept whole: a
	// larger one (up to MaxBulkLen) is dropped as it arrives, never
	// buffered, and once the rest of its request is read Next returns the
	// request (nil in place of each dropped argument) with a
	// *TooLargeError, after which the reader may be used on. A cluster
	// node sets it from its --max-entry-bytes: no write with such an
	// argument could be accepted.
	SkipAbove int64
	skip      int64 // bytes of a dropped argument still to come, CRLF included
	expect    int64 // bytes from r the bulk being read needs in all (0: none pending)
	dropped   int64 // the largest argument dropped from the current request
	// Unauthenticated, when set, applies Redis's tighter limits for clients
	// that have not yet passed AUTH.
	Unauthenticated bool
}

// readChunk is how much room the buffer keeps for one read from the
// socket; a buffer grown past shrinkAbove for a large request is dropped
// once it has been parsed.
const (
	maxArena     = 4 << 10
	minArenaRoom = 512
	readChunk    = 16 << 10
	shrinkAbove  = 256 << 10
	// keepAbove: an argument this large is handed out in the buffer it
	// arrived in, not copied (a value near a cluster's --max-entry-bytes
	// would otherwise be held twice on the node a client sends it to).
	keepAbove = 256 << 10
)

// NewReader returns a reader of src with Redis's default limits.
func NewReader(src io.Reader) *Reader {
	r := NewBufferReader()
	r.src = src
	return r
}

// NewBufferReader returns a reader with Redis's default limits that is
// fed with Space and Commit instead of reading by itself.
func NewBufferReader() *Reader {
	return &Reader{MaxBulkLen: DefaultMaxBulkLen, MaxRequest: 1 << 30}
}

// Buffered reports how many bytes are already read from the connection and
// waiting to be parsed: more than zero means a pipelined request follows.
func (r *Reader) Buffered() int { return r.w - r.r }

// Space returns room at the end of the buffer for at least readChunk
// more bytes. Fill it, then Commit what was written. The buffer grows
// only as fast as bytes actually arrive, so a length header that lies
// does not make it allocate memory the client never sends.
func (r *Reader) Space() []byte {
	if r.r == r.w {
		r.r, r.w = 0, 0
		if cap(r.buf) > shrinkAbove && !r.inMulti {
			r.buf = nil
		}
	}
	if len(r.buf)-r.w >= readChunk {
		return r.buf[r.w:]
	}
	if r.r > 0 && r.r >= r.w-r.r {
		// More parsed than pending: move the pending bytes to the front.
		n := copy(r.buf, r.buf[r.r:r.w])
		r.r, r.w = 0, n
		if len(r.buf)-r.w >= readChunk {
			return r.buf[r.w:]
		}
	}
	size := max(2*len(r.buf), r.w-r.r+readChunk)
	if r.expect > 0 {
		// Doubling, but not past the bulk being read: a lying header
		// still costs no more than the bytes that arrived.
		size = max(min(size, int(r.expect)+readChunk), r.w-r.r+readChunk)
	}
	nb := make([]byte, size)
	r.w = copy(nb, r.buf[r.r:r.w])
	r.r = 0
	r.buf = nb
	return r.buf[r.w:]
}

// Commit records that n bytes were written at the start of Space.
func (r *Reader) Commit(n int) { r.w += n }

// ReadCommand returns the next request's arguments, reading from the
// source until one is whole. Empty requests (a blank inline line, "*0")
// are skipped. A *ProtocolError means the request was malformed; the
// caller replies and closes the connection. The source's end in the
// middle of a request is io.ErrUnexpectedEOF.
func (r *Reader) ReadCommand() ([][]byte, error) {
	for {
		args, err := r.Next()
		if err != nil || args != nil {
			return args, err
		}
		n, err := r.src.Read(r.Space())
		r.Commit(n)
		if n == 0 && err != nil {
			if err == io.EOF && (r.inMulti || r.r != r.w) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// Next parses the next whole request in the buffer. It returns nil
// arguments and a nil error when the rest of the request has not arrived.
// Empty requests are skipped. After an error the reader must not be used.
func (r *Reader) Next() ([][]byte, error) {
	r.expect = 0
	for {
		if !r.inMulti {
			if r.r == r.w {
				return nil, nil
			}
			if r.buf[r.r] != '*' {
				line, ok, err := r.line("too big inline request")
				if !ok || err != nil {
					return nil, err
				}
				args, ok := SplitInline(line)
				if !ok {
					return nil, &ProtocolError{"unbalanced quotes in request"}
				}
				if len(args) == 0 {
					continue
				}
				return args, nil
			}
			line, ok, err := r.line("too big mbulk count string")
			if !ok || err != nil {
				return nil, err
			}
			n, ok := parseLen(line[1:])
			if !ok || n > math.MaxInt32 || (r.Unauthenticated && n > unauthMaxMultibulk) {
				return nil, &ProtocolError{"invalid multibulk length"}
			}
			if n <= 0 {
				continue
			}
			r.inMulti, r.want, r.total = true, n, 0
			r.args = make([][]byte, 0, min(n, 1024))
			// Requests share an arena while it has room: a pipeline
			// of small requests then takes one allocation per few
			// kilobytes of input, not a few kilobytes per request.
			if room := cap(r.arena) - len(r.arena); room < min(r.w-r.r, minArenaRoom) {
				r.arena = make([]byte, 0, min(r.w-r.r, maxArena))
			}
		}
		for r.want > 0 || r.skip > 0 {
			if r.skip > 0 {
				n := min(r.skip, int64(r.w-r.r))
				r.r += int(n)
				r.skip -= n
				if r.skip > 0 {
					return nil, nil
				}
				continue
			}
			start := r.r
			line, ok, err := r.line("too big bulk count string")
			if !ok || err != nil {
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
			if r.total+size > r.MaxRequest {
				return nil, ErrBufferLimit
			}
			if r.SkipAbove > 0 && size > r.SkipAbove {
				r.skip = size + 2
				r.dropped = max(r.dropped, size)
				r.args = append(r.args, nil)
				r.want--
				continue
			}
			if int64(r.w-r.r) < size+2 {
				// The header is parsed again with the rest of the bulk,
				// which the buffer need not grow past (Space).
				r.expect = int64(r.r-start) + size + 2
				r.r = start
				return nil, nil
			}
			end := r.r + int(size)
			if r.buf[end] != '\r' || r.buf[end+1] != '\n' {
				return nil, &ProtocolError{"invalid bulk length"}
			}
			var arg []byte
			switch {
			case int(size) <= cap(r.arena)-len(r.arena):
				start := len(r.arena)
				r.arena = append(r.arena, r.buf[r.r:end]...)
				arg = r.arena[start:len(r.arena):len(r.arena)]
			case size >= keepAbove:
				// A big argument keeps the buffer it arrived in rather
				// than being copied out of it; what follows it moves to
				// a buffer of its own.
				arg = r.buf[r.r:end:end]
				rest := r.buf[end+2 : r.w]
				nb := make([]byte, len(rest)+readChunk)
				n := copy(nb, rest)
				r.buf, r.w = nb, n
				end = -2 // the next request starts at 0 of the new buffer
			default:
				arg = append([]byte(nil), r.buf[r.r:end]...)
			}
			r.args = append(r.args, arg)
			r.r = end + 2
			r.total += size
			r.want--
		}
		args := r.args
		r.inMulti, r.args = false, nil
		if d := r.dropped; d > 0 {
			r.dropped = 0
			return args, &TooLargeError{Size: d, Limit: r.SkipAbove}
		}
		return args, nil
	}
}

// line takes the next line without its "\r\n", or reports that it has
// not arrived. A line longer than MaxInlineSize is a protocol error with
// the given message, raised as soon as that many bytes are buffered.
func (r *Reader) line(tooBig string) ([]byte, bool, error) {
	pending := r.buf[r.r:r.w]
	i := bytes.IndexByte(pending, '\n')
	if i < 0 {
		if len(pending) >= MaxInlineSize {
			return nil, false, &ProtocolError{tooBig}
		}
		return nil, false, nil
	}
	if i+1 > MaxInlineSize {
		return nil, false, &ProtocolError{tooBig}
	}
	r.r += i + 1
	line := pending[:i]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, true, nil
}

// parseLen parses a length header's decimal number as strtoll would
// (optional sign, digits only), without allocating.
func parseLen(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if b[0] == '-' || b[0] == '+' {
		b = b[1:]
	}
	n, ok := ParseDigits(b)
	switch {
	case !ok || len(b) == 0:
		return 0, false
	case neg && n <= 1<<63:
		return -int64(n), true
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}

// ParseDigits parses unsigned decimal digits (nothing else) into a
// uint64; false on any other byte or on overflow. Empty input is 0.
func ParseDigits(b []byte) (uint64, bool) {
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
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
