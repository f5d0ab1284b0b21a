package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every cell's client runs as an ACL user of its own (docs/COMPATIBILITY.md,
// "ACL users"): it may touch only its run's keys and channels and run only
// the commands its client was seen to need in that mode. The runner creates
// the users with ACL SETUSER — through one node of the cluster, so that
// Raft replicates them to the others — before any client starts, and tells
// the client the name and password (COMPAT_USER, COMPAT_PASS).

// access is what a row's user may do. In keys and channels, $P stands for
// the cell's key prefix (compat:<cell>:, which every COMPAT_PREFIX of the
// cell starts with). Comments say where each grant comes from: "lua:" the
// commands the client's scripts call (a script runs with its caller's
// permissions, so each needs a grant too), "checks:" what the suite itself
// reads to check the client's work, which an application would not need.
type access struct {
	keys     []string // key patterns (~)
	channels []string // channel patterns (&)
	commands []string // +command or +command|subcommand, in every mode
	// byMode adds commands in one connection mode (a column's mode:
	// single, sentinel, direct, cluster, redlock3); sentinelChannels adds
	// channels in the sentinel mode.
	byMode           map[string][]string
	sentinelChannels []string
}

// Grants several rows share.
var (
	// Every go-redis suite: PING. HELLO and AUTH need no permission;
	// CLIENT SETINFO, which go-redis sends and whose errors it ignores, is
	// not a Redis 7.0 command.
	goRedisBase = []string{"+ping"}
	// go-redis's FailoverClient on a Sentinel: the master's address, the
	// other Sentinels, and SUBSCRIBE to two channels.
	goRedisSentinel     = []string{"+sentinel|get-master-addr-by-name", "+sentinel|sentinels", "+subscribe"}
	goRedisSentinelChan = []string{"+switch-master", "+replica-reconf-done"}
	// go-redis's ClusterClient: the slot map, and COMMAND (key positions
	// and flags; refused, go-redis logs an error before every command and
	// asks again).
	goRedisCluster = []string{"+cluster|slots", "+command"}
	goRedisModes   = map[string][]string{"sentinel": goRedisSentinel, "cluster": goRedisCluster}
	// Keys and channels of Redisson's lock family for objects named under
	// $P: the object itself, the keys its scripts are given or build
	// (redisson_lock_queue, _lock_timeout, _lock_token, _unlock_latch,
	// and the channels redisson_lock__channel, redisson_rwlock and
	// redisson_sc, all ":{name}..."; "{name}:..." for the read-write
	// lock's and the permit semaphore's timeouts; the count-down latch's
	// channel), and the channels waiters subscribe to.
	familyKeys = []string{"$P*", "redisson_*:{$P*", "{$P*", "redisson_countdownlatch__channel__{$P*"}
	familyChan = []string{"redisson_*:{$P*", "redisson_countdownlatch__channel__{$P*"}
	// ioredis: INFO, its ready check on every connection.
	ioredisBase = []string{"+info", "+ping"}
	// ioredis's Sentinel client: the master's address and the other
	// Sentinels (it does not subscribe by default).
	ioredisSentinel = []string{"+sentinel|get-master-addr-by-name", "+sentinel|sentinels"}
	// ioredis's Cluster: the slot map, CLUSTER INFO (its ready check),
	// CLIENT SETNAME (it names its own connections), READONLY and
	// READWRITE (on the nodes CLUSTER SLOTS lists as replicas).
	ioredisCluster = []string{"+cluster|slots", "+cluster|info", "+client|setname", "+readonly", "+readwrite"}
	ioredisModes   = map[string][]string{"sentinel": ioredisSentinel, "cluster": ioredisCluster}
)

