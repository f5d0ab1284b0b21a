package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A command whose handler panics, to check that a panic reached through
// a client's input is contained. Its name has a dot, like the commands
// between nodes, so COMMAND does not list it.
func init() {
	registerConn(connSpec{name: "test.panic", arity: -1, fn: func(c *conn, args [][]byte) {
		var m map[string]int
		m[string(args[0])]++ // assignment to a nil map
	}})
}

func TestUnknownCommandAndArity(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.mustErr("ERR unknown command 'bogus', with args beginning with: 'a' 'b c' ", "bogus", "a", "b c")
	c.mustErr("ERR unknown command 'NoSuch', with args beginning with: ", "NoSuch")
	c.mustErr("ERR unknown command '"+strings.Repeat("x", 128)+"', with args beginning with: ", strings.Repeat("x", 200))
	c.mustErr("ERR wrong number of arguments for 'get' command", "GET")
	c.mustErr("ERR wrong number of arguments for 'client' command", "client")
	c.mustErr("ERR wrong number of arguments for 'client|setname' command", "client", "setname")
	c.mustErr("ERR unknown subcommand 'bogus'. Try CLIENT HELP.", "client", "bogus")
	c.mustErr("ERR wrong number of arguments for 'ping' command", "ping", "a", "b")
	// Internal commands of the state machine are unknown to clients.
	c.mustErr("ERR unknown command '__reap', with args beginning with: '1' ", "__reap", "1")
	c.must(status("PONG"), "PING")
}

func TestAuth(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.RequirePass = "sekret" })
	c := dial(t, s.addr)
	// Redis 7.0 checks the command and its arity before authentication.
	c.mustErr("ERR unknown command 'bogus', with args beginning with: 'x' ", "bogus", "x")
	c.mustErr("ERR wrong number of arguments for 'get' command", "get")
	c.mustErr("NOAUTH Authentication required.", "get", "a")
	c.mustErr("NOAUTH Authentication required.", "ping")
	c.mustErr("NOAUTH Authentication required.", "client", "id")
	c.mustErr("WRONGPASS invalid username-password pair or user is disabled.", "auth", "nope")
	c.mustErr("WRONGPASS invalid username-password pair or user is disabled.", "auth", "default", "nope")
	c.mustErr("WRONGPASS invalid username-password pair or user is disabled.", "auth", "alice", "sekret")
	c.mustErr("ERR syntax error", "auth", "a", "b", "c")
	c.mustErr("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time", "hello", "2")
	c.must(okReply, "auth", "sekret")
	c.must(nilReply, "get", "a")

	c2 := dial(t, s.addr)
	r := c2.do("hello", "2", "auth", "default", "sekret")
	if len(r.Elems) != 14 {
		t.Fatalf("HELLO AUTH: %v", r)
	}
	c2.must(status("PONG"), "ping")

	// Before AUTH, Redis's tighter request limits apply.
	c3 := dial(t, s.addr)
	c3.write("*11\r\n")
	if got := c3.readRaw(); got != "-ERR Protocol error: invalid multibulk length\r\n" {
		t.Errorf("unauthenticated 11 arguments: %q", got)
	}
	c3.expectClosed()

	// go-redis authenticates with AUTH (after HELLO 3 fails).
	rc := goRedis(t, s.addr, func(o *redis.Options) { o.Password = "sekret" })
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("go-redis with password: %v", err)
	}
	bad := goRedis(t, s.addr, func(o *redis.Options) { o.Password = "wrong" })
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("go-redis with a wrong password: %v", err)
	}
}

