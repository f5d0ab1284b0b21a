package fsm

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// OBJECT ENCODING against redis-server is testdata/transcripts/objects.txt;
// these are what a transcript cannot show: thresholds and encodings across
// a snapshot, COPY, and MEMORY USAGE's shape.

func encodingOf(t *testing.T, f *FSM, key string) string {
	t.Helper()
	r := ctRead(t, f, 1000, "OBJECT ENCODING "+key)
	if r.Type != resp.Bulk {
		t.Fatalf("OBJECT ENCODING %s: %s", key, ctFormat(r))
	}
	return string(r.Str)
}

func TestEncodingThresholdsReplicated(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	if got := f.Setting("hash-max-listpack-entries"); got != "512" {
		t.Errorf("hash-max-listpack-entries unset reads %q, want Redis 7.0's 512", got)
	}
	var plain bytes.Buffer
	if err := f.Snapshot(&plain); err != nil {
		t.Fatal(err)
	}
	if v := plain.Bytes()[len(snapshotMagic)]; v != 1 {
		t.Errorf("a snapshot with default thresholds is version %d, want 1", v)
	}
	for _, bad := range []string{"-1", "x", ""} {
		if r := f.Apply(1000, SetConfigCommand("hash-max-listpack-entries", bad)).Reply; !r.IsError() {
			t.Errorf("hash-max-listpack-entries %q accepted", bad)
		}
	}
	if r := f.Apply(1000, SetConfigCommand("hash-max-listpack-entries", "2")).Reply; r.IsError() {
		t.Fatal(r.String())
	}
	ctApply(t, f, 1000, "HSET h a 1 b 2")
	if e := encodingOf(t, f, "h"); e != "listpack" {
		t.Fatalf("2 fields under a limit of 2: %s", e)
	}
	ctApply(t, f, 1000, "HSET h c 3")
	ctApply(t, f, 1000, "HDEL h c b")
	if e := encodingOf(t, f, "h"); e != "hashtable" {
		t.Fatalf("converted once, then shrunk: %s, want hashtable (Redis never converts back)", e)
	}
	// COPY keeps the encoding, as Redis's hashTypeDup does.
	ctApply(t, f, 1000, "COPY h h2")
	if e := encodingOf(t, f, "h2"); e != "hashtable" {
		t.Errorf("COPY of a hashtable: %s", e)
	}
	ctApply(t, f, 1000, "SET s abc")
	ctApply(t, f, 1000, "APPEND s d")
	ctApply(t, f, 1000, "COPY s s2")
	if e := encodingOf(t, f, "s2"); e != "raw" {
		t.Errorf("COPY of a raw string: %s", e)
	}

	// A restored state has the threshold, and decides encodings as Redis
	// loading an RDB file does: by the value (h, one field, is small
	// again; so is the string).
	var buf bytes.Buffer
	if err := f.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	g := New(Options{})
	defer g.Close()
	if err := g.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if got := g.Setting("hash-max-listpack-entries"); got != "2" {
		t.Errorf("restored threshold %q", got)
	}
	if e := encodingOf(t, g, "h"); e != "listpack" {
		t.Errorf("restored 1-field hash: %s, want listpack", e)
	}
	if e := encodingOf(t, g, "s"); e != "embstr" {
		t.Errorf("restored short string: %s, want embstr", e)
	}
	ctApply(t, g, 1000, "HSET big a 1 b 2 c 3")
	if e := encodingOf(t, g, "big"); e != "hashtable" {
		t.Errorf("3 fields over the restored limit of 2: %s", e)
	}
	var again bytes.Buffer
	if err := g.Snapshot(&again); err != nil {
		t.Fatal(err)
	}
	k := New(Options{})
	defer k.Close()
	if err := k.Restore(&again); err != nil {
		t.Fatal(err)
	}
	if e := encodingOf(t, k, "big"); e != "hashtable" {
		t.Errorf("restored 3-field hash over a limit of 2: %s", e)
	}
}

func memUsage(t *testing.T, f *FSM, args string) resp.Reply {
	t.Helper()
	return f.Read(1000, Command{Args: append([][]byte{[]byte(MemoryUsageCommand)}, ctSplit(args)...)}).Reply
}

