package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func readAll(t testing.TB, in string) ([][][]byte, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in))
	var cmds [][][]byte
	for {
		args, err := r.ReadCommand()
		if err != nil {
			if err == io.EOF {
				return cmds, nil
			}
			return cmds, err
		}
		cmds = append(cmds, args)
	}
}

func TestReadCommand(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][]string
		err  string // protocol error text, "" for none
	}{
		{name: "multibulk", in: "*2\r\n$3\r\nGET\r\n$1\r\na\r\n", want: [][]string{{"GET", "a"}}},
		{name: "pipeline", in: "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", want: [][]string{{"PING"}, {"PING"}}},
		{name: "empty bulk", in: "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", want: [][]string{{"GET", ""}}},
		{name: "binary bulk", in: "*2\r\n$3\r\nGET\r\n$4\r\na\r\nb\r\n", want: [][]string{{"GET", "a\r\nb"}}},
		{name: "zero count skipped", in: "*0\r\n*1\r\n$4\r\nPING\r\n", want: [][]string{{"PING"}}},
		{name: "negative count skipped", in: "*-1\r\n*1\r\n$4\r\nPING\r\n", want: [][]string{{"PING"}}},
		{name: "inline", in: "SET a \"b c\"\r\n", want: [][]string{{"SET", "a", "b c"}}},
		{name: "inline lf only", in: "PING\n", want: [][]string{{"PING"}}},
		{name: "inline blank skipped", in: "\r\n  \r\nPING\r\n", want: [][]string{{"PING"}}},
		{name: "inline escapes", in: "SET k \"\\x41\\n\" 'it\\'s'\r\n", want: [][]string{{"SET", "k", "A\n", "it's"}}},
		{name: "bad count", in: "*x\r\n", err: "invalid multibulk length"},
		{name: "expected dollar", in: "*1\r\n:1\r\n", err: "expected '$', got ':'"},
		{name: "bad bulk length", in: "*1\r\n$-5\r\n", err: "invalid bulk length"},
		{name: "bulk without crlf", in: "*1\r\n$1\r\nab\r\n", err: "invalid bulk length"},
		{name: "unbalanced", in: "SET a \"b\r\n", err: "unbalanced quotes in request"},
		{name: "quote then letter", in: "SET a \"b\"c\r\n", err: "unbalanced quotes in request"},
		{name: "too big inline", in: strings.Repeat("a", MaxInlineSize+10) + "\r\n", err: "too big inline request"},
		{name: "too big count", in: "*" + strings.Repeat("1", MaxInlineSize+10), err: "too big mbulk count string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds, err := readAll(t, tt.in)
			if tt.err != "" {
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Msg != tt.err {
					t.Fatalf("err = %v, want protocol error %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cmds) != len(tt.want) {
				t.Fatalf("got %d commands %q, want %d", len(cmds), cmds, len(tt.want))
			}
			for i := range cmds {
				if len(cmds[i]) != len(tt.want[i]) {
					t.Fatalf("cmd %d = %q, want %q", i, cmds[i], tt.want[i])
				}
				for j := range cmds[i] {
					if string(cmds[i][j]) != tt.want[i][j] {
						t.Fatalf("cmd %d = %q, want %q", i, cmds[i], tt.want[i])
					}
				}
			}
		})
	}
}

func TestReaderLimits(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$100\r\n"))
	r.MaxBulkLen = 10
	var pe *ProtocolError
	if _, err := r.ReadCommand(); !errors.As(err, &pe) || pe.Msg != "invalid bulk length" {
		t.Fatalf("bulk over limit: err = %v", err)
	}

	r = NewReader(strings.NewReader("*11\r\n"))
	r.Unauthenticated = true
	if _, err := r.ReadCommand(); !errors.As(err, &pe) || pe.Msg != "invalid multibulk length" {
		t.Fatalf("unauthenticated multibulk: err = %v", err)
	}

	r = NewReader(strings.NewReader("*2\r\n$6\r\nabcdef\r\n$6\r\nabcdef\r\n"))
	r.MaxRequest = 10
	if _, err := r.ReadCommand(); !errors.Is(err, ErrBufferLimit) {
		t.Fatalf("request over limit: err = %v", err)
	}

	// A length header that lies does not make the reader allocate it.
	r = NewReader(strings.NewReader("*1\r\n$536870000\r\nshort"))
	if _, err := r.ReadCommand(); err != io.ErrUnexpectedEOF {
		t.Fatalf("lying header: err = %v", err)
	}
}

