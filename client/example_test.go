package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt"
	"github.com/deadbolt/deadbolt/client"
)

// addr is the server the examples talk to; TestMain starts an in-memory
// deadbolt node there. Any Redis or deadbolt address works the same.
var addr string

// quiet drops go-redis's own log lines (dial failures against the
// "down" server of the RedLock test, Sentinel discovery notes).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	n, err := deadbolt.Start(deadbolt.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	addr = n.Addr()
	code := m.Run()
	n.Close()
	os.Exit(code)
}

// The five lines: connect, name the lock, lock, unlock.
func Example() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	lock := c.NewLock("orders")
	if err := lock.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)

	fmt.Println("one owner at a time here")
	// Output: one owner at a time here
}

func ExampleLock_TryLock() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	mine, theirs := c.NewLock("report"), c.NewLock("report")
	ok, err := mine.TryLock(ctx, 0, 10*time.Second) // no wait, 10s lease
	fmt.Println(ok, err)
	ok, err = theirs.TryLock(ctx, 50*time.Millisecond, 0) // wait 50ms, watchdog
	fmt.Println(ok, err)
	fmt.Println(mine.Unlock(ctx))
	// Output:
	// true <nil>
	// false <nil>
	// <nil>
}

// A handle is an owner: locking twice through it re-enters, from any
// goroutine. WithOwner makes another handle act for the same owner.
func ExampleWithOwner() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	outer := c.NewLock("account:42")
	_ = outer.Lock(ctx)
	inner := c.NewLock("account:42", client.WithOwner(outer.Owner()))
	_ = inner.Lock(ctx) // re-enters: same owner
	n, _ := outer.HoldCount(ctx)
	fmt.Println("holds:", n)

	stranger := c.NewLock("account:42") // a fresh owner is kept out
	ok, _ := stranger.TryLock(ctx, 0, 0)
	fmt.Println("stranger got it:", ok)

	_ = inner.Unlock(ctx)
	_ = outer.Unlock(ctx)
	locked, _ := outer.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// holds: 2
	// stranger got it: false
	// locked: false
}

func ExampleFairLock() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	first := c.NewFairLock("printer")
	_ = first.Lock(ctx)
	var wg sync.WaitGroup
	turns := make(chan int, 3)
	for i := range 3 {
		l := c.NewFairLock("printer")
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.Lock(ctx)
			turns <- i
			_ = l.Unlock(ctx)
		}()
		for n, _ := first.QueueLength(ctx); n != int64(i+1); n, _ = first.QueueLength(ctx) {
			time.Sleep(time.Millisecond)
		}
	}
	_ = first.Unlock(ctx)
	wg.Wait()
	close(turns)
	for i := range turns {
		fmt.Print(i, " ")
	}
	fmt.Println()
	// Output: 0 1 2
}

func ExampleReadWriteLock() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	r1 := c.NewReadWriteLock("config").ReadLock()
	r2 := c.NewReadWriteLock("config").ReadLock()
	w := c.NewReadWriteLock("config").WriteLock()
	_ = r1.Lock(ctx)
	_ = r2.Lock(ctx) // readers share
	ok, _ := w.TryLock(ctx, 0, 0)
	fmt.Println("writer while reading:", ok)
	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	ok, _ = w.TryLock(ctx, 0, 0)
	fmt.Println("writer alone:", ok)
	_ = w.Unlock(ctx)
	// Output:
	// writer while reading: false
	// writer alone: true
}

func ExampleSemaphore() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	sem := c.NewSemaphore("connections")
	_, _ = sem.TrySetPermits(ctx, 2)
	_ = sem.Acquire(ctx, 2)
	ok, _ := sem.TryAcquire(ctx, 1, 0)
	fmt.Println("third permit:", ok)
	_ = sem.Release(ctx, 1)
	ok, _ = sem.TryAcquire(ctx, 1, 0)
	fmt.Println("after a release:", ok)
	// Output:
	// third permit: false
	// after a release: true
}

func ExamplePermitExpirableSemaphore() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	slots := c.NewPermitExpirableSemaphore("slots")
	_, _ = slots.TrySetPermits(ctx, 1)
	id, _ := slots.Acquire(ctx, 100*time.Millisecond) // returns by itself after 100ms
	fmt.Println("id length:", len(id))
	_, ok, _ := slots.TryAcquire(ctx, time.Second, 0) // waits for the lease to run out
	fmt.Println("second holder:", ok)
	fmt.Println(slots.Release(ctx, id)) // too late: it expired
	// Output:
	// id length: 32
	// second holder: true
	// client: permit not found (released, expired or never acquired)
}

func ExampleCountDownLatch() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	ready := c.NewCountDownLatch("workers-ready")
	_, _ = ready.TrySetCount(ctx, 3)
	for range 3 {
		go func() { _ = c.NewCountDownLatch("workers-ready").CountDown(ctx) }()
	}
	_ = ready.Await(ctx)
	n, _ := ready.Count(ctx)
	fmt.Println("open, count", n)
	// Output: open, count 0
}

func ExampleFencedLock() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	l := c.NewFencedLock("ledger")
	t1, _ := l.LockAndGetToken(ctx)
	_ = l.Unlock(ctx)
	t2, _ := l.LockAndGetToken(ctx)
	_ = l.Unlock(ctx)
	// Pass the token to the storage; it refuses tokens smaller than the
	// largest it has seen.
	fmt.Println(t2 > t1)
	// Output: true
}

func ExampleNewMultiLock() {
	ctx := context.Background()
	c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
	defer c.Close()

	both := client.NewMultiLock(c.NewLock("from-account"), c.NewLock("to-account"))
	if err := both.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	ok, _ := c.NewLock("to-account").TryLock(ctx, 0, 0)
	fmt.Println("to-account free:", ok)
	fmt.Println(both.Unlock(ctx))
	// Output:
	// to-account free: false
	// <nil>
}

// RedLock over independent servers (here one address three times, for
// brevity; use one client per server).
func ExampleNewRedLock() {
	ctx := context.Background()
	var locks []client.Locker
	for range 3 {
		c := client.New(redis.NewClient(&redis.Options{Addr: addr}))
		defer c.Close()
		locks = append(locks, c.NewLock(fmt.Sprintf("red-%d", len(locks))))
	}
	red := client.NewRedLock(locks...)
	ok, err := red.TryLock(ctx, time.Second, 10*time.Second)
	fmt.Println(ok, err)
	fmt.Println(red.Unlock(ctx))
	// Output:
	// true <nil>
	// <nil>
}