// MEMORY USAGE is an estimate: an integer for a key, nil for a missing
// one, growing with the value, the same for the same value.
func TestMemoryUsageShape(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	if r := memUsage(t, f, "nosuch"); r.Type != resp.Nil {
		t.Errorf("missing key: %s", ctFormat(r))
	}
	kinds := map[string]func(n int) []string{
		"string": func(n int) []string { return []string{"SET k " + strings.Repeat("x", n)} },
		"hash": func(n int) []string {
			var c []string
			for i := range n {
				c = append(c, "HSET k f"+strconv.Itoa(i)+" v")
			}
			return c
		},
		"list": func(n int) []string {
			var c []string
			for i := range n {
				c = append(c, "RPUSH k element"+strconv.Itoa(i))
			}
			return c
		},
		"set": func(n int) []string {
			var c []string
			for i := range n {
				c = append(c, "SADD k "+strconv.Itoa(i*1000))
			}
			return c
		},
		"zset": func(n int) []string {
			var c []string
			for i := range n {
				c = append(c, "ZADD k "+strconv.Itoa(i)+" m"+strconv.Itoa(i))
			}
			return c
		},
	}
	for kind, build := range kinds {
		prev := int64(0)
		// Sizes that cross every encoding's threshold and a quicklist node.
		for _, n := range []int{1, 30, 300, 3000} {
			ctApply(t, f, 1000, "DEL k")
			for _, c := range build(n) {
				if r := ctApply(t, f, 1000, c); r.IsError() {
					t.Fatalf("%s: %s", c, r.String())
				}
			}
			r := memUsage(t, f, "k")
			if r.Type != resp.Int {
				t.Fatalf("%s of %d: %s", kind, n, ctFormat(r))
			}
			if r.Int <= prev {
				t.Errorf("%s of %d elements: %d, not more than %d for fewer", kind, n, r.Int, prev)
			}
			// Redis's order of magnitude: at least a few bytes per
			// element, and not kilobytes per element.
			if r.Int < int64(n) || r.Int > int64(n)*200+200 {
				t.Errorf("%s of %d elements: %d bytes", kind, n, r.Int)
			}
			if all := memUsage(t, f, "k SAMPLES 0"); all.Type != resp.Int || all.Int < int64(n) {
				t.Errorf("%s of %d, SAMPLES 0: %s", kind, n, ctFormat(all))
			}
			if again := memUsage(t, f, "k"); again.Int != r.Int {
				t.Errorf("%s of %d: %d then %d", kind, n, r.Int, again.Int)
			}
			prev = r.Int
		}
	}
	// Known values where the estimate is exact (redis-server 7.0.15 on
	// jemalloc answers these numbers).
	for _, c := range []struct {
		setup string
		want  int64
	}{
		{"SET i 1", 48},
		{"SET m2 abc", 64},
		{"SET e43 1234567890123456789012345678901234567890123", 96},
		{"SET r 123456789012345678901234567890123456789012345", 112},
		{"HSET hsm f v", 64},
		{"RPUSH l a", 144},
		{"ZADD zsm 1.5 a 2 b", 80},
	} {
		ctApply(t, f, 1000, c.setup)
		key := ctSplit(c.setup)[1]
		if r := memUsage(t, f, string(key)); r.Int != c.want {
			t.Errorf("%s: MEMORY USAGE %d, Redis says %d", c.setup, r.Int, c.want)
		}
	}
	for _, bad := range []string{"k SAMPLES -1", "k SAMPLES", "k FOO"} {
		if r := memUsage(t, f, bad); r.String() != msgSyntax {
			t.Errorf("%s: %s", bad, ctFormat(r))
		}
	}
}

func TestJemallocSize(t *testing.T) {
	for n, want := range map[int64]int64{1: 8, 8: 8, 9: 16, 17: 32, 128: 128, 129: 160, 160: 160, 161: 192, 513: 640, 8193: 10240} {
		if got := jemallocSize(n); got != want {
			t.Errorf("jemallocSize(%d) = %d, want %d", n, got, want)
		}
	}
}
