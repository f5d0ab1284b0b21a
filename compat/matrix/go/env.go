package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// env is what the runner tells a client run (docs/COMPATIBILITY.md,
// "What a client run is told").
type env struct {
	mode      string
	phase     string        // check or failover
	stage     string        // COMPAT_STAGE: check, or after (the check again, after the leader kill)
	addrs     []string      // COMPAT_ADDRS: every node (three singles in redlock3)
	direct    string        // COMPAT_DIRECT: the node a plain client connects to
	sentinels []string      // COMPAT_SENTINELS
	master    string        // COMPAT_MASTER
	prefix    string        // COMPAT_PREFIX: every key of the run starts with it
	dead      string        // COMPAT_DEAD: an address nothing listens on
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
		dead:      os.Getenv("COMPAT_DEAD"),
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
	if (mode == "sentinel") && len(e.sentinels) == 0 {
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
// ClusterStateReloadInterval is 1 s so that a crashed leader is left
// quickly (the default, 60 s, is for masters that answer MOVED).
func (e *env) client(t *T) redis.UniversalClient { return e.clientProto(t, 0) }

// clientProto is client with a protocol version: 0 is go-redis's default
// (HELLO 3, falling back to RESP2 on an error), 2 is RESP2 without HELLO,
// as Redisson connects.
func (e *env) clientProto(t *T, proto int) redis.UniversalClient {
	var c redis.UniversalClient
	switch e.mode {
	case "single", "direct":
		c = redis.NewClient(&redis.Options{Addr: e.direct, Protocol: proto, Username: e.user, Password: e.pass})
	case "sentinel":
		c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: e.master, SentinelAddrs: e.sentinels, Protocol: proto,
			Username: e.user, Password: e.pass, SentinelUsername: e.user, SentinelPassword: e.pass})
	case "cluster":
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: e.addrs, ClusterStateReloadInterval: time.Second, Protocol: proto,
			Username: e.user, Password: e.pass})
	case "redlock3":
		c = redis.NewClient(&redis.Options{Addr: e.addrs[0], Protocol: proto, Username: e.user, Password: e.pass})
	default:
		t.Fatalf("no go-redis client for mode %q", e.mode)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// nodes returns one plain client per independent node (redlock3).
func (e *env) nodes(t *T) []redis.UniversalClient {
	var cs []redis.UniversalClient
	for _, a := range e.addrs {
		c := redis.NewClient(&redis.Options{Addr: a, Protocol: 2, Username: e.user, Password: e.pass})
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// deadNode returns a client of an address that refuses connections: a
// node that is down.
func (e *env) deadNode(t *T) redis.UniversalClient {
	if e.dead == "" {
		t.Fatalf("COMPAT_DEAD is not set")
	}
	c := redis.NewClient(&redis.Options{Addr: e.dead, Protocol: 2, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		Username: e.user, Password: e.pass})
	t.Cleanup(func() { c.Close() })
	return c
}

// mustRESP3 fails the suite unless c's connections speak RESP3: go-redis
// v9 sends HELLO 3 and would carry on over RESP2 if the server refused it,
// so that working locks alone do not show that RESP3 works. It reads the
// resp= field of the client's own CLIENT INFO.
func mustRESP3(t *T, c redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	info, err := c.Do(ctx, "CLIENT", "INFO").Text()
	t.must(err, "CLIENT INFO")
	if !slices.Contains(strings.Fields(info), "resp=3") {
		t.Fatalf("the connection speaks RESP2 after go-redis's HELLO 3: CLIENT INFO %q", info)
	}
	t.Logf("protocol: RESP3 (CLIENT INFO resp=3)")
}

// ping fails the suite unless c answers.
func ping(t *T, c redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	t.must(c.Ping(ctx).Err(), "PING")
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