func TestAuthWithoutPassword(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.mustErr("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "auth", "x")
	c.must(okReply, "auth", "default", "anything")
}

func TestConfigSetRequirePass(t *testing.T) {
	s := newTestServer(t)
	old := dial(t, s.addr)
	old.must(okReply, "config", "set", "requirepass", "pw")
	old.must(status("PONG"), "ping") // already authenticated
	c := dial(t, s.addr)
	c.mustErr("NOAUTH Authentication required.", "ping")
	c.must(okReply, "auth", "pw")
	c.must(bulks("requirepass", "pw"), "config", "get", "requirepass")
	c.must(okReply, "config", "set", "requirepass", "")
	dial(t, s.addr).must(status("PONG"), "ping")
}

func TestProtocolErrors(t *testing.T) {
	s := newTestServer(t)
	other := dial(t, s.addr)
	other.must(status("PONG"), "ping")
	for _, tc := range []struct{ name, in, want string }{
		{"multibulk length", "*abc\r\n", "invalid multibulk length"},
		{"negative multibulk", "*-5x\r\n", "invalid multibulk length"},
		{"huge multibulk", "*3000000000\r\n", "invalid multibulk length"},
		{"expected dollar", "*1\r\nfoo\r\n", "expected '$', got 'f'"},
		{"bulk length", "*1\r\n$x\r\n", "invalid bulk length"},
		{"negative bulk", "*1\r\n$-1\r\n", "invalid bulk length"},
		{"huge bulk", "*1\r\n$600000000\r\n", "invalid bulk length"},
		{"unbalanced double", "set a \"b c\r\n", "unbalanced quotes in request"},
		{"unbalanced single", "set a 'b'c\r\n", "unbalanced quotes in request"},
		{"big inline", strings.Repeat("a", 70000), "too big inline request"},
		{"big mbulk count", "*" + strings.Repeat("1", 70000), "too big mbulk count string"},
		{"big bulk count", "*1\r\n$" + strings.Repeat("1", 70000), "too big bulk count string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s.addr)
			c.must(status("PONG"), "ping")
			c.write(tc.in)
			want := "-ERR Protocol error: " + tc.want + "\r\n"
			if got := c.readRaw(); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
			if rest := c.expectClosed(); rest != "" {
				t.Errorf("after the error: %q", rest)
			}
		})
	}
	// Everyone else is still served.
	other.must(status("PONG"), "ping")
	dial(t, s.addr).must(status("PONG"), "ping")
}

func TestInlineCommands(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.write("PING\r\n")
	if got := c.readRaw(); got != "+PONG\r\n" {
		t.Fatalf("inline PING: %q", got)
	}
	c.write("\r\n\n   \r\n") // blank lines are skipped
	c.write("set a \"b c\"\r\n")
	if got := c.readRaw(); got != okReply {
		t.Fatalf("inline SET: %q", got)
	}
	c.must(bulk("b c"), "get", "a")
	c.write("set b 'it\\'s' \r\nset c \"\\x41\\n\"\nget b\r\nget c\r\n")
	for _, want := range []string{okReply, okReply, bulk("it's"), bulk("A\n")} {
		if got := c.readRaw(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	c.write("echo \"\"\r\n")
	if got := c.readRaw(); got != bulk("") {
		t.Errorf("inline empty argument: %q", got)
	}
}

func TestQuit(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.send("set", "k", "v")
	c.send("quit")
	c.send("get", "k") // never answered
	if got := c.readRaw(); got != okReply {
		t.Fatalf("SET: %q", got)
	}
	if rest := c.expectClosed(); rest != okReply {
		t.Fatalf("QUIT: %q", rest)
	}
	waitFor(t, "the connection to go", func() bool { return len(s.clients()) == 0 })
}

func TestHello(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	id := c.do("client", "id").Int
	want := arr(bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15"), bulk("proto"), integer(2),
		bulk("id"), integer(id), bulk("mode"), bulk("standalone"), bulk("role"), bulk("master"), bulk("modules"), arr())
	c.must(want, "hello")
	c.must(want, "hello", "2")
	c.mustErr("NOPROTO unsupported protocol version", "hello", "4")
	c.mustErr("NOPROTO unsupported protocol version", "hello", "1")
	c.mustErr("ERR Protocol version is not an integer or out of range", "hello", "x")
	c.mustErr("ERR Syntax error in HELLO option 'bogus'", "hello", "2", "bogus")
	c.mustErr("ERR Client names cannot contain spaces, newlines or special characters.", "hello", "2", "setname", "a b")
	c.must(want, "hello", "2", "setname", "named")
	c.must(bulk("named"), "client", "getname")

	// HELLO 3 switches the connection to RESP3, HELLO 2 and RESET back.
	want3 := strings.Replace(strings.Replace(want, "*14", "%7", 1), ":2", ":3", 1)
	c.must(want3, "hello", "3")
	c.must(want3, "hello")
	c.must("_\r\n", "get", "nosuch")
	c.must("%0\r\n", "hgetall", "nosuch")
	if line := c.do("client", "info").String(); !strings.Contains(line, " resp=3 ") {
		t.Errorf("CLIENT INFO after HELLO 3: %q", line)
	}
	c.must(want, "hello", "2")
	c.must("$-1\r\n", "get", "nosuch")
	c.must(want3, "hello", "3")
	c.must("+RESET\r\n", "reset")
	c.must("$-1\r\n", "get", "nosuch")

	// go-redis v9 starts with HELLO 3, and stays on RESP3.
	rc := goRedis(t, s.addr)
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("go-redis: %v", err)
	}
	if v, err := rc.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("go-redis GET: %q %v", v, err)
	}
	// It also sent CLIENT SETINFO, and parses CLIENT INFO's line.
	info, err := rc.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatalf("go-redis CLIENT INFO: %v", err)
	}
	if !strings.HasPrefix(info.LibName, "go-redis") || info.LibVer == "" || info.ID <= 0 || info.LastCmd != "client|info" || info.Resp != 3 {
		t.Errorf("go-redis CLIENT INFO: %+v", info)
	}
}

