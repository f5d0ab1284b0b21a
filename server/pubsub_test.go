package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

func TestSubscribedMode(t *testing.T) {
	s := newTestServer(t)
	c := dial(t, s.addr)
	c.must(arr(bulk("unsubscribe"), nilReply, integer(0)), "unsubscribe")
	c.must(arr(bulk("subscribe"), bulk("a"), integer(1)), "subscribe", "a")
	c.mustErr("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", "get", "x")
	c.mustErr("ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", "client", "id")
	c.mustErr("ERR Can't execute 'multi': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", "multi")
	// Unknown commands and wrong arity are reported first, as Redis does.
	c.mustErr("ERR unknown command 'bogus', with args beginning with: ", "bogus")
	c.mustErr("ERR wrong number of arguments for 'ping' command", "ping", "a", "b")
	// PING in subscribed mode answers as a message (Redisson accepts it).
	c.must(arr(bulk("pong"), bulk("")), "ping")
	c.must(arr(bulk("pong"), bulk("hi")), "ping", "hi")

	// Several subscriptions at once; the count covers channels and
	// patterns, shard channels apart.
	c.send("subscribe", "b", "a")
	for _, want := range []string{arr(bulk("subscribe"), bulk("b"), integer(2)), arr(bulk("subscribe"), bulk("a"), integer(2))} {
		if got := c.readRaw(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	c.must(arr(bulk("psubscribe"), bulk("p*"), integer(3)), "psubscribe", "p*")
	c.must(arr(bulk("ssubscribe"), bulk("s"), integer(1)), "ssubscribe", "s")
	c.must(arr(bulk("sunsubscribe"), bulk("s"), integer(0)), "sunsubscribe")
	c.must(arr(bulk("punsubscribe"), bulk("p*"), integer(2)), "punsubscribe")
	c.send("unsubscribe")
	for _, want := range []string{arr(bulk("unsubscribe"), bulk("a"), integer(1)), arr(bulk("unsubscribe"), bulk("b"), integer(0))} {
		if got := c.readRaw(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	// Back to normal.
	c.must(nilReply, "get", "x")
	c.must(status("PONG"), "ping")

	// RESET leaves subscribed mode.
	c.must(arr(bulk("subscribe"), bulk("a"), integer(1)), "subscribe", "a")
	c.must(status("RESET"), "reset")
	c.must(status("PONG"), "ping")
}

func TestPublishDelivery(t *testing.T) {
	s := newTestServer(t)
	sub, psub, ssub, pub := dial(t, s.addr), dial(t, s.addr), dial(t, s.addr), dial(t, s.addr)
	sub.must(arr(bulk("subscribe"), bulk("news"), integer(1)), "subscribe", "news")
	psub.must(arr(bulk("psubscribe"), bulk("n*"), integer(1)), "psubscribe", "n*")
	ssub.must(arr(bulk("ssubscribe"), bulk("{lock}"), integer(1)), "ssubscribe", "{lock}")

	pub.must(integer(2), "publish", "news", "hello")
	if got := sub.readRaw(); got != arr(bulk("message"), bulk("news"), bulk("hello")) {
		t.Errorf("message: %q", got)
	}
	if got := psub.readRaw(); got != arr(bulk("pmessage"), bulk("n*"), bulk("news"), bulk("hello")) {
		t.Errorf("pmessage: %q", got)
	}
	pub.must(integer(0), "publish", "other", "x")
	// SPUBLISH reaches shard subscribers only.
	pub.must(integer(1), "spublish", "{lock}", "0")
	if got := ssub.readRaw(); got != arr(bulk("smessage"), bulk("{lock}"), bulk("0")) {
		t.Errorf("smessage: %q", got)
	}
	pub.must(integer(0), "publish", "{lock}", "0")

	// A message published inside MULTI is delivered at EXEC.
	pub.must(okReply, "multi")
	pub.must(status("QUEUED"), "publish", "news", "tx")
	pub.send("exec")
	if got := pub.readRaw(); !strings.HasPrefix(got, "*1\r\n:") {
		t.Errorf("EXEC: %q", got)
	}
	if got := sub.readRaw(); got != arr(bulk("message"), bulk("news"), bulk("tx")) {
		t.Errorf("message from EXEC: %q", got)
	}

	// PUBSUB introspection.
	pub.must(okReply, "set", "unrelated", "1")
	sub.must(arr(bulk("subscribe"), bulk("alpha"), integer(2)), "subscribe", "alpha")
	pub.must(bulks("alpha", "news"), "pubsub", "channels")
	pub.must(bulks("news"), "pubsub", "channels", "n*")
	pub.must(arr(bulk("news"), integer(1), bulk("nobody"), integer(0)), "pubsub", "numsub", "news", "nobody")
	pub.must(arr(), "pubsub", "numsub")
	pub.must(integer(1), "pubsub", "numpat")
	pub.must(bulks("{lock}"), "pubsub", "shardchannels")
	pub.must(arr(), "pubsub", "shardchannels", "x*")
	pub.must(arr(bulk("{lock}"), integer(1), bulk("0"), integer(0)), "pubsub", "shardnumsub", "{lock}", "0")
	pub.mustErr("ERR wrong number of arguments for 'pubsub|numpat' command", "pubsub", "numpat", "x")
	pub.mustErr("ERR unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP.", "pubsub", "channels", "a", "b")
	pub.mustErr("ERR unknown subcommand 'bogus'. Try PUBSUB HELP.", "pubsub", "bogus")

	// A subscriber that goes away is forgotten.
	sub.nc.Close()
	waitFor(t, "the subscriber to go", func() bool {
		return pub.doRaw("pubsub", "numsub", "news") == arr(bulk("news"), integer(0))
	})
	pub.must(integer(1), "publish", "news", "x") // the pattern subscriber
}

// TestSlowSubscriber checks that a subscriber that never reads is
// disconnected once its backlog passes the pub/sub output limit, and that
// publishers are not held up meanwhile.
func TestSlowSubscriber(t *testing.T) {
	const limit = 256 << 10
	s := newTestServer(t, func(c *Config) { c.PubSubOutputLimit = limit })
	slow := dial(t, s.addr)
	slow.must(arr(bulk("subscribe"), bulk("ch"), integer(1)), "subscribe", "ch")
	fast := dial(t, s.addr)
	fast.must(arr(bulk("subscribe"), bulk("ch"), integer(1)), "subscribe", "ch")

	pub := dial(t, s.addr)
	msg := strings.Repeat("x", 64<<10)
	frame := arr(bulk("message"), bulk("ch"), bulk(msg))
	// Up to 2000 × 64 KiB = 125 MiB: more than socket buffers hold, so
	// the slow subscriber's backlog passes the limit. The other subscriber
	// reads each message before the next is published.
	dropped, after := false, 0
	for i := 0; i < 2000 && after < 10; i++ {
		if dropped {
			after++
		}
		raw := pub.doRaw("publish", "ch", msg)
		r, _, _ := resp.Parse([]byte(raw))
		switch {
		case r.Type != resp.Int:
			t.Fatalf("publish %d: %q", i, raw)
		case r.Int == 1:
			dropped = true
		case r.Int != 2 || dropped:
			t.Fatalf("publish %d: %d receivers", i, r.Int)
		}
		if got := fast.readRaw(); got != frame {
			t.Fatalf("message %d: %.100q", i, got)
		}
	}
	if !dropped {
		t.Fatal("the slow subscriber was never dropped")
	}
	waitFor(t, "the slow subscriber to be dropped", func() bool {
		return pub.doRaw("pubsub", "numsub", "ch") == arr(bulk("ch"), integer(1))
	})
	// The slow subscriber's socket is closed after what was already sent.
	slow.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1<<20)
	for {
		if _, err := slow.rd.Read(buf); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatal("the slow subscriber's connection is still open")
			}
			break
		}
	}
	pub.must(status("PONG"), "ping")
}

// TestHubListened: the hub tells the state machine whether anyone is
// subscribed (fsm.Options.Listened), and the state machine records no
// message while no one is. Each kind of subscription alone must count, and
// every way of leaving must count down, or messages would be lost (a count
// stuck at zero) or copied for no one.
func TestHubListened(t *testing.T) {
	s := newTestServer(t)
	pub := dial(t, s.addr)
	listened := func(want bool) {
		t.Helper()
		if got := s.hub.Listened(); got != want {
			t.Fatalf("Listened() = %v, want %v (count %d)", got, want, s.hub.listening.Load())
		}
	}
	listened(false)
	pub.must(integer(0), "publish", "news", "x")

	for _, kind := range []struct{ sub, unsub, pub, channel, msg string }{
		{"subscribe", "unsubscribe", "publish", "news", "message"},
		{"psubscribe", "punsubscribe", "publish", "n*", "pmessage"},
		{"ssubscribe", "sunsubscribe", "spublish", "news", "smessage"},
	} {
		c := dial(t, s.addr)
		c.must(arr(bulk(kind.sub), bulk(kind.channel), integer(1)), kind.sub, kind.channel)
		c.must(arr(bulk(kind.sub), bulk(kind.channel), integer(1)), kind.sub, kind.channel) // again: one subscription
		listened(true)
		pub.must(integer(1), kind.pub, "news", "hi")
		want := arr(bulk(kind.msg), bulk("news"), bulk("hi"))
		if kind.msg == "pmessage" {
			want = arr(bulk("pmessage"), bulk("n*"), bulk("news"), bulk("hi"))
		}
		if got := c.readRaw(); got != want {
			t.Fatalf("%s: %q, want %q", kind.sub, got, want)
		}
		c.must(arr(bulk(kind.unsub), bulk(kind.channel), integer(0)), kind.unsub, kind.channel)
		listened(false)
		c.must(arr(bulk(kind.unsub), bulk(kind.channel), integer(0)), kind.unsub, kind.channel) // not subscribed: no change
		listened(false)

		// Leaving by RESET and by closing the connection.
		c.must(arr(bulk(kind.sub), bulk(kind.channel), integer(1)), kind.sub, kind.channel)
		listened(true)
		c.must(status("RESET"), "reset")
		listened(false)
		c.must(arr(bulk(kind.sub), bulk(kind.channel), integer(1)), kind.sub, kind.channel)
		c.must(arr(bulk(kind.sub), bulk("other"), integer(2)), kind.sub, "other")
		listened(true)
		c.nc.Close()
		waitFor(t, "the subscriber to go", func() bool { return !s.hub.Listened() })
		if n := s.hub.listening.Load(); n != 0 {
			t.Fatalf("%d subscriptions counted after the last went", n)
		}
	}

	// With no one listening, a PUBLISH records nothing to deliver.
	res, err := s.local.Apply(context.Background(), fsm.Command{Args: [][]byte{[]byte("publish"), []byte("news"), []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Effects) != 0 {
		t.Errorf("PUBLISH with no subscriber recorded %d effects", len(res.Effects))
	}
}
