package acl

import (
	"bufio"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/resp"
)

// redisConn is a minimal RESP2 client for the differential tests.
type redisConn struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialRedis(t *testing.T) *redisConn {
	addr := testredis.Start(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &redisConn{t: t, c: c, rd: bufio.NewReader(c)}
}

func (r *redisConn) do(args ...string) resp.Reply {
	var b []byte
	b = append(b, '*')
	b = append(b, []byte(itoa(len(args)))...)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = append(b, []byte(itoa(len(a)))...)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatal(err)
	}
	rep, err := resp.ReadReply(r.rd, 1<<20)
	if err != nil {
		r.t.Fatal(err)
	}
	return rep
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// TestDescribeMatchesRedis applies the same ACL SETUSER rules here and to
// redis-server 7.0 and compares ACL LIST, ACL GETUSER's command rules and
// the error texts.
func TestDescribeMatchesRedis(t *testing.T) {
	r := dialRedis(t)
	cases := [][]string{
		{},
		{"on", ">secret", "~lock:*", "&redisson_lock__channel:*", "+@all", "-@dangerous"},
		{"on", "nopass", "~*", "-@all", "+@read"},
		{"-@all", "+@read", "+@write", "-@admin"},
		{"+@all", "-@admin", "-@dangerous"},
		{"-@all", "+get"},
		{"-@all", "+@string", "-set"},
		{"-@all", "+config|get"},
		{"-@all", "+select|0"},
		{"+@all", "-config|set"},
		{"%R~read:*", "%W~write:*", "%RW~both:*", "~lock:*", "-@all", "+@scripting", "+@read"},
		{"allkeys", "allchannels", "allcommands"},
		{"reset", "on", "#" + strings.Repeat("a", 64), "-@all", "+@pubsub", "&chan"},
		{"-@all", "+@hash", "+@set", "+@list", "+@sortedset"},
		{"-@all", "+@fast"},
		{"+@all", "-@slow"},
		{"-@all", "+@keyspace", "-@dangerous"},
		{"-@all", "+@connection"},
		{"-@all", "+@transaction", "+@scripting"},
		{"on", "(~sel:* +get)", "(%R~ro:* +@read)", "-@all", "+ping"},
		{"sanitize-payload"},
		{"skip-sanitize-payload", "+@all", "-flushall", "-flushdb"},
	}
	for i, rules := range cases {
		name := "u" + itoa(i)
		args := append([]string{"ACL", "SETUSER", name}, rules...)
		want := r.do(args...)
		_, _, err := NewUsers().SetUser(name, rules)
		if want.IsError() != (err != nil) {
			t.Fatalf("%v: redis %q, here %v", rules, want.Str, err)
		}
		if err != nil {
			continue
		}
		tbl, _, _ := NewUsers().SetUser(name, rules)
		line := r.do("ACL", "LIST")
		var wantLine string
		for _, e := range line.Elems {
			if strings.HasPrefix(string(e.Str), "user "+name+" ") {
				wantLine = string(e.Str)
			}
		}
		got := "user " + name + " " + tbl.Get(name).Describe()
		if normalize(got) != normalize(wantLine) {
			t.Errorf("%v:\nredis %s\nhere  %s", rules, wantLine, got)
		}
	}
}

func TestErrorsMatchRedis(t *testing.T) {
	r := dialRedis(t)
	cases := [][]string{
		{"+nosuchcommand"},
		{"+@nosuchcategory"},
		{"~*", "~foo"},
		{"&*", "&foo"},
		{"<notthere"},
		{"#abc"},
		{"+config|get|x"},
		{"+client|list|x"},
		{"(~x +get"},
		{"-select|0"},
		{"bogus"},
		{"%X~foo"},
		{"(~x bogus)"},
		{"+get|"},
	}
	for _, rules := range cases {
		args := append([]string{"ACL", "SETUSER", "e"}, rules...)
		want := r.do(args...)
		_, _, err := NewUsers().SetUser("e", rules)
		got := "OK"
		if err != nil {
			got = "ERR " + err.Error()
		}
		if string(want.Str) != got {
			t.Errorf("%v:\nredis %s\nhere  %s", rules, want.Str, got)
		}
	}
}

// normalize sorts the single-command rules of a description: Redis emits
// them in its command dictionary's hash order, which changes from run to
// run; the rest keeps its order.
func normalize(line string) string {
	var keep, single []string
	for _, tok := range strings.Fields(line) {
		if (tok[0] == '+' || tok[0] == '-') && !strings.HasPrefix(tok[1:], "@") {
			single = append(single, tok)
			continue
		}
		keep = append(keep, tok)
	}
	slices.Sort(single)
	return strings.Join(append(keep, single...), " ")
}