func TestMaxClients(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MaxClients = 2 })
	a, b := dial(t, s.addr), dial(t, s.addr)
	a.must(status("PONG"), "ping")
	b.must(status("PONG"), "ping")
	third := dial(t, s.addr)
	if got := third.expectClosed(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third client: %q", got)
	}
	if v, _ := infoField(a.do("info", "stats").String(), "rejected_connections"); v != "1" {
		t.Errorf("rejected_connections:%s", v)
	}
	b.nc.Close()
	waitFor(t, "a free slot", func() bool { return len(s.clients()) < 2 })
	dial(t, s.addr).must(status("PONG"), "ping")
	// CONFIG SET maxclients applies to the next connection.
	a.must(okReply, "config", "set", "maxclients", "1")
	if got := dial(t, s.addr).expectClosed(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("after CONFIG SET maxclients 1: %q", got)
	}
}

func TestPipelinedBurst(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	const n = 10000
	var req strings.Builder
	for i := range n {
		if i%2 == 0 {
			req.WriteString(encode("INCR", "counter"))
		} else {
			req.WriteString(encode("ECHO", strconv.Itoa(i)))
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.nc.Write([]byte(req.String()))
		errc <- err
	}()
	for i := range n {
		want := bulk(strconv.Itoa(i))
		if i%2 == 0 {
			want = integer(int64(i/2 + 1))
		}
		if got := c.readRaw(); got != want {
			t.Fatalf("reply %d: got %q, want %q", i, got, want)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	// The same through go-redis's pipeline.
	rc := goRedis(t, s.addr)
	pipe := rc.Pipeline()
	cmds := make([]*redis.IntCmd, 1000)
	for i := range cmds {
		cmds[i] = pipe.Incr(ctx, "gr")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if cmd.Val() != int64(i+1) {
			t.Fatalf("pipelined INCR %d = %d", i, cmd.Val())
		}
	}
}

func TestPanicIsContained(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	other := dial(t, s.addr)
	c.mustErr("ERR internal error", "test.panic")
	c.must(status("PONG"), "ping")
	other.must(status("PONG"), "ping")
	if v, _ := infoField(c.do("info", "errorstats").String(), "errorstat_ERR"); v != "count=1" {
		t.Errorf("errorstat_ERR:%s", v)
	}
}

func TestConcurrentClients(t *testing.T) {
	s := newTestServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := goRedis(t, s.addr)
			for i := range 200 {
				key := fmt.Sprintf("k%d", g)
				if err := rc.Incr(ctx, key).Err(); err != nil {
					errs <- err
					return
				}
				if i%50 == 0 {
					if err := rc.ClientList(ctx).Err(); err != nil {
						errs <- err
						return
					}
					if err := rc.Info(ctx).Err(); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rc := goRedis(t, s.addr)
	for g := range 20 {
		if n, err := rc.Get(ctx, fmt.Sprintf("k%d", g)).Int(); err != nil || n != 200 {
			t.Errorf("k%d = %d, %v", g, n, err)
		}
	}
}

func TestServerCloseEndsBlockedCommands(t *testing.T) {
	s := newTestServer(t, withDebug)
	c := dial(t, s.addr)
	c.send("debug", "sleep", "60")
	time.Sleep(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for DEBUG SLEEP")
	}
}
