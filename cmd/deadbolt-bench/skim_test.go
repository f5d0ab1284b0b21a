package main

import (
	"bufio"
	"bytes"
	"strconv"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// TestSkim: the long-read bench's readers count what the protocol's own
// encoder wrote, keep the reader in step for the next reply, and return
// an error reply as an error.
func TestSkim(t *testing.T) {
	var keys []resp.Reply
	for i := range 1000 {
		keys = append(keys, resp.BulkString("key:"+strconv.Itoa(i)))
	}
	var wire []byte
	wire = resp.ArrayReply(keys...).Append(wire)
	wire = resp.ArrayReply(resp.BulkString("1234"), resp.ArrayReply(keys[:7]...)).Append(wire)
	wire = resp.ArrayReply().Append(wire)
	wire = resp.Err("ERR nope").Append(wire)
	wire = resp.ArrayReply(resp.BulkString("0"), resp.ArrayReply()).Append(wire)
	rd := bufio.NewReaderSize(bytes.NewReader(wire), 64) // smaller than the reply

	if n, err := skimArray(rd); n != 1000 || err != nil {
		t.Fatalf("KEYS reply: %d, %v; want 1000", n, err)
	}
	if c, n, err := skimScan(rd); c != "1234" || n != 7 || err != nil {
		t.Fatalf("SCAN reply: %q %d %v; want 1234 7", c, n, err)
	}
	if n, err := skimArray(rd); n != 0 || err != nil {
		t.Fatalf("empty reply: %d, %v", n, err)
	}
	if _, err := skimArray(rd); err == nil || err.Error() != "ERR nope" {
		t.Fatalf("error reply: %v", err)
	}
	if c, n, err := skimScan(rd); c != "0" || n != 0 || err != nil {
		t.Fatalf("last SCAN reply: %q %d %v", c, n, err)
	}
	if rd.Buffered() != 0 {
		t.Fatalf("%d bytes left", rd.Buffered())
	}
}
