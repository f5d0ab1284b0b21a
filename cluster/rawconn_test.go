//go:build linux && !race

package cluster

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// rawPair returns both ends of a loopback TCP connection, each through
// fastConn.
func rawPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		got <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s == nil {
		t.Fatal("accept failed")
	}
	a, b = fastConn(c), fastConn(s)
	if _, ok := a.(*rawConn); !ok {
		t.Fatalf("fastConn gave %T", a)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A write larger than the socket buffers parks until the reader drains
// them and arrives whole; reads honour deadlines and report a timeout as
// net.Conn's do; a closed peer reads as io.EOF, and writing to it fails.
func TestRawConn(t *testing.T) {
	a, b := rawPair(t)
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	werr := make(chan error, 1)
	go func() {
		n, err := a.Write(msg)
		if err == nil && n != len(msg) {
			err = io.ErrShortWrite
		}
		werr <- err
	}()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("bytes changed in transit")
	}

	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := b.Read(got[:1])
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	b.SetReadDeadline(time.Time{})

	if n, err := b.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
	a.Close()
	if _, err := b.Read(got[:1]); err != io.EOF {
		t.Fatalf("read from a closed peer: %v, want EOF", err)
	}
	var werr2 error
	for i := 0; i < 100 && werr2 == nil; i++ { // the first write may still be taken
		_, werr2 = b.Write([]byte("x"))
		time.Sleep(time.Millisecond)
	}
	if werr2 == nil {
		t.Fatal("writes to a closed peer kept succeeding")
	}
}
