package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

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
