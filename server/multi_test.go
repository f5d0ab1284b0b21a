package server

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/resp"
)

func TestMultiExec(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "set", "a", "1")
	c.must(status("QUEUED"), "incr", "a")
	c.must(status("QUEUED"), "get", "a")
	c.must(status("QUEUED"), "ping")
	c.must(arr(okReply, integer(2), bulk("2"), status("PONG")), "exec")

	// SELECT inside MULTI changes the connection's database.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "select", "2")
	c.must(status("QUEUED"), "set", "in2", "x")
	c.must(arr(okReply, okReply), "exec")
	c.must(bulk("x"), "get", "in2")
	c.must(okReply, "select", "0")
	c.must(nilReply, "get", "in2")

	// WAITAOF is unknown inside MULTI, as in Redis 7.0, which has no
	// WAITAOF.
	c.must(okReply, "multi")
	c.mustErr("ERR unknown command 'waitaof', with args beginning with: '0' '0' '0' ", "waitaof", "0", "0", "0")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
	// DEBUG: 7.0's refusal while enable-debug-command forbids it (the
	// default), inside MULTI and outside it.
	c.must(okReply, "multi")
	c.mustErr(msgDebugNotAllowed, "debug", "sleep", "0")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
	c.mustErr(msgDebugNotAllowed, "debug", "sleep", "0")
	c.mustErr(msgDebugNotAllowed, "debug", "help")
}

// TestDebugAllowed: enable-debug-command yes runs DEBUG from anywhere,
// local only from 127.0.0.1 and ::1; inside MULTI it is refused either way.
func TestDebugAllowed(t *testing.T) {
	for _, mode := range []string{"yes", "local"} {
		s := newTestServer(t, func(c *Config) {
			c.ConfigParams = map[string]string{"enable-debug-command": mode}
		})
		c := dial(t, s.addr)
		c.must(okReply, "debug", "sleep", "0")
		c.must(okReply, "multi")
		c.mustErr("ERR 'debug' is not supported inside MULTI", "debug", "sleep", "0")
		c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
		c.must(arr(bulk("enable-debug-command"), bulk(mode)), "config", "get", "enable-debug-command")
	}
	// local, from an address other than 127.0.0.1: refused. The client
	// dials from 127.0.0.2 (protected mode off, which would refuse it).
	s := newTestServer(t, func(c *Config) {
		c.ConfigParams = map[string]string{"enable-debug-command": "local"}
	})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	nc, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &client{tb: t, nc: nc, rd: bufio.NewReader(nc)}
	c.mustErr(msgDebugNotAllowed, "debug", "sleep", "0")
}

// TestMultiAuth: AUTH is queued and runs inside EXEC; the connection
// commands after it are checked against the user it logged in, at their
// turn; no keyspace command, not even PING, may follow it, since the
// keyspace part runs first, under the user of the MULTI.
func TestMultiAuth(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(okReply, "acl", "setuser", "u", "on", ">p", "~*", "+get", "+multi", "+exec", "+client|getname")
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "auth", "u", "p")
	c.must(status("QUEUED"), "client", "getname")
	c.must(status("QUEUED"), "acl", "whoami")
	c.must(arr(okReply, nilReply, "-"+msgACLChanged+"no permission to execute the command or subcommand\r\n"), "exec")
	c.mustErr("NOPERM this user has no permissions to run the 'acl|whoami' command", "acl", "whoami")
	c.must(okReply, "auth", "default", "x")
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "get", "k")
	c.must(status("QUEUED"), "auth", "u", "p")
	c.mustErr("ERR 'ping' cannot follow 'auth' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands", "ping")
	c.mustErr("ERR 'get' cannot follow 'auth' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands", "get", "k")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
	c.must(bulk("default"), "acl", "whoami")
	// HELLO ... AUTH alike.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "hello", "2", "auth", "u", "p")
	c.mustErr("ERR 'ping' cannot follow 'hello' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands", "ping")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
}