func TestReplyRoundTrip(t *testing.T) {
	replies := []Reply{
		OK, NilReply, IntReply(-42), BulkString(""), BulkString("a\r\nb"), Err("ERR x"),
		{Type: NilArray}, ArrayReply(), ArrayReply(IntReply(1), ArrayReply(BulkString("x"), NilReply)),
	}
	for _, r := range replies {
		enc := r.Append(nil)
		got, n, ok := Parse(enc)
		if !ok || n != len(enc) || !got.Equal(r) {
			t.Errorf("round trip of %q: got %+v (n=%d ok=%v)", enc, got, n, ok)
		}
	}
}

// FuzzReader feeds arbitrary bytes to the request reader: it must never
// panic, and every command it returns must have at least one argument.
func FuzzReader(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\na\r\n"))
	f.Add([]byte("SET a \"b\\x41\" 'c'\r\n"))
	f.Add([]byte("*1\r\n$-1\r\n"))
	f.Add([]byte("*3\r\n$1\r\na\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		r.MaxBulkLen = 1 << 16
		for i := 0; i < 1000; i++ {
			args, err := r.ReadCommand()
			if err != nil {
				return
			}
			if len(args) == 0 {
				t.Fatal("empty command returned")
			}
		}
	})
}

// feedAll parses in through Space, Commit and Next, committing at most
// chunk bytes at a time, the way the event loop feeds a reader.
func feedAll(in []byte, chunk int, maxBulk int64) ([][][]byte, error) {
	r := NewBufferReader()
	r.MaxBulkLen = maxBulk
	var cmds [][][]byte
	for {
		for {
			args, err := r.Next()
			if err != nil {
				return cmds, err
			}
			if args == nil {
				break
			}
			cmds = append(cmds, args)
		}
		if len(in) == 0 {
			if r.inMulti || r.Buffered() > 0 {
				return cmds, io.ErrUnexpectedEOF
			}
			return cmds, io.EOF
		}
		n := copy(r.Space(), in[:min(chunk, len(in))])
		r.Commit(n)
		in = in[n:]
	}
}

func sameCommands(a, b [][][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if !bytes.Equal(a[i][j], b[i][j]) {
				return false
			}
		}
	}
	return true
}

func sameError(a, b error) bool {
	var pa, pb *ProtocolError
	if errors.As(a, &pa) || errors.As(b, &pb) {
		return errors.As(a, &pa) && errors.As(b, &pb) && pa.Msg == pb.Msg
	}
	return a == b
}

// A request split anywhere, even one byte at a time, parses the same as
// when it arrives whole.
func TestReaderFedInPieces(t *testing.T) {
	in := []byte("*2\r\n$3\r\nGET\r\n$4\r\na\r\nb\r\n" + "PING\r\n" + "*0\r\n" +
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + "40000\r\n" + strings.Repeat("v", 40000) + "\r\n" +
		"SET a \"b c\"\n" + "*1\r\n$4\r\nQUIT\r\n")
	whole, err := feedAll(in, len(in), DefaultMaxBulkLen)
	if err != io.EOF || len(whole) != 5 {
		t.Fatalf("whole: %d commands, err %v", len(whole), err)
	}
	if got := string(whole[2][2]); len(got) != 40000 {
		t.Fatalf("big bulk is %d bytes", len(got))
	}
	for _, chunk := range []int{1, 2, 3, 7, 100, 16 << 10} {
		got, err := feedAll(in, chunk, DefaultMaxBulkLen)
		if err != io.EOF || !sameCommands(got, whole) {
			t.Fatalf("chunk %d: %d commands, err %v", chunk, len(got), err)
		}
	}
}