// rowAccess is each row's access, by row name.
var rowAccess = map[string]access{
	"go-redis v9 + Redisson scripts": {
		// The unlock scripts are given the channel as a key.
		keys:     []string{"$P*", "redisson_lock__channel:{$P*"},
		channels: []string{"redisson_lock__channel:{$P*"},
		// EVALSHA, SCRIPT LOAD after NOSCRIPT, EVAL (3.18); SUBSCRIBE
		// (waiters); lua: exists hexists hincrby hset pexpire pttl del
		// publish; checks: hget pttl exists, client|info (the protocol)
		commands: cat(goRedisBase, "+evalsha", "+script|load", "+eval", "+subscribe",
			"+exists", "+hexists", "+hincrby", "+hset", "+pexpire", "+pttl", "+del", "+publish", "+hget", "+client|info"),
		byMode:           goRedisModes,
		sentinelChannels: goRedisSentinelChan,
	},
	"redsync v4": {
		keys: []string{"$P*"},
		// SET NX PX, GET, PTTL (Valid), EVALSHA then EVAL; lua: get del
		// pexpire; checks: exists
		commands:         cat(goRedisBase, "+set", "+get", "+pttl", "+evalsha", "+eval", "+del", "+pexpire", "+exists"),
		byMode:           goRedisModes,
		sentinelChannels: goRedisSentinelChan,
	},
	"bsm/redislock": {
		keys: []string{"$P*"},
		// EVALSHA then EVAL; lua: get getrange set pexpire pttl del;
		// checks: get exists, client|info (the protocol)
		commands:         cat(goRedisBase, "+evalsha", "+eval", "+get", "+getrange", "+set", "+pexpire", "+pttl", "+del", "+exists", "+client|info"),
		byMode:           goRedisModes,
		sentinelChannels: goRedisSentinelChan,
	},
	"bsm/redislock + go-redis v9.0.3": {
		keys:             []string{"$P*"},
		commands:         cat(goRedisBase, "+evalsha", "+eval", "+get", "+getrange", "+set", "+pexpire", "+pttl", "+del", "+exists", "+client|info"),
		byMode:           goRedisModes,
		sentinelChannels: goRedisSentinelChan,
	},
	"Redisson family (own Go client)": {
		keys:     familyKeys,
		channels: familyChan,
		// EVALSHA, SCRIPT LOAD after NOSCRIPT, SUBSCRIBE, and outside
		// scripts exists hexists pexpire pttl get del; lua: the rest;
		// checks: hget lrange zrange
		commands: cat(goRedisBase, "+evalsha", "+script|load", "+subscribe",
			"+decr", "+decrby", "+del", "+exists", "+get", "+hdel", "+hexists", "+hget", "+hincrby", "+hkeys",
			"+hlen", "+hset", "+incr", "+incrby", "+lindex", "+lpop", "+lrange", "+lrem", "+pexpire", "+pttl",
			"+publish", "+rpush", "+set", "+zadd", "+zcount", "+zincrby", "+zrange", "+zrangebyscore", "+zrem", "+zscore"),
		byMode:           goRedisModes,
		sentinelChannels: goRedisSentinelChan,
	},
	"redis-py Lock (python3-redis)": {
		keys: []string{"$P*"},
		// SET NX PX, GET, EVALSHA, SCRIPT LOAD after NOSCRIPT; lua: get
		// del pexpire pttl; checks: pttl exists
		commands: []string{"+ping", "+set", "+get", "+evalsha", "+script|load", "+del", "+pexpire", "+pttl", "+exists"},
		// Sentinel.discover_master and discover_slaves.
		byMode: map[string][]string{"sentinel": {"+sentinel|masters", "+sentinel|slaves"}},
	},
	"ioredis + redlock": {
		keys: []string{"$P*"},
		// EVALSHA, EVAL after NOSCRIPT; lua: exists set get del; checks:
		// client|info get pttl, set (3×single)
		commands: cat(ioredisBase, "+evalsha", "+eval", "+exists", "+set", "+get", "+del", "+client|info", "+pttl"),
		byMode:   ioredisModes,
	},
	"ioredis + redis-semaphore": {
		// redis-semaphore prefixes its keys.
		keys: []string{"mutex:$P*", "semaphore:$P*"},
		// EVALSHA, EVAL after NOSCRIPT, DEL, ZREM; lua: get set pexpire
		// del zremrangebyscore zcard zadd (zscore: its refresh script, not
		// reached in the runs); checks: client|info get set exists zcard
		commands: cat(ioredisBase, "+evalsha", "+eval", "+del", "+zrem", "+get", "+set", "+pexpire",
			"+zremrangebyscore", "+zcard", "+zadd", "+zscore", "+client|info", "+exists"),
		byMode: ioredisModes,
	},
	"ioredis + node-redisson": {
		// Its unlock script is given the channel and the latch as keys.
		keys:     []string{"$P*", "redisson_lock__channel:{$P*", "redisson_unlock_latch:{$P*"},
		channels: []string{"redisson_lock__channel:{$P*"},
		// EVAL, then EVALSHA; SUBSCRIBE and UNSUBSCRIBE (waiters); EXISTS,
		// PTTL, DEL (the latch); lua: exists hexists hincrby pexpire pttl
		// del publish get set; checks: hget
		commands: cat(ioredisBase, "+eval", "+evalsha", "+subscribe", "+unsubscribe",
			"+exists", "+hexists", "+hincrby", "+pexpire", "+pttl", "+del", "+publish", "+get", "+set", "+hget"),
		byMode: ioredisModes,
	},
	"node-redis v4 (RESP2)": {
		keys: []string{"$P*"},
		// SET NX PX, EVAL, EVALSHA (defineScript), SCRIPT LOAD; lua: get
		// pexpire del; checks: client|info get pttl exists script|exists
		commands: []string{"+ping", "+set", "+eval", "+evalsha", "+script|load", "+get", "+pexpire", "+del",
			"+client|info", "+pttl", "+exists", "+script|exists"},
		byMode: map[string][]string{"cluster": {"+cluster|slots"}},
	},
	"node-redis v5 (RESP3)": {
		keys: []string{"$P*"},
		commands: []string{"+ping", "+set", "+eval", "+evalsha", "+script|load", "+get", "+pexpire", "+del",
			"+client|info", "+pttl", "+exists", "+script|exists"},
		byMode: map[string][]string{
			"sentinel": {"+sentinel|master", "+sentinel|replicas", "+sentinel|sentinels", "+psubscribe"},
			"cluster":  {"+cluster|slots"},
		},
		// The patterns its Sentinel client subscribes to on a Sentinel
		// (PSUBSCRIBE needs each pattern granted as it is written).
		sentinelChannels: []string{"switch-master", "[-+]sdown", "+slave", "+sentinel", "[-+]odown", "+slave-reconf-done"},
	},
	"Symfony Lock RedisStore (PHP)": {
		// Every lock is a sorted set under its own name. Before its first
		// script RedisStore checks that TIME may be called in a script
		// that then writes, on a fixed key of its own outside any prefix.
		keys: []string{"$P*", "symfony_check_support_time"},
		// EVAL (RedisStore sends nothing else); lua: type time set
		// zremrangebyscore zscore zcount zadd zrevrange pexpireat zrem;
		// checks: ping type zscore zrange pttl exists
		commands: []string{"+ping", "+eval", "+type", "+time", "+set", "+zremrangebyscore", "+zscore", "+zcount",
			"+zadd", "+zrevrange", "+pexpireat", "+zrem", "+zrange", "+pttl", "+exists"},
		// phpredis's RedisCluster: the slot map.
		byMode: map[string][]string{"cluster": {"+cluster|slots"}},
	},
	"redis-rb 4.8 SET NX + Lua (Ruby)": {
		keys: []string{"$P*"},
		// SET NX PX, EVALSHA then EVAL on NOSCRIPT; lua: get pexpire del;
		// checks: ping get pttl exists
		commands: []string{"+ping", "+set", "+evalsha", "+eval", "+get", "+pexpire", "+del", "+pttl", "+exists"},
		byMode: map[string][]string{
			// Its Sentinel client then asks the master's ROLE (it takes a
			// refusal as a yes; granted, so that the check is real).
			"sentinel": {"+sentinel|get-master-addr-by-name", "+role"},
			// Its Cluster client: the slot map, each node's flags
			// (CLUSTER NODES) and COMMAND (key positions).
			"cluster": {"+cluster|slots", "+cluster|nodes", "+command"},
		},
	},
	"redis-cli transcripts": {
		keys:     []string{"$P*"},
		channels: []string{"$P*"},
		// The transcripts' commands; lua: del exists get hexists hincrby
		// hset incrby pexpire pttl publish set spublish zrange.
		commands: []string{"+ping", "+set", "+get", "+del", "+exists", "+incr", "+incrby", "+hset", "+hget", "+hincrby", "+hexists", "+hgetall",
			"+lpush", "+zadd", "+zrange", "+pexpire", "+pttl", "+eval", "+evalsha", "+script|load", "+script|exists", "+multi", "+exec",
			"+subscribe", "+ssubscribe", "+publish", "+spublish", "+pubsub|numsub", "+pubsub|shardnumsub"},
		byMode: map[string][]string{
			"sentinel": {"+sentinel|get-master-addr-by-name", "+sentinel|ckquorum"},
			"cluster":  {"+cluster|keyslot", "+readonly", "+readwrite"},
		},
	},
}

