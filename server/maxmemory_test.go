package server

import (
	"strconv"
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
)

// INFO memory shows maxmemory as Redis does and the logical size that
// maxmemory limits; the size is the keys' MEMORY USAGE, counted while
// there is a limit (0 without one), and a write is refused once it is
// over the limit.
func TestInfoMaxmemory(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	field := func(name string) string {
		t.Helper()
		v, ok := infoField(c.do("info", "memory").String(), name)
		if !ok {
			t.Fatalf("INFO memory has no %s", name)
		}
		return v
	}
	if got := field("used_memory_logical"); got != "0" {
		t.Fatalf("empty: used_memory_logical:%s", got)
	}
	c.must(okReply, "set", "lock:a", "owner-1")
	c.must(okReply, "set", "lock:b", "owner-2 with a longer value than forty-four bytes")
	var sum int64
	for _, k := range []string{"lock:a", "lock:b"} {
		sum += c.do("memory", "usage", k).Int
	}
	if got := field("used_memory_logical"); got != "0" {
		t.Fatalf("no maxmemory, not counted: used_memory_logical:%s", got)
	}
	c.must(okReply, "config", "set", "maxmemory", "1mb")
	if got, human := field("maxmemory"), field("maxmemory_human"); got != "1048576" || human != "1.00M" {
		t.Fatalf("maxmemory:%s maxmemory_human:%s", got, human)
	}
	if got := field("used_memory_logical"); got != strconv.FormatInt(sum, 10) {
		t.Fatalf("used_memory_logical:%s, the keys' MEMORY USAGE add up to %d", got, sum)
	}
	c.must(okReply, "config", "set", "maxmemory", "0")
	if got := field("used_memory_logical"); got != "0" {
		t.Fatalf("maxmemory back to 0: used_memory_logical:%s", got)
	}
	c.must(okReply, "config", "set", "maxmemory", "1mb")
	c.must(okReply, "config", "set", "maxmemory", strconv.FormatInt(sum, 10))
	c.must(okReply, "set", "c", "1") // not over before it: it goes, and puts the size over
	c.mustErr(fsm.OOMError, "set", "d", "1")
	c.must(integer(1), "del", "c")
	c.must(okReply, "set", "d", "1")
	if got := field("maxmemory_policy"); got != "noeviction" {
		t.Fatalf("maxmemory_policy:%s", got)
	}
}