// A big request does not keep its buffer once it is parsed.
func TestReaderShrinks(t *testing.T) {
	r := NewBufferReader()
	in := []byte("*2\r\n$4\r\nECHO\r\n$1000000\r\n" + strings.Repeat("x", 1000000) + "\r\n")
	for len(in) > 0 {
		n := copy(r.Space(), in)
		r.Commit(n)
		in = in[n:]
	}
	args, err := r.Next()
	if err != nil || len(args) != 2 || len(args[1]) != 1000000 {
		t.Fatalf("args %d, err %v", len(args), err)
	}
	r.Space()
	if cap(r.buf) > shrinkAbove {
		t.Fatalf("buffer kept at %d bytes", cap(r.buf))
	}
}

// FuzzReaderPieces checks that feeding a reader in pieces gives the same
// commands and the same error as reading the whole input.
func FuzzReaderPieces(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\na\r\n"), uint8(1))
	f.Add([]byte("SET a \"b\\x41\" 'c'\r\n*0\r\n"), uint8(3))
	f.Add([]byte("*3\r\n$1\r\na\r\n"), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		r := NewReader(bytes.NewReader(in))
		r.MaxBulkLen = 1 << 16
		var want [][][]byte
		var werr error
		for {
			args, err := r.ReadCommand()
			if err != nil {
				werr = err
				break
			}
			want = append(want, args)
		}
		got, gerr := feedAll(in, int(chunk)+1, 1<<16)
		if !sameCommands(got, want) || !sameError(gerr, werr) {
			t.Fatalf("pieces of %d: %q, %v; whole: %q, %v", int(chunk)+1, got, gerr, want, werr)
		}
	})
}

func TestParseLen(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"12", 12, true}, {"-1", -1, true}, {"+7", 7, true}, {"007", 7, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1x", 0, false}, {" 1", 0, false}, {"0x10", 0, false},
		{"123456789012345678901", 0, false},
	} {
		got, ok := parseLen([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseLen(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		want, err := strconv.ParseInt(tt.in, 10, 64)
		if len(tt.in) <= 20 && (err == nil) != ok || ok && want != got {
			t.Errorf("parseLen(%q) disagrees with strconv.ParseInt: %d, %v", tt.in, want, err)
		}
	}
}

// A pipeline of small requests shares arenas: parsing 1,000 of them
// allocates about what they hold, not an arena of a few kilobytes each
// (4 MB before 2026-11-26), and appending to one argument never
// changes another.
func TestReaderPipelineArena(t *testing.T) {
	var in []byte
	const n = 1000
	for i := range n {
		k := "lock:entity:" + strconv.Itoa(i)
		in = append(in, "*4\r\n$4\r\nHSET\r\n$"+strconv.Itoa(len(k))+"\r\n"+k+"\r\n$3\r\nabc\r\n$1\r\n1\r\n"...)
	}
	r := NewBufferReader()
	for len(in) > 0 {
		k := copy(r.Space(), in)
		r.Commit(k)
		in = in[k:]
	}
	cmds := make([][][]byte, 0, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for {
		args, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if args == nil {
			break
		}
		cmds = append(cmds, args)
	}
	runtime.ReadMemStats(&after)
	if len(cmds) != n {
		t.Fatalf("%d commands, want %d", len(cmds), n)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 400*n {
		t.Errorf("parsing %d small requests allocated %d bytes", n, got)
	}
	for i, args := range cmds {
		args[1] = append(args[1], "XYZ"...)
		if i+1 < n && string(cmds[i+1][0]) != "HSET" {
			t.Fatalf("appending to request %d's key changed request %d: %q", i, i+1, cmds[i+1][0])
		}
		if want := "lock:entity:" + strconv.Itoa(i) + "XYZ"; string(args[1]) != want || string(args[2]) != "abc" {
			t.Fatalf("request %d: %q", i, args)
		}
	}
}
