package resp

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// A bulk larger than SkipAbove is dropped as it arrives: the buffer never
// holds it, the request comes back with nil in its place and a
// *TooLargeError, and the requests after it are read as usual, fed in
// pieces or read from a source.
func TestReaderSkipAbove(t *testing.T) {
	const big = 8 << 20
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + "8388608\r\n" + strings.Repeat("v", big) + "\r\n" +
		"*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$5\r\nsmall\r\n" +
		"*2\r\n$3\r\nGET\r\n$" + "8388608\r\n" + strings.Repeat("k", big) + "\r\n" +
		"PING\r\n"
	check := func(what string, next func() ([][]byte, error), bufCap func() int) {
		t.Helper()
		args, err := next()
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Size != big || tl.Limit != 1<<20 || len(args) != 3 || string(args[0]) != "SET" || args[2] != nil {
			t.Fatalf("%s: first request %q, %v; want SET k <dropped> and a TooLargeError", what, args, err)
		}
		if args, err := next(); err != nil || len(args) != 3 || string(args[2]) != "small" {
			t.Fatalf("%s: second request %q, %v", what, args, err)
		}
		if args, err := next(); !errors.As(err, &tl) || len(args) != 2 || args[1] != nil {
			t.Fatalf("%s: third request %q, %v", what, args, err)
		}
		if args, err := next(); err != nil || len(args) != 1 || string(args[0]) != "PING" {
			t.Fatalf("%s: fourth request %q, %v", what, args, err)
		}
		if c := bufCap(); c > shrinkAbove {
			t.Errorf("%s: the buffer grew to %d bytes", what, c)
		}
	}
	r := NewReader(strings.NewReader(in))
	r.SkipAbove = 1 << 20
	maxCap := 0
	check("ReadCommand", func() ([][]byte, error) {
		args, err := r.ReadCommand()
		maxCap = max(maxCap, cap(r.buf))
		return args, err
	}, func() int { return maxCap })

	for _, chunk := range []int{1000, 16 << 10, 100 << 10} {
		fed := NewBufferReader()
		fed.SkipAbove = 1 << 20
		rest := []byte(in)
		maxCap := 0
		check("fed", func() ([][]byte, error) {
			for {
				args, err := fed.Next()
				if err != nil || args != nil {
					return args, err
				}
				if len(rest) == 0 {
					return nil, nil
				}
				sp := fed.Space()
				maxCap = max(maxCap, cap(fed.buf))
				n := copy(sp[:min(len(sp), chunk)], rest)
				fed.Commit(n)
				rest = rest[n:]
			}
		}, func() int { return maxCap })
	}

	// Without SkipAbove the same bulk is kept.
	whole := NewReader(strings.NewReader(in))
	if args, err := whole.ReadCommand(); err != nil || len(args[2]) != big {
		t.Fatalf("without SkipAbove: %d args, %v", len(args), err)
	}
}

// A big bulk is read into a buffer grown no further than it needs and
// handed out in that buffer, not copied: 3.0 times its size allocated in
// all (the buffer doubles as bytes arrive), where doubling past it and
// copying it out took 5.0 times.
func TestReaderBigBulkNotCopied(t *testing.T) {
	const size = 1 << 20
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n" + strings.Repeat("v", size) + "\r\n" + "PING\r\n")
	r := NewBufferReader()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var got [][]byte
	rest := in
	for got == nil {
		sp := r.Space()
		n := copy(sp[:min(len(sp), 16<<10)], rest)
		r.Commit(n)
		rest = rest[n:]
		args, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = args
	}
	runtime.ReadMemStats(&after)
	if len(got) != 3 || len(got[2]) != size || strings.Trim(string(got[2]), "v") != "" {
		t.Fatalf("read %d args, the value %d bytes", len(got), len(got[2]))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 7*size/2 {
		t.Errorf("reading a %d-byte bulk allocated %d bytes", size, alloc)
	}
	// The rest is read as usual, and the value is not overwritten.
	r.Commit(copy(r.Space(), rest))
	if args, err := r.Next(); err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("after the bulk: %q %v", args, err)
	}
	if strings.Trim(string(got[2]), "v") != "" {
		t.Fatal("the value changed once the reader read on")
	}
}

// Big bulks handed out in their buffers, between pipelined requests, read
// the same whatever pieces they arrive in, and none is changed by what is
// read after it.
func TestReaderBigBulksInPieces(t *testing.T) {
	a, b := strings.Repeat("a", 300<<10), strings.Repeat("b", 1<<20)
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + "307200\r\n" + a + "\r\n" + "PING\r\n" +
		"*4\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$1048576\r\n" + b + "\r\n$" + "307200\r\n" + a + "\r\n" + "*1\r\n$4\r\nQUIT\r\n")
	whole, err := readAll(t, string(in))
	if err != nil || len(whole) != 4 {
		t.Fatalf("whole: %d commands, %v", len(whole), err)
	}
	for _, chunk := range []int{1000, 7000, 16 << 10, 100 << 10, len(in)} {
		got, err := feedAll(in, chunk, DefaultMaxBulkLen)
		if err != io.EOF || !sameCommands(got, whole) {
			t.Fatalf("chunk %d: %d commands, %v", chunk, len(got), err)
		}
		if string(got[0][2]) != a || string(got[2][2]) != b || string(got[2][3]) != a {
			t.Fatalf("chunk %d: a value changed", chunk)
		}
	}
}