// cat returns base followed by more, in a new slice.
func cat(base []string, more ...string) []string {
	return append(slices.Clone(base), more...)
}

// keyPrefix is the start of every key of the cell's runs.
func (c *cell) keyPrefix() string { return "compat:" + c.slug() + ":" }

// user is the cell's user name.
func (c *cell) user() string { return "compat-" + c.slug() }

// aclRules returns the cell's ACL SETUSER arguments after the user name.
func (c *cell) aclRules(pass string) ([]string, error) {
	a, ok := rowAccess[c.row.name]
	if !ok {
		return nil, fmt.Errorf("row %q has no ACL access (cmd/deadbolt-compat/users.go)", c.row.name)
	}
	p := c.keyPrefix()
	rules := []string{"reset", "on", ">" + pass}
	for _, k := range a.keys {
		rules = append(rules, "~"+strings.ReplaceAll(k, "$P", p))
	}
	channels := a.channels
	if c.col.mode == "sentinel" {
		channels = cat(channels, a.sentinelChannels...)
	}
	for _, ch := range channels {
		rules = append(rules, "&"+strings.ReplaceAll(ch, "$P", p))
	}
	rules = append(rules, a.commands...)
	rules = append(rules, a.byMode[c.col.mode]...)
	return rules, nil
}

