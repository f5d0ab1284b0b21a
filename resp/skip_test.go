package resp

import (
	"errors"
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
