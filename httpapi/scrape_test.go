package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt"
)

// BenchmarkScrape is one GET /metrics of a single node that has served
// a few dozen kinds of commands: the CPU a scrape costs (run once per
// scrape interval, off the command path).
func BenchmarkScrape(b *testing.B) {
	n := deadbolt.RunT(b, func(c *deadbolt.Config) { c.HTTPAddr = "127.0.0.1:0" })
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	for i := range 1000 {
		k := "k" + strconv.Itoa(i)
		rdb.Set(ctx, k, "v", 0)
		rdb.Get(ctx, k)
		rdb.Incr(ctx, "n")
		rdb.HSet(ctx, "h", k, "v")
		rdb.Expire(ctx, k, 1e9)
		rdb.Exists(ctx, k)
		rdb.Publish(ctx, "c", "m")
	}
	url := "http://" + n.HTTPAddr() + "/metrics"
	b.ReportAllocs()
	for b.Loop() {
		r, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
}

// BenchmarkScrapeMillionKeys scrapes a node holding 1,000,000 keys of
// which 100,000 are locks (SET NX PX, as redsync takes them). The first
// scrape counts the keys and the locks (the visit that is then rate
// limited); first-scrape-ms reports it, ns/op the scrapes after it.
func BenchmarkScrapeMillionKeys(b *testing.B) {
	n := deadbolt.RunT(b, func(c *deadbolt.Config) { c.HTTPAddr = "127.0.0.1:0" })
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	const keys, locks, batch = 1_000_000, 100_000, 1000
	for i := 0; i < keys; i += batch {
		p := rdb.Pipeline()
		for j := i; j < i+batch; j++ {
			if j < locks {
				p.SetNX(ctx, "lock:"+strconv.Itoa(j), "owner-"+strconv.Itoa(j), time.Hour)
			} else {
				p.Set(ctx, "k:"+strconv.Itoa(j), "v", 0)
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	url := "http://" + n.HTTPAddr() + "/metrics"
	scrape := func() []byte {
		r, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Body.Close()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			b.Fatal(err)
		}
		return body
	}
	start := time.Now()
	body := scrape()
	first := time.Since(start)
	if !strings.Contains(string(body), "deadbolt_keys 1e+06") || !strings.Contains(string(body), `deadbolt_locks_held{kind="string"} 100000`) {
		b.Fatalf("the first scrape does not count 1,000,000 keys and 100,000 locks")
	}
	b.ResetTimer()
	for b.Loop() {
		scrape()
	}
	b.ReportMetric(float64(first.Microseconds())/1000, "first-scrape-ms") // after ResetTimer, which drops it
}
