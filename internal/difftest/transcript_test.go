package difftest

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTranscriptsParse(t *testing.T) {
	src := strings.Join([]string{
		"# a comment",
		"",
		"> SET foo bar",
		`>sorted,conn2 SADD "a b" 'c\'d' "\x00\xff\n" ""`,
		"  >ttl PTTL k",
		">ttl=3,skip=id,skip=version HELLO 2",
		"<conn2",
		"@define lua",
		"-- a comment",
		"  return 1",
		"@end",
		"> EVAL ${lua} 0",
		"> EVALSHA ${sha1:lua} 0",
		"> ECHO x${lua}",
		"@waitgone k1 k2",
		">anyerr,shape,any,sortedpairs X",
		`>raw,conn3 "PING\r\n"`,
	}, "\n")
	tr, err := Parse("t.txt", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	lua := "-- a comment\n  return 1"
	sum := sha1.Sum([]byte(lua))
	none := Options{Conn: 1, Tolerance: -1}
	want := []Step{
		{Line: 3, Text: "> SET foo bar", Kind: Send, Args: args("SET", "foo", "bar"), Opts: none},
		{Line: 4, Kind: Send, Args: args("SADD", "a b", "c'd", "\x00\xff\n", ""), Opts: Options{Conn: 2, Tolerance: -1, Sorted: true}},
		{Line: 5, Text: ">ttl PTTL k", Kind: Send, Args: args("PTTL", "k"), Opts: Options{Conn: 1, Tolerance: defaultTolerance}},
		{Line: 6, Kind: Send, Args: args("HELLO", "2"), Opts: Options{Conn: 1, Tolerance: 3, Skip: []string{"id", "version"}}},
		{Line: 7, Text: "<conn2", Kind: Recv, Opts: Options{Conn: 2, Tolerance: -1}},
		{Line: 12, Kind: Send, Args: args("EVAL", lua, "0"), Opts: none},
		{Line: 13, Kind: Send, Args: args("EVALSHA", hex.EncodeToString(sum[:]), "0"), Opts: none},
		{Line: 14, Kind: Send, Args: args("ECHO", "x${lua}"), Opts: none},
		{Line: 15, Text: "@waitgone k1 k2", Kind: WaitGone, Args: args("k1", "k2"), Opts: none},
		{Line: 16, Kind: Send, Args: args("X"), Opts: Options{Conn: 1, Tolerance: -1, AnyErr: true, Shape: true, Any: true, SortedPairs: true}},
		{Line: 17, Kind: Send, Args: args("PING\r\n"), Opts: Options{Conn: 3, Tolerance: -1, Raw: true}},
	}
	if len(tr.Steps) != len(want) {
		t.Fatalf("got %d steps, want %d: %+v", len(tr.Steps), len(want), tr.Steps)
	}
	for i, w := range want {
		g := tr.Steps[i]
		if w.Text == "" {
			g.Text = ""
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("step %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestTranscriptsParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"SET foo bar", "t.txt:1: a line must start with"},
		{"> SET \"foo", "t.txt:1: unbalanced quotes"},
		{"# x\n>", "t.txt:2: > without a command"},
		{">bogus GET k", `t.txt:1: unknown option "bogus"`},
		{">ttl=-1 PTTL k", "t.txt:1: ttl=-1"},
		{">sorted=0 SCAN 0", "t.txt:1: sorted=0"},
		{">conn0 PING", "t.txt:1: conn0"},
		{">conn10 PING", "t.txt:1: conn10"},
		{">sorted,sortedpairs X", "t.txt:1: sorted and sortedpairs"},
		{"<conn2 PING", "t.txt:1: < takes options only"},
		{">raw PING x", "t.txt:1: raw takes one"},
		{"@define x\nreturn 1", "t.txt:1: @define x has no @end"},
		{"@define x\n@end\n@define x\n@end", "t.txt:3: x defined twice"},
		{"@define a b", "t.txt:1: want @define NAME"},
		{"@end", "t.txt:1: @end without @define"},
		{"@waitgone", "t.txt:1: want @waitgone KEY"},
		{"@sleep 1", "t.txt:1: unknown directive @sleep"},
		{">skip=id conn8 HELLO 2", "t.txt:1: conn8 is an option: separate options with commas"},
		{"\n\n> EVAL ${nope} 0", "t.txt:3: ${nope} is not defined"},
	} {
		_, err := Parse("t.txt", strings.NewReader(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error starting %q", tc.src, err, tc.want)
		}
	}
}

// TestTranscriptsParseFiles checks that every transcript file parses,
// without starting any server, so that a broken file is reported even
// where redis-server is missing.
func TestTranscriptsParseFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(transcriptDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		tr, err := ParseFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(tr.Steps) == 0 {
			t.Errorf("%s: no steps", f)
		}
	}
}

func TestReadValue(t *testing.T) {
	for _, raw := range []string{
		"+OK\r\n",
		"-ERR x y\r\n",
		":-12\r\n",
		"$-1\r\n",
		"*-1\r\n",
		"$0\r\n\r\n",
		"$5\r\na\r\nbc\r\n",
		"*0\r\n",
		"*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n+x\r\n",
	} {
		v, err := readValue(bufio.NewReader(strings.NewReader(raw + "+next\r\n")))
		if err != nil {
			t.Errorf("%q: %v", raw, err)
			continue
		}
		if string(v.Raw) != raw {
			t.Errorf("%q: Raw = %q", raw, v.Raw)
		}
		if enc := v.encode(nil); string(enc) != raw {
			t.Errorf("%q: encode = %q", raw, enc)
		}
	}
	for _, raw := range []string{"", "?x\r\n", ":x\r\n", "$3\r\nab", "$2\r\nabcd", "*2\r\n:1\r\n", "+OK\n"} {
		if _, err := readValue(bufio.NewReader(strings.NewReader(raw))); err == nil {
			t.Errorf("%q: no error", raw)
		}
	}
}

func TestEqual(t *testing.T) {
	val := func(raw string) Value {
		t.Helper()
		v, err := readValue(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		return v
	}
	opt := func(s string) Options {
		t.Helper()
		o, err := parseOptions(s)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		a, b, opts string
		want       bool
	}{
		{"+OK\r\n", "+OK\r\n", "", true},
		{"+OK\r\n", "$2\r\nOK\r\n", "", false},
		{"$-1\r\n", "*-1\r\n", "", false},
		{"*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", "", false},
		{"*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", "sorted", true},
		{"*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\nc\r\n", "sorted", false},
		{"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n", "sortedpairs", true},
		{"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "*4\r\n$1\r\nb\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n2\r\n", "sortedpairs", false},
		{"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n", "sorted=2", true},
		{"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n", "sorted=2", false},
		{"*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", "sorted=3", false},
		{":1000\r\n", ":1400\r\n", "ttl", true},
		{":1000\r\n", ":1600\r\n", "ttl", false},
		{":10\r\n", ":9\r\n", "ttl=1", true},
		{":10\r\n", ":8\r\n", "ttl=1", false},
		{":-1\r\n", ":0\r\n", "ttl=5", false},
		{"*2\r\n:5\r\n$1\r\nx\r\n", "*2\r\n:7\r\n$1\r\nx\r\n", "ttl=2", true},
		{"*2\r\n:5\r\n$1\r\nx\r\n", "*2\r\n:7\r\n$1\r\ny\r\n", "ttl=2", false},
		{"-ERR a\r\n", "-ERR b\r\n", "anyerr", true},
		{"-ERR a\r\n", "+OK\r\n", "anyerr", false},
		{"*2\r\n$3\r\n123\r\n$1\r\n4\r\n", "*2\r\n$2\r\n99\r\n$4\r\n5678\r\n", "shape", true},
		{"*2\r\n$3\r\n123\r\n$1\r\n4\r\n", "*1\r\n$2\r\n99\r\n", "shape", false},
		{"+OK\r\n", "-ERR\r\n", "any", true},
		{"*4\r\n$2\r\nid\r\n:3\r\n$1\r\nx\r\n:1\r\n", "*4\r\n$2\r\nid\r\n:9\r\n$1\r\nx\r\n:1\r\n", "skip=id", true},
		{"*4\r\n$2\r\nid\r\n:3\r\n$1\r\nx\r\n:1\r\n", "*4\r\n$2\r\nid\r\n:9\r\n$1\r\nx\r\n:2\r\n", "skip=id", false},
	} {
		if got := Equal(val(tc.a), val(tc.b), opt(tc.opts)); got != tc.want {
			t.Errorf("Equal(%q, %q, %q) = %v, want %v", tc.a, tc.b, tc.opts, got, tc.want)
		}
	}
}

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}