// newPassword returns a password for the run's users.
func newPassword() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// createUsers creates every cell's user on the servers of its column: on
// one cluster node (a follower, which forwards it; Raft gives it to the
// others), on the single node (and the two other independent nodes for
// 3×single), on the reference redis-server. It returns once every node of
// the cluster has every user.
func (r *runner) createUsers(ctx context.Context, cells []*cell) error {
	t := r.topo
	byAddr := map[string][]*cell{}
	var clusterUsers []string
	for _, c := range cells {
		switch c.col.topo {
		case "single":
			byAddr[t.single.addr] = append(byAddr[t.single.addr], c)
		case "three":
			for _, s := range []*server{t.single, t.s2, t.s3} {
				byAddr[s.addr] = append(byAddr[s.addr], c)
			}
		case "redis":
			if r.missing["redis"] == "" {
				byAddr[t.redis.addr] = append(byAddr[t.redis.addr], c)
			}
		case "cluster":
			byAddr[t.direct] = append(byAddr[t.direct], c)
			clusterUsers = append(clusterUsers, c.user())
		}
	}
	for addr, cs := range byAddr {
		cl := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: 3})
		for _, c := range cs {
			rules, err := c.aclRules(r.password)
			if err != nil {
				cl.Close()
				return err
			}
			args := []any{"ACL", "SETUSER", c.user()}
			for _, a := range rules {
				args = append(args, a)
			}
			if err := cl.Do(ctx, args...).Err(); err != nil {
				cl.Close()
				return fmt.Errorf("ACL SETUSER %s on %s: %w", c.user(), addr, err)
			}
		}
		cl.Close()
	}
	// The cluster's users must be in force on every node before a client
	// connects to one.
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range t.cluster.nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2, MaxRetries: -1})
		for {
			users, err := cl.Do(ctx, "ACL", "USERS").StringSlice()
			missing := 0
			for _, u := range clusterUsers {
				if !slices.Contains(users, u) {
					missing++
				}
			}
			if err == nil && missing == 0 {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				cl.Close()
				return fmt.Errorf("%s: %d of the cluster's %d users not there after 20 s (%v)", n.name, missing, len(clusterUsers), err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
	return nil
}

// dumpACLLog writes every server's ACL LOG (each Redis server and each
// deadbolt node keeps its own) to the logs directory and returns how many
// entries the users of the run left.
func (r *runner) dumpACLLog(ctx context.Context) (int, string) {
	t := r.topo
	servers := []*server{t.single, t.s2, t.s3}
	servers = append(servers, t.cluster.nodes...)
	if r.missing["redis"] == "" {
		servers = append(servers, t.redis)
	}
	path := filepath.Join(r.logs, "acl-log.txt")
	var lines []string
	total := 0
	for _, s := range servers {
		if !s.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, MaxRetries: -1, ReadTimeout: 2 * time.Second})
		entries, err := cl.Do(ctx, "ACL", "LOG", "1000").Slice()
		cl.Close()
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: ACL LOG: %v", s.name, err))
			continue
		}
		for _, e := range entries {
			m := logEntry(e)
			total++
			lines = append(lines, fmt.Sprintf("%-6s %-55s %-8s %-8s %-40s count %s", s.name, m["username"], m["reason"], m["context"], m["object"], m["count"]))
		}
	}
	sort.Strings(lines)
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	return total, path
}

// logEntry turns one ACL LOG entry (a flat field/value array, or a map in
// RESP3) into a map of strings.
func logEntry(e any) map[string]string {
	out := map[string]string{}
	switch v := e.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
	case map[any]any:
		for k, x := range v {
			out[fmt.Sprint(k)] = fmt.Sprint(x)
		}
	}
	return out
}
