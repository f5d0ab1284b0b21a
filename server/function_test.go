package server

import (
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/internal/testredis"
)

// FUNCTION DUMP payloads move between redis-server and deadbolt both ways:
// Redis compresses the code (LZF), deadbolt writes it plain, and each
// restores the other's.
func TestFunctionDumpRestoreWithRedis(t *testing.T) {
	ref := dial(t, testredis.Start(t))
	s := newTestServer(t)
	got := dial(t, s.addr)
	lib := "#!lua name=locks\n" +
		"-- a long enough body that Redis compresses it, repeated: repeated: repeated: repeated\n" +
		"redis.register_function('take', function(keys, args) return redis.call('set', keys[1], args[1], 'nx', 'px', 30000) end)\n" +
		"redis.register_function{function_name='holder', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='who holds it'}\n"
	ref.must("$5\r\nlocks\r\n", "function", "load", lib)
	payload := ref.do("function", "dump").String()
	got.must("+OK\r\n", "function", "restore", payload)
	got.must("+OK\r\n", "fcall", "take", "1", "l", "me")
	got.must("$2\r\nme\r\n", "fcall_ro", "holder", "1", "l")
	// Redis lists a library's functions in its hash order, deadbolt by
	// name: compare the libraries, not the order.
	have := got.doRaw("function", "list", "withcode")
	for _, part := range []string{"$5\r\nlocks\r\n", "$4\r\ntake\r\n", "$6\r\nholder\r\n", "$12\r\nwho holds it\r\n", "+no-writes\r\n", lib} {
		if !strings.Contains(have, part) {
			t.Errorf("FUNCTION LIST after RESTORE of Redis's DUMP lacks %q:\n%q", part, have)
		}
	}
	got.mustErr("ERR Library locks already exists", "function", "restore", payload)
	got.must("+OK\r\n", "function", "restore", payload, "replace")

	// And back: deadbolt's payload into a fresh redis-server.
	ref2 := dial(t, testredis.Start(t))
	ours := got.do("function", "dump").String()
	ref2.must("+OK\r\n", "function", "restore", ours)
	ref2.must("+OK\r\n", "fcall", "take", "1", "l", "them")
	ref2.must("$4\r\nthem\r\n", "fcall_ro", "holder", "1", "l")
	// A damaged payload is refused and changes nothing.
	bad := []byte(ours)
	bad[len(bad)/2] ^= 0x40
	got.mustErr("ERR DUMP payload version or checksum are wrong", "function", "restore", string(bad), "flush")
	if !strings.Contains(got.doRaw("function", "list"), "locks") {
		t.Error("a refused RESTORE changed the libraries")
	}
}
