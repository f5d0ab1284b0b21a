package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// env is what the runner tells a client run (docs/COMPATIBILITY.md,
// "What a client run is told"); compat/matrix/go/env.go's, with what this
// suite uses.
type env struct {
	mode      string
	phase     string        // check or failover
	stage     string        // COMPAT_STAGE: check, or after (the check again, after the leader kill)
	addrs     []string      // COMPAT_ADDRS: every node
	direct    string        // COMPAT_DIRECT: the node a plain client connects to
	sentinels []string      // COMPAT_SENTINELS
	master    string        // COMPAT_MASTER
	prefix    string        // COMPAT_PREFIX: every key of the run starts with it
	limit     time.Duration // COMPAT_TIMEOUT: the run's own deadline
	user      string        // COMPAT_USER: the ACL user every connection logs in as ("" none)
	pass      string        // COMPAT_PASS: its password
}

func readEnv(mode string) (*env, error) {
	e := &env{
		mode:      mode,
		phase:     os.Getenv("COMPAT_PHASE"),
		stage:     os.Getenv("COMPAT_STAGE"),
		addrs:     split(os.Getenv("COMPAT_ADDRS")),
		direct:    os.Getenv("COMPAT_DIRECT"),
		sentinels: split(os.Getenv("COMPAT_SENTINELS")),
		master:    os.Getenv("COMPAT_MASTER"),
		prefix:    os.Getenv("COMPAT_PREFIX"),
		user:      os.Getenv("COMPAT_USER"),
		pass:      os.Getenv("COMPAT_PASS"),
		limit:     90 * time.Second,
	}
	if e.phase == "" {
		e.phase = "check"
	}
	if v := os.Getenv("COMPAT_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("COMPAT_TIMEOUT: %w", err)
		}
		e.limit = d
	}
	if e.direct == "" && len(e.addrs) > 0 {
		e.direct = e.addrs[0]
	}
	if e.master == "" {
		e.master = "mymaster"
	}
	if e.prefix == "" {
		e.prefix = fmt.Sprintf("compat-%d:", time.Now().UnixNano())
	}
	if len(e.addrs) == 0 {
		return nil, fmt.Errorf("COMPAT_ADDRS is empty")
	}
	if mode == "sentinel" && len(e.sentinels) == 0 {
		return nil, fmt.Errorf("mode sentinel needs COMPAT_SENTINELS")
	}
	return e, nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// key returns a key name unique to this run.
func (e *env) key(name string) string { return e.prefix + name }

// client returns a go-redis client for the mode, as an application
// configures one: Client on one address (single, direct), FailoverClient
// through the Sentinels (sentinel), ClusterClient on every node (cluster).
// go-redis v9.0.3 has neither Protocol (every connection, Sentinel ones
// included, opens with HELLO 3) nor ClusterStateReloadInterval: its
// ClusterClient reloads the slots when they are older than 10 s, which is
// how it leaves a crashed leader.
func (e *env) client(t *T) redis.UniversalClient {
	var c redis.UniversalClient
	switch e.mode {
	case "single", "direct":
		c = redis.NewClient(&redis.Options{Addr: e.direct, Username: e.user, Password: e.pass})
	case "sentinel":
		c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: e.master, SentinelAddrs: e.sentinels,
			Username: e.user, Password: e.pass, SentinelUsername: e.user, SentinelPassword: e.pass})
	case "cluster":
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: e.addrs, Username: e.user, Password: e.pass})
	default:
		t.Fatalf("no go-redis client for mode %q", e.mode)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ping fails the suite unless c answers. A connection go-redis v9.0.3
// could not open because HELLO 3 was refused is said so.
func ping(t *T, c redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v%s", err, helloNote(err))
	}
}

// helloNote explains an error that go-redis v9.0.3 returns when the
// server refuses HELLO 3 with anything but "ERR unknown command".
func helloNote(err error) string {
	if err == nil || !strings.HasPrefix(err.Error(), "NOPROTO") {
		return ""
	}
	return " (the server refused HELLO 3, which go-redis v9.0.3 sends first on every connection;" +
		" it falls back to RESP2 only on \"ERR unknown command\", so no command of this client can run)"
}

// reportProtocol logs which protocol the client's connections speak, from
// the client's own CLIENT INFO (its resp= field, Redis 7.0): go-redis
// v9.0.3 carries on only once HELLO 3 succeeded (RESP3), or when the
// server does not know HELLO (RESP2). It never fails the suite: a server
// without CLIENT INFO is reported as such.
func reportProtocol(t *T, c redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	info, err := c.Do(ctx, "CLIENT", "INFO").Text()
	if err != nil {
		t.Logf("protocol: commands succeed after go-redis v9.0.3's HELLO 3; CLIENT INFO: %v", err)
		return
	}
	for _, f := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(f, "resp="); ok {
			t.Logf("protocol: RESP%s (CLIENT INFO resp=%s on the client's own connection)", v, v)
			return
		}
	}
	t.Logf("protocol: commands succeed after go-redis v9.0.3's HELLO 3; CLIENT INFO has no resp= field")
}

// refused checks that the run's ACL user (COMPAT_USER) is held to its
// rules, through the same kind of client as the suite's: FLUSHALL must
// answer NOPERM for the command, and EVALSHA (which every Go suite's user
// may run) given a key outside the run's prefix NOPERM for the key, before
// any script is looked up.
func refused(t *T, e *env) {
	if e.user == "" {
		t.Fatalf("COMPAT_USER is not set: the matrix runs every client as a limited ACL user")
	}
	t.Step("ACL: the user " + e.user + " may not go outside its rules")
	c := e.client(t)
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	for _, x := range []struct {
		args []any
		want string
	}{
		{[]any{"FLUSHALL"}, "NOPERM this user has no permissions to run the 'flushall' command"},
		{[]any{"EVALSHA", strings.Repeat("0", 40), 1, "compat:outside:" + e.user}, "NOPERM this user has no permissions to access one of the keys used as arguments"},
	} {
		err := c.Do(ctx, x.args...).Err()
		if err == nil || err.Error() != x.want {
			t.Fatalf("%v as %s = %v, want %s", x.args, e.user, err, x.want)
		}
		t.Logf("%v: %v", x.args, err)
	}
}