// TestMultiConnectionCommands checks what the differential transcript
// cannot: the orders deadbolt refuses because it runs a transaction's
// connection commands after its keyspace part, and the connection state
// those commands see inside EXEC.
func TestMultiConnectionCommands(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)

	// A setting that changes what keyspace commands do may not be followed
	// by one; after the last one it is fine.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "config", "set", "notify-keyspace-events", "KEA")
	c.must(status("QUEUED"), "ping") // touches no key
	c.mustErr("ERR 'get' cannot follow 'config|set' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands", "get", "k")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
	c.must(arr(bulk("notify-keyspace-events"), bulk("")), "config", "get", "notify-keyspace-events")
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "set", "k", "1")
	c.must(status("QUEUED"), "config", "set", "notify-keyspace-events", "KEA")
	c.must(arr(okReply, okReply), "exec")
	c.must(arr(bulk("notify-keyspace-events"), bulk("AKE")), "config", "get", "notify-keyspace-events")
	// A setting kept by the server alone does not matter to keyspace commands.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "config", "set", "maxmemory-samples", "7")
	c.must(status("QUEUED"), "incr", "k")
	c.must(arr(okReply, integer(2)), "exec")
	c.must(okReply, "config", "set", "maxmemory-samples", "5")

	// What reads keyspace state may be followed by reads, not by writes.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "info", "keyspace")
	c.must(status("QUEUED"), "get", "k")
	c.mustErr("ERR 'set' cannot follow 'info' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands", "set", "k", "2")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "info", "server", "clients") // nothing a write changes
	c.must(status("QUEUED"), "set", "k", "2")
	if r := c.do("exec"); len(r.Elems) != 2 || !strings.Contains(string(r.Elems[0].Str), "redis_version:") {
		t.Fatalf("EXEC: %q", r)
	}
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "info", "keyspace")
	c.must(status("QUEUED"), "get", "k")
	r := c.do("exec")
	if len(r.Elems) != 2 || !strings.Contains(string(r.Elems[0].Str), "db0:keys=1,") || string(r.Elems[1].Str) != "2" {
		t.Fatalf("EXEC: %q", r)
	}

	// Inside EXEC a connection command sees the database the SELECTs
	// before it chose, and the transaction as CLIENT INFO shows it.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "select", "3")
	c.must(status("QUEUED"), "client", "info")
	c.must(status("QUEUED"), "select", "4")
	r = c.do("exec")
	if len(r.Elems) != 3 {
		t.Fatalf("EXEC: %q", r)
	}
	info := string(r.Elems[1].Str)
	for _, want := range []string{" db=3 ", " multi=3 ", " flags=x ", " cmd=exec "} {
		if !strings.Contains(info, want) {
			t.Errorf("CLIENT INFO inside EXEC %q lacks %q", info, want)
		}
	}
	// An error inside EXEC's array does not make EXEC fail (statistics).
	c.must(okReply, "config", "resetstat")
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "client", "setname", "a b")
	if r := c.do("exec"); len(r.Elems) != 1 || !r.Elems[0].IsError() {
		t.Fatalf("EXEC: %q", r)
	}
	execLine := ""
	for _, l := range strings.Split(c.do("info", "commandstats").String(), "\r\n") {
		if strings.HasPrefix(l, "cmdstat_exec:") {
			execLine = l
		}
	}
	if !strings.HasPrefix(execLine, "cmdstat_exec:calls=1,") || !strings.HasSuffix(execLine, ",failed_calls=0") {
		t.Errorf("EXEC with an error inside: %q, want 1 call, not failed", execLine)
	}
	info = c.do("client", "info").String()
	for _, want := range []string{" db=4 ", " multi=-1 ", " flags=N "} {
		if !strings.Contains(info, want) {
			t.Errorf("CLIENT INFO after EXEC %q lacks %q", info, want)
		}
	}
}

func TestMultiErrors(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.mustErr("ERR EXEC without MULTI", "exec")
	c.mustErr("ERR DISCARD without MULTI", "discard")
	c.must(okReply, "multi")
	c.mustErr("ERR MULTI calls can not be nested", "multi")
	c.must(okReply, "discard")

	// Empty transaction.
	c.must(okReply, "multi")
	c.must(arr(), "exec")

	// DISCARD drops the queue.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "set", "d", "1")
	c.must(okReply, "discard")
	c.must(nilReply, "get", "d")

	// A command that cannot be queued aborts EXEC.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "set", "e", "1")
	c.mustErr("ERR unknown command 'bogus', with args beginning with: ", "bogus")
	c.mustErr("ERR wrong number of arguments for 'get' command", "get")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
	c.must(nilReply, "get", "e")

	// An error at run time does not stop the others (Redis semantics).
	c.must(okReply, "set", "str", "x")
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "incr", "str")
	c.must(status("QUEUED"), "set", "f", "1")
	c.must(arr("-ERR value is not an integer or out of range\r\n", okReply), "exec")

	c.must(okReply, "multi")
	c.mustErr("ERR WATCH inside MULTI is not allowed", "watch", "x")
	c.must(okReply, "discard")

	// EXEC refused inside MULTI discards the transaction.
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "set", "g", "1")
	c.mustErr("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command", "exec", "extra")
	c.mustErr("ERR EXEC without MULTI", "exec")
	c.must(nilReply, "get", "g")
	c.mustErr("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command", "exec", "extra")
}

