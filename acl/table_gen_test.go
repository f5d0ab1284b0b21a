package acl

import (
	"bufio"
	"flag"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/resp"
)

var update = flag.Bool("update", false, "rewrite redis_commands.txt from the redis-server on $PATH")

// TestTableMatchesRedis compares the embedded command table with COMMAND
// INFO of a real redis-server 7.0; with -update it rewrites the file.
func TestTableMatchesRedis(t *testing.T) {
	addr := testredis.Start(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*2\r\n$7\r\nCOMMAND\r\n$4\r\nINFO\r\n")); err != nil {
		t.Fatal(err)
	}
	r, err := resp.ReadReply(bufio.NewReader(c), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, cmd := range r.Elems {
		lines = append(lines, tableLines(t, cmd)...)
	}
	slices.Sort(lines)
	text := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile("redis_commands.txt", []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if text != redisTable {
		t.Fatal("redis_commands.txt differs from redis-server's COMMAND INFO; run go test ./acl -run TestTableMatchesRedis -update")
	}
}

func tableLines(t *testing.T, cmd resp.Reply) []string {
	e := cmd.Elems
	name := strings.ToLower(string(e[0].Str))
	var flags, cats []string
	for _, f := range e[2].Elems {
		flags = append(flags, string(f.Str))
	}
	for _, f := range e[6].Elems {
		cats = append(cats, strings.TrimPrefix(string(f.Str), "@"))
	}
	var specs []string
	for _, ks := range e[8].Elems {
		specs = append(specs, encodeSpec(t, ks))
	}
	line := name + "\t" + strconv.FormatInt(e[1].Int, 10) + "\t" + strings.Join(flags, " ") + "\t" +
		strings.Join(cats, " ") + "\t" + strings.Join(specs, ";")
	out := []string{line}
	if len(e) > 9 {
		for _, sub := range e[9].Elems {
			out = append(out, tableLines(t, sub)...)
		}
	}
	return out
}

// field returns the value under key of a RESP2 map (a flat array).
func field(m resp.Reply, key string) resp.Reply {
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if string(m.Elems[i].Str) == key {
			return m.Elems[i+1]
		}
	}
	return resp.Reply{}
}

// encodeSpec writes a key spec as "FLAGS|begin|find", the server's
// command-table notation: begin is iN (index) or kWORD,FROM (keyword),
// find is rLAST,STEP,LIMIT (range) or nIDX,FIRST,STEP (keynum); u unknown.
func encodeSpec(t *testing.T, ks resp.Reply) string {
	var fl []string
	for _, f := range field(ks, "flags").Elems {
		fl = append(fl, string(f.Str))
	}
	// Redis lists RO/RW/OW/RM first; keep its order.
	out := strings.Join(fl, " ") + "|"
	bs := field(ks, "begin_search")
	spec := field(bs, "spec")
	switch string(field(bs, "type").Str) {
	case "index":
		out += "i" + strconv.FormatInt(field(spec, "index").Int, 10)
	case "keyword":
		out += "k" + string(field(spec, "keyword").Str) + "," + strconv.FormatInt(field(spec, "startfrom").Int, 10)
	default:
		out += "u"
	}
	out += "|"
	fk := field(ks, "find_keys")
	spec = field(fk, "spec")
	switch string(field(fk, "type").Str) {
	case "range":
		out += "r" + strconv.FormatInt(field(spec, "lastkey").Int, 10) + "," +
			strconv.FormatInt(field(spec, "keystep").Int, 10) + "," + strconv.FormatInt(field(spec, "limit").Int, 10)
	case "keynum":
		out += "n" + strconv.FormatInt(field(spec, "keynumidx").Int, 10) + "," +
			strconv.FormatInt(field(spec, "firstkey").Int, 10) + "," + strconv.FormatInt(field(spec, "keystep").Int, 10)
	default:
		out += "u"
	}
	return out
}
