package deadbolt

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/testredis"
)

// A user limited to some SENTINEL subcommands is let through and refused
// by deadbolt's Sentinel port exactly as by a Redis 7.0 Sentinel
// (redis-server --sentinel): the same commands allowed, the same NOPERM
// texts ('sentinel|masters', not 'sentinel'), unknown subcommands answered
// before the rules, and the same ACL LOG entries. The rule sets are those
// the lock clients of make compat need (cmd/deadbolt-compat/users.go) and
// a few built from categories.
func TestSentinelACLMatchesRedisSentinel(t *testing.T) {
	master := testredis.Start(t)
	redisSentinel := testredis.StartSentinel(t, "mymaster", master)
	node := RunT(t, func(cfg *Config) { cfg.SentinelAddr = "127.0.0.1:0"; cfg.MasterName = "mymaster" })
	servers := map[string]string{"redis": redisSentinel, "deadbolt": node.SentinelAddr()}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := map[string]*redis.Client{}
	for name, addr := range servers {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		t.Cleanup(func() { c.Close() })
		admin[name] = c
	}

	ruleSets := [][]string{
		{"+sentinel|get-master-addr-by-name", "+sentinel|sentinels", "+subscribe"}, // go-redis
		{"+sentinel|get-master-addr-by-name", "+sentinel|sentinels", "+info"},      // ioredis
		{"+sentinel|masters", "+sentinel|slaves", "+ping"},                         // redis-py
		{"+sentinel|master", "+sentinel|replicas", "+sentinel|sentinels"},          // node-redis 5
		{"+@all", "-@dangerous"},
		{"+@all", "-@admin"},
		{"-@all", "+@slow"},
		{"-@all", "+@dangerous"},
		{"+sentinel", "-sentinel|reset"},
	}
	commands := [][]any{
		{"SENTINEL", "get-master-addr-by-name", "mymaster"},
		{"SENTINEL", "SENTINELS", "mymaster"},
		{"SENTINEL", "masters"},
		{"SENTINEL", "slaves", "mymaster"},
		{"SENTINEL", "replicas", "mymaster"},
		{"SENTINEL", "master", "mymaster"},
		{"SENTINEL", "myid"},
		{"SENTINEL", "reset", "nosuchmaster"},
		{"SENTINEL", "help"},
		{"SENTINEL", "nosuch"},
		{"SENTINEL", "get-master-addr-by-name"},
		{"INFO", "server"},
		{"ROLE"},
		{"PING"},
	}
	for _, rules := range ruleSets {
		replies := map[string][]string{}
		logs := map[string][]string{}
		for name, addr := range servers {
			args := []any{"ACL", "SETUSER", "u", "reset", "on", ">p"}
			for _, r := range rules {
				args = append(args, r)
			}
			if err := admin[name].Do(ctx, args...).Err(); err != nil {
				t.Fatalf("%s: %v: %v", name, args, err)
			}
			admin[name].Do(ctx, "ACL", "LOG", "RESET")
			u := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, Username: "u", Password: "p", MaxRetries: -1})
			for _, cmd := range commands {
				err := u.Do(ctx, cmd...).Err()
				got := "ok"
				if err != nil && err != redis.Nil {
					got = err.Error()
				}
				replies[name] = append(replies[name], got)
			}
			u.Close()
			entries, err := admin[name].Do(ctx, "ACL", "LOG").Slice()
			if err != nil {
				t.Fatalf("%s: ACL LOG: %v", name, err)
			}
			for _, e := range entries {
				kv := e.([]any)
				var fields []string
				for i := 0; i+1 < len(kv); i += 2 {
					switch kv[i] {
					case "count", "reason", "context", "object", "username":
						fields = append(fields, fmt.Sprint(kv[i], "=", kv[i+1]))
					}
				}
				logs[name] = append(logs[name], strings.Join(fields, " "))
			}
		}
		for i, cmd := range commands {
			if r, d := replies["redis"][i], replies["deadbolt"][i]; r != d {
				t.Errorf("rules %v, %v:\n  Redis Sentinel: %s\n  deadbolt:       %s", rules, cmd, r, d)
			}
		}
		if r, d := strings.Join(logs["redis"], "\n  "), strings.Join(logs["deadbolt"], "\n  "); r != d {
			t.Errorf("rules %v: ACL LOG differs:\n Redis Sentinel:\n  %s\n deadbolt:\n  %s", rules, r, d)
		}
	}
}
