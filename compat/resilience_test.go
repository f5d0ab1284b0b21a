package compat

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt"
	"github.com/deadbolt/deadbolt/luaexec"
)

// raceScriptBudget is the script budget under the race detector: a
// twentieth of deadbolt's default.
const raceScriptBudget = luaexec.DefaultBudget / 20

// TestEndlessScript sends scripts that never end by themselves through
// go-redis. Each must come back as an error reply on its own connection
// (deadbolt counts a script's work, so this does not depend on time),
// while another client keeps being served, before, during and after.
//
// Only deadbolt: redis-server lets such a script run until SCRIPT KILL,
// answering BUSY to everyone else meanwhile.
func TestEndlessScript(t *testing.T) {
	scripts := []struct{ name, body string }{
		{"while", "while true do end"},
		{"repeat", "local i = 0 repeat i = i + 1 until false"},
		{"numeric for", "for i = 1, math.huge do end"},
		{"tail call", "local function f() return f() end return f()"},
		{"recursion", "local function f() return 1 + f() end return f()"}, // stack overflow
		{"redis.call in a loop", "while true do redis.call('incr', KEYS[1]) end"},
		{"pcall around redis.call", "while true do pcall(redis.call, 'hincrby', KEYS[1], 'f', 1) end"},
		{"string building", "local s = '' while true do s = string.sub(s .. 'x', -64) end"},
	}
	// The default budget stops these scripts within a second or so on
	// the quiet 2-core test machine; the other client must get
	// each answer within 10 s (deadbolt's command timeout), which leaves
	// room for a machine busy with other work. The race detector makes
	// Lua some twenty times slower: under it the budget is cut by as
	// much, and the other client waits up to a minute, so the test still
	// checks the errors and that the node serves the other client
	// throughout.
	var budget int64 // the default
	serveWithin := 10 * time.Second
	if raceEnabled {
		budget, serveWithin = raceScriptBudget, time.Minute
	}
	s := startDeadbolt(t, func(c *deadbolt.Config) { c.ScriptBudget = budget })
	other := newClient(t, s.addr, func(o *redis.Options) { o.ReadTimeout = serveWithin })
	for i, sc := range scripts {
		t.Run(sc.name, func(t *testing.T) {
			ctx := testContext(t)
			// The script's client waits longer than Redis's
			// lua-time-limit (5 s) and deadbolt's command timeout
			// (10 s), so that what stops the script is the server.
			c := newClient(t, s.addr, func(o *redis.Options) { o.ReadTimeout = 30 * time.Second })
			key := "endless:" + strconv.Itoa(i)

			type result struct {
				err     error
				elapsed time.Duration
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				err := c.Eval(ctx, sc.body, []string{key}).Err()
				done <- result{err, time.Since(start)}
			}()

			served := 0
			var res result
		wait:
			for {
				select {
				case res = <-done:
					break wait
				default:
				}
				served += serveOnce(t, ctx, other, key, served)
			}
			t.Logf("script stopped after %v with %q; the other client got %d answers meanwhile", res.elapsed, res.err, served)
			if !isRedisError(res.err) {
				t.Fatalf("endless script: got %v, want an error reply", res.err)
			}
			// Both connections still work.
			serveOnce(t, ctx, other, key, served)
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING on the script's connection afterwards: %v", err)
			}
			if err := c.Eval(ctx, "return redis.call('set', KEYS[1], 'after')", []string{key + ":after"}).Err(); err != nil {
				t.Fatalf("a short script afterwards: %v", err)
			}
		})
	}
}

// serveOnce has the other client do a PING, a write and a read, each
// within the client's read timeout, and returns how many it got
// answered (3).
func serveOnce(t *testing.T, ctx context.Context, c *redis.Client, key string, n int) int {
	t.Helper()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("other client: PING: %v", err)
	}
	k, v := "other:"+key, strconv.Itoa(n)
	if err := c.Set(ctx, k, v, 0).Err(); err != nil {
		t.Fatalf("other client: SET: %v", err)
	}
	if got, err := c.Get(ctx, k).Result(); err != nil || got != v {
		t.Fatalf("other client: GET = (%q, %v), want %q", got, err, v)
	}
	return 3
}