func TestWatch(t *testing.T) {
	s := newTestServer(t)
	a, b := dial(t, s.addr), dial(t, s.addr)

	// Another client changes the key: EXEC aborts with a nil array.
	a.must(okReply, "set", "k", "1")
	a.must(okReply, "watch", "k")
	b.must(okReply, "set", "k", "2")
	a.must(okReply, "multi")
	a.must(status("QUEUED"), "set", "k", "3")
	a.must("*-1\r\n", "exec")
	a.must(bulk("2"), "get", "k")

	// A key created and deleted again still counts as changed.
	a.must(okReply, "watch", "gone")
	b.must(okReply, "set", "gone", "x")
	b.must(integer(1), "del", "gone")
	a.must(okReply, "multi")
	a.must(status("QUEUED"), "set", "gone", "y")
	a.must("*-1\r\n", "exec")

	// Nobody touches it: EXEC runs. WATCH ends with EXEC.
	a.must(okReply, "watch", "k")
	a.must(okReply, "multi")
	a.must(status("QUEUED"), "incr", "k")
	a.must(arr(integer(3)), "exec")
	b.must(okReply, "set", "k", "10")
	a.must(okReply, "multi")
	a.must(status("QUEUED"), "incr", "k")
	a.must(arr(integer(11)), "exec")

	// UNWATCH forgets.
	a.must(okReply, "watch", "k")
	a.must(okReply, "unwatch")
	b.must(okReply, "set", "k", "20")
	a.must(okReply, "multi")
	a.must(status("QUEUED"), "incr", "k")
	a.must(arr(integer(21)), "exec")

	// DISCARD unwatches too.
	a.must(okReply, "watch", "k")
	a.must(okReply, "multi")
	a.must(okReply, "discard")
	b.must(okReply, "set", "k", "30")
	a.must(okReply, "multi")
	a.must(status("QUEUED"), "incr", "k")
	a.must(arr(integer(31)), "exec")
}

// TestWatchGoRedis runs the optimistic-locking loop go-redis documents.
func TestWatchGoRedis(t *testing.T) {
	s := newTestServer(t)
	rc := goRedis(t, s.addr)
	other := goRedis(t, s.addr)
	if err := rc.Set(ctx, "n", 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	incr := func(tx *redis.Tx) error {
		attempts++
		n, err := tx.Get(ctx, "n").Int()
		if err != nil {
			return err
		}
		if attempts == 1 {
			other.Incr(ctx, "n") // makes the first attempt fail
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "n", n+10, 0)
			return nil
		})
		return err
	}
	err := rc.Watch(ctx, incr, "n")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("first attempt: %v", err)
	}
	if err := rc.Watch(ctx, incr, "n"); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	if n, _ := rc.Get(ctx, "n").Int(); n != 11 {
		t.Fatalf("n = %d, want 11", n)
	}
}

// TestMultiSubscribe: SUBSCRIBE is queued (the transcripts check its
// replies against Redis); no keyspace command but PING, ECHO, SELECT, TIME
// and UNWATCH may follow it, since a message it published would reach the
// new subscription in the middle of EXEC's array in Redis.
func TestMultiSubscribe(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(okReply, "multi")
	c.must(status("QUEUED"), "set", "k", "v")
	c.must(status("QUEUED"), "subscribe", "ch")
	c.must(status("QUEUED"), "ping")
	c.mustErr("ERR 'publish' cannot follow 'subscribe' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands", "publish", "ch", "m")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
}

// TestExecHoldsMessages: a message for a subscription an EXEC made waits
// until EXEC's reply is queued, as Redis (single-threaded) writes it after.
func TestExecHoldsMessages(t *testing.T) {
	c := &conn{srv: &Server{}, proto: 2, kicked: true} // kicked: no writer goroutine
	c.holdMessages()
	c.push(&frame{r: pushReply(resp.BulkString("message"), resp.BulkString("ch"), resp.BulkString("m"))})
	c.replyEncoded([]byte("*1\r\n+OK\r\n"))
	msg := "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n"
	if got := string(c.out); got != "*1\r\n+OK\r\n"+msg {
		t.Fatalf("queued %q, want EXEC's reply, then the message", got)
	}
	c.push(&frame{r: pushReply(resp.BulkString("message"), resp.BulkString("ch"), resp.BulkString("m"))})
	if got := string(c.out); got != "*1\r\n+OK\r\n"+msg+msg {
		t.Fatalf("after EXEC a message waits: %q", got)
	}
}
