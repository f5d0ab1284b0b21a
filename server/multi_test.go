package server

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
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

	// A command only the server answers cannot be part of a transaction.
	c.must(okReply, "multi")
	c.mustErr("ERR 'client' is not supported inside MULTI", "client", "id")
	c.mustErr("EXECABORT Transaction discarded because of previous errors.", "exec")
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
