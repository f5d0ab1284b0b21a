package client

import (
	"context"
	"testing"

	"github.com/deadbolt/deadbolt"
	"github.com/redis/go-redis/v9"
)

func TestProbe(t *testing.T) {
	n := deadbolt.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
	ctx := context.Background()
	t.Log(rdb.Eval(ctx, "return redis.call('set', KEYS[1], ARGV[1])", []string{"k"}, "v").Result())
	t.Log(rdb.Eval(ctx, "return {1,2,nil,3}", nil).Result())
	ps := rdb.Subscribe(ctx, "ch")
	t.Log(ps.Receive(ctx))
	t.Log(ps.Ping(ctx, "tok"))
	t.Log(ps.Receive(ctx))
	t.Log(ps.Ping(ctx))
	t.Log(ps.Receive(ctx))
	t.Log(rdb.Publish(ctx, "ch", "0").Result())
	t.Log(ps.Receive(ctx))
	t.Log(rdb.Do(ctx, "spublish", "ch", "0").Result())
}
