package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// Replies of a million keys, read without a value per key (-longread).

// sendOnly writes one command to nc.
func sendOnly(nc net.Conn, args ...string) error {
	elems := make([]resp.Reply, len(args))
	for i, a := range args {
		elems[i] = resp.BulkString(a)
	}
	nc.SetDeadline(time.Now().Add(5 * time.Minute))
	_, err := nc.Write(resp.ArrayReply(elems...).Append(nil))
	return err
}

// skimArray reads a RESP2 array of bulk strings (KEYS's reply) and
// returns how many it holds, discarding them; an error reply is returned
// as an error.
func skimArray(rd *bufio.Reader) (int, error) {
	n, err := skimHeader(rd, '*')
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		if _, err := skimBulk(rd, false); err != nil {
			return 0, fmt.Errorf("element %d of %d: %w", i, n, err)
		}
	}
	return n, nil
}

// skimScan reads SCAN's reply: the next cursor, and how many keys.
func skimScan(rd *bufio.Reader) (cursor string, n int, err error) {
	if m, err := skimHeader(rd, '*'); err != nil {
		return "", 0, err
	} else if m != 2 {
		return "", 0, fmt.Errorf("SCAN: an array of %d, want 2", m)
	}
	if cursor, err = skimBulk(rd, true); err != nil {
		return "", 0, fmt.Errorf("SCAN's cursor: %w", err)
	}
	n, err = skimArray(rd)
	return cursor, n, err
}

// skimHeader reads a line that must start with kind and returns the
// number after it; a line starting with '-' is the server's error.
func skimHeader(rd *bufio.Reader, kind byte) (int, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return 0, fmt.Errorf("a line without CRLF: %q", line)
	}
	line = line[:len(line)-2]
	switch line[0] {
	case kind:
	case '-':
		return 0, errors.New(string(line[1:]))
	default:
		return 0, fmt.Errorf("got %q, want %q", line, kind)
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad length in %q", line)
	}
	return n, nil
}

// skimBulk reads a bulk string, returning it if keep, else discarding it.
func skimBulk(rd *bufio.Reader, keep bool) (string, error) {
	n, err := skimHeader(rd, '$')
	if err != nil {
		return "", err
	}
	if keep {
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
	_, err = rd.Discard(n + 2)
	return "", err
}
