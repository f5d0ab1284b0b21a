package server

import (
	"context"
	"math"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

func init() { registerConn(connSpec{name: "config", arity: -2, flags: connAdmin, fn: cmdConfig}) }

// ---- CONFIG ----

type paramKind uint8

const (
	pString paramKind = iota
	pBool
	pInt
	pMem
	pEnum
	pSave   // save: pairs of integers
	pCOBL   // client-output-buffer-limit
	pNotify // notify-keyspace-events
)

// configParam is one CONFIG parameter with Redis's default.
type configParam struct {
	name      string
	kind      paramKind
	def       string
	min, max  int64
	enum      []string
	immutable bool   // deadbolt cannot change it at run time
	alias     string // the canonical name when this is an old alias
}

const maxInt32 = math.MaxInt32

// configParams are the parameters CONFIG GET knows, with Redis 7.0's
// defaults. Those the server applies: maxclients, requirepass,
// proto-max-bulk-len and client-query-buffer-limit (for new connections),
// client-output-buffer-limit's pubsub hard limit. The rest are kept and
// reported so that tools and clients that read or set them work, but
// change nothing.
var configParams = []configParam{
	{name: "aclfile", kind: pString, immutable: true},
	{name: "acl-pubsub-default", kind: pEnum, def: "resetchannels", enum: []string{"allchannels", "resetchannels"}},
	{name: "active-expire-effort", kind: pInt, def: "1", min: 1, max: 10},
	{name: "activerehashing", kind: pBool, def: "yes"},
	{name: "always-show-logo", kind: pBool, def: "no", immutable: true},
	{name: "aof-use-rdb-preamble", kind: pBool, def: "yes"},
	{name: "appenddirname", kind: pString, def: "appendonlydir", immutable: true},
	{name: "appendfilename", kind: pString, def: "appendonly.aof", immutable: true},
	{name: "appendfsync", kind: pEnum, def: "everysec", enum: []string{"always", "everysec", "no"}},
	{name: "appendonly", kind: pBool, def: "no", immutable: true},
	{name: "auto-aof-rewrite-min-size", kind: pMem, def: "67108864", max: math.MaxInt64},
	{name: "auto-aof-rewrite-percentage", kind: pInt, def: "100", max: maxInt32},
	{name: "bind", kind: pString, immutable: true},
	{name: "busy-reply-threshold", kind: pInt, def: "5000", max: math.MaxInt64},
	{name: "client-output-buffer-limit", kind: pCOBL},
	{name: "client-query-buffer-limit", kind: pMem, min: 1 << 20, max: math.MaxInt64},
	{name: "cluster-config-file", kind: pString, def: "nodes.conf", immutable: true},
	{name: "cluster-enabled", kind: pBool, def: "no", immutable: true},
	{name: "cluster-node-timeout", kind: pInt, def: "15000", max: math.MaxInt64},
	{name: "cluster-require-full-coverage", kind: pBool, def: "yes"},
	{name: "daemonize", kind: pBool, def: "no", immutable: true},
	{name: "databases", kind: pInt, def: "16", immutable: true},
	{name: "dbfilename", kind: pString, def: "dump.rdb", immutable: true},
	{name: "dir", kind: pString, immutable: true},
	{name: "dynamic-hz", kind: pBool, def: "yes"},
	{name: "enable-debug-command", kind: pEnum, def: "no", enum: []string{"no", "yes", "local"}, immutable: true},
	{name: "hash-max-listpack-entries", kind: pInt, def: "512", max: math.MaxInt64},
	{name: "hash-max-listpack-value", kind: pInt, def: "64", max: math.MaxInt64},
	{name: "hash-max-ziplist-entries", alias: "hash-max-listpack-entries"},
	{name: "hash-max-ziplist-value", alias: "hash-max-listpack-value"},
	{name: "hz", kind: pInt, def: "10", max: maxInt32},
	{name: "io-threads", kind: pInt, def: "1", immutable: true},
	{name: "io-threads-do-reads", kind: pBool, def: "no", immutable: true},
	{name: "latency-monitor-threshold", kind: pInt, def: "0", max: math.MaxInt64},
	{name: "latency-tracking", kind: pBool, def: "yes"},
	{name: "lazyfree-lazy-eviction", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-expire", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-server-del", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-user-del", kind: pBool, def: "no"},
	{name: "lazyfree-lazy-user-flush", kind: pBool, def: "no"},
	{name: "lfu-decay-time", kind: pInt, def: "1", max: maxInt32},
	{name: "lfu-log-factor", kind: pInt, def: "10", max: maxInt32},
	{name: "list-compress-depth", kind: pInt, def: "0", max: maxInt32},
	{name: "list-max-listpack-size", kind: pInt, def: "-2", min: math.MinInt32, max: maxInt32},
	{name: "list-max-ziplist-size", alias: "list-max-listpack-size"},
	{name: "logfile", kind: pString, immutable: true},
	{name: "loglevel", kind: pEnum, def: "notice", enum: []string{"debug", "verbose", "notice", "warning"}},
	{name: "lua-time-limit", alias: "busy-reply-threshold"},
	{name: "masterauth", kind: pString},
	{name: "masteruser", kind: pString},
	{name: "maxclients", kind: pInt, min: 1, max: math.MaxUint32},
	{name: "maxmemory", kind: pMem, def: "0", max: math.MaxInt64},
	{name: "maxmemory-policy", kind: pEnum, def: "noeviction", enum: []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}},
	{name: "maxmemory-samples", kind: pInt, def: "5", min: 1, max: 64},
	{name: "min-replicas-max-lag", kind: pInt, def: "10", max: maxInt32},
	{name: "min-replicas-to-write", kind: pInt, def: "0", max: maxInt32},
	{name: "min-slaves-max-lag", alias: "min-replicas-max-lag"},
	{name: "min-slaves-to-write", alias: "min-replicas-to-write"},
	{name: "notify-keyspace-events", kind: pNotify},
	{name: "pidfile", kind: pString, immutable: true},
	{name: "port", kind: pInt, immutable: true},
	{name: "protected-mode", kind: pBool, def: "yes"},
	{name: "proto-max-bulk-len", kind: pMem, min: 1 << 20, max: math.MaxInt64},
	{name: "rdbchecksum", kind: pBool, def: "yes", immutable: true},
	{name: "rdbcompression", kind: pBool, def: "yes"},
	{name: "repl-backlog-size", kind: pMem, def: "1048576", min: 1, max: math.MaxInt64},
	{name: "repl-diskless-sync", kind: pBool, def: "yes"},
	{name: "repl-timeout", kind: pInt, def: "60", min: 1, max: maxInt32},
	{name: "replica-priority", kind: pInt, def: "100", max: maxInt32},
	{name: "replica-read-only", kind: pBool, def: "yes"},
	{name: "replica-serve-stale-data", kind: pBool, def: "yes"},
	{name: "replicaof", kind: pString, immutable: true},
	{name: "requirepass", kind: pString},
	{name: "save", kind: pSave},
	{name: "set-max-intset-entries", kind: pInt, def: "512", max: math.MaxInt64},
	{name: "shutdown-timeout", kind: pInt, def: "10", max: maxInt32},
	{name: "slave-priority", alias: "replica-priority"},
	{name: "slave-read-only", alias: "replica-read-only"},
	{name: "slave-serve-stale-data", alias: "replica-serve-stale-data"},
	{name: "slaveof", alias: "replicaof"},
	{name: "slowlog-log-slower-than", kind: pInt, def: "10000", min: -1, max: math.MaxInt64},
	{name: "slowlog-max-len", kind: pInt, def: "128", max: math.MaxInt64},
	{name: "stop-writes-on-bgsave-error", kind: pBool, def: "yes"},
	{name: "supervised", kind: pEnum, def: "no", enum: []string{"upstart", "systemd", "auto", "no"}, immutable: true},
	{name: "tcp-backlog", kind: pInt, def: "511", immutable: true},
	{name: "tcp-keepalive", kind: pInt, def: "300", max: maxInt32},
	{name: "timeout", kind: pInt, def: "0", max: maxInt32},
	{name: "tls-auth-clients", kind: pEnum, def: "yes", enum: []string{"no", "yes", "optional"}},
	{name: "tls-ca-cert-dir", kind: pString},
	{name: "tls-ca-cert-file", kind: pString},
	{name: "tls-cert-file", kind: pString},
	{name: "tls-ciphers", kind: pString},
	{name: "tls-ciphersuites", kind: pString},
	{name: "tls-cluster", kind: pBool, def: "no", immutable: true},
	{name: "tls-key-file", kind: pString},
	{name: "tls-key-file-pass", kind: pString},
	{name: "tls-port", kind: pInt, def: "0", immutable: true},
	{name: "tls-prefer-server-ciphers", kind: pBool, def: "no"},
	{name: "tls-protocols", kind: pString},
	{name: "tls-replication", kind: pBool, def: "no", immutable: true},
	{name: "tracking-table-max-keys", kind: pInt, def: "1000000", max: math.MaxInt64},
	{name: "unixsocket", kind: pString, immutable: true},
	{name: "zset-max-listpack-entries", kind: pInt, def: "128", max: math.MaxInt64},
	{name: "zset-max-listpack-value", kind: pInt, def: "64", max: math.MaxInt64},
	{name: "zset-max-ziplist-entries", alias: "zset-max-listpack-entries"},
	{name: "zset-max-ziplist-value", alias: "zset-max-listpack-value"},
}

var paramByName = func() map[string]*configParam {
	m := make(map[string]*configParam, len(configParams))
	for i := range configParams {
		m[configParams[i].name] = &configParams[i]
	}
	return m
}()

// canonical returns the parameter an alias stands for.
func canonical(p *configParam) *configParam {
	if p.alias != "" {
		return paramByName[p.alias]
	}
	return p
}

// configGet returns a parameter's current value.
func (s *Server) configGet(p *configParam) string {
	p = canonical(p)
	s.adm.mu.Lock()
	v, set := s.adm.params[p.name]
	s.adm.mu.Unlock()
	if set {
		return v
	}
	if v, ok := s.cfg.ConfigParams[p.name]; ok {
		return v
	}
	if v, ok := s.tlsConfigGet(p.name); ok {
		return v
	}
	if sr, ok := s.backend.(SettingsReader); ok && fsm.IsReplicatedSetting(p.name) {
		return sr.Setting(p.name)
	}
	switch p.name {
	case "port", "bind":
		host, port := "", "0"
		if s.ln != nil {
			if h, pt, err := net.SplitHostPort(s.ln.Addr().String()); err == nil {
				host, port = h, pt
			}
		}
		if p.name == "port" {
			return port
		}
		return host
	case "dir":
		wd, _ := os.Getwd()
		return wd
	case "requirepass":
		return s.requirePass()
	case "protected-mode":
		if s.adm.protected.Load() {
			return "yes"
		}
		return "no"
	case "maxclients":
		s.mu.Lock()
		defer s.mu.Unlock()
		return strconv.Itoa(s.cfg.MaxClients)
	case "proto-max-bulk-len":
		s.mu.Lock()
		defer s.mu.Unlock()
		return strconv.FormatInt(s.cfg.MaxBulkLen, 10)
	case "client-query-buffer-limit":
		s.mu.Lock()
		defer s.mu.Unlock()
		return strconv.FormatInt(s.cfg.MaxQueryBuffer, 10)
	case "client-output-buffer-limit":
		return "normal 0 0 0 slave 268435456 67108864 60 pubsub " + strconv.FormatInt(s.adm.pubsubLimit.Load(), 10) + " 8388608 60"
	}
	return p.def
}

func cmdConfig(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "get":
		configGetCmd(c, args[2:])
	case "set":
		configSetCmd(c, args[2:])
	case "resetstat":
		c.srv.resetStats()
		// RESETSTAT itself counts in the new statistics, as in Redis.
		c.adm.stat = c.srv.cmdStats.table().slot(0, c.lastCmd)
		c.reply(resp.OK)
	case "rewrite":
		if c.srv.cfg.ConfigParams["config"] != "" {
			// --config: the file is the operator's, and CONFIG SET's
			// replicated changes live in the log, not in it.
			c.reply(resp.Err("ERR CONFIG REWRITE is not supported: deadbolt does not write its configuration file"))
			return
		}
		c.reply(resp.Err("ERR The server is running without a config file"))
	case "help":
		c.reply(helpReply("CONFIG", []string{
			"GET <pattern>",
			"    Return parameters matching the glob-like <pattern> and their values.",
			"SET <directive> <value>",
			"    Set the configuration <directive> to <value>.",
			"RESETSTAT",
			"    Reset statistics reported by the INFO command.",
			"REWRITE",
			"    Rewrite the configuration file.",
		}))
	default:
		c.reply(unknownSubcommand(args))
	}
}

// configGetCmd answers CONFIG GET pattern...: a parameter named exactly is
// reported under the name as given, glob patterns match names without
// regard to case; each parameter once.
func configGetCmd(c *conn, patterns [][]byte) {
	seen := make(map[string]bool)
	var out []resp.Reply
	add := func(key string, p *configParam) {
		if seen[p.name] {
			return
		}
		seen[p.name] = true
		out = append(out, resp.BulkString(key), resp.BulkString(c.srv.configGet(p)))
	}
	for _, pat := range patterns {
		lower := strings.ToLower(string(pat))
		if !strings.ContainsAny(lower, "[*?") {
			if p := c.srv.lookupParam(lower); p != nil {
				add(string(pat), p)
			}
			continue
		}
		for i := range configParams {
			p := &configParams[i]
			if globMatch(lower, p.name) {
				add(p.name, p)
			}
		}
		for _, p := range c.srv.ownParams() {
			if globMatch(lower, p.name) {
				add(p.name, p)
			}
		}
	}
	c.reply(resp.MapReply(out...))
}

// configSetCmd answers CONFIG SET name value [name value ...]: all or
// nothing, as Redis 7.0 does.
func configSetCmd(c *conn, pairs [][]byte) {
	if len(pairs)%2 != 0 {
		c.reply(resp.Err("ERR syntax error"))
		return
	}
	type change struct {
		p   *configParam
		arg string
		val string
	}
	var changes []change
	seen := make(map[string]bool)
	for i := 0; i < len(pairs); i += 2 {
		arg := string(pairs[i])
		p := c.srv.lookupParam(strings.ToLower(arg))
		if p == nil {
			c.reply(resp.Err("ERR Unknown option or number of arguments for CONFIG SET - '" + truncate(arg, 128) + "'"))
			return
		}
		p = canonical(p)
		if p.immutable {
			c.reply(configSetErr(arg, "can't set immutable config"))
			return
		}
		if seen[p.name] {
			c.reply(configSetErr(arg, "duplicate parameter"))
			return
		}
		seen[p.name] = true
		changes = append(changes, change{p: p, arg: arg, val: string(pairs[i+1])})
	}
	for i := range changes {
		v, msg := normalizeParam(changes[i].p, changes[i].val)
		if msg != "" {
			c.reply(configSetErr(changes[i].arg, msg))
			return
		}
		changes[i].val = v
		if changes[i].p.name == "maxmemory-policy" && v != "noeviction" {
			c.reply(configSetErr(changes[i].arg, msgPolicy))
			return
		}
	}
	s := c.srv
	for _, ch := range changes {
		if fsm.IsReplicatedSetting(ch.p.name) {
			if r := s.setReplicated(ch.p.name, ch.val); r.IsError() {
				c.reply(r)
				return
			}
		}
	}
	for _, ch := range changes {
		// The default user's password is replicated, as every ACL user.
		if ch.p.name == "requirepass" {
			if r, ok := c.aclApply(fsm.ACLPasswordCommand(ch.val)); !ok {
				c.reply(r)
				return
			}
		}
	}
	var tlsNames, tlsVals []string
	for _, ch := range changes {
		if isTLSParam(ch.p.name) {
			tlsNames, tlsVals = append(tlsNames, ch.p.name), append(tlsVals, ch.val)
		}
	}
	if r := s.setTLS(tlsNames, tlsVals); r.IsError() {
		c.reply(r)
		return
	}
	for _, ch := range changes {
		if s.cfg.TLS != nil && isTLSParam(ch.p.name) || fsm.IsReplicatedSetting(ch.p.name) {
			continue // in the loader's options, or in the state machine
		}
		s.applyParam(ch.p, ch.val)
	}
	c.reply(resp.OK)
}

// SettingsReader is implemented by backends that keep replicated CONFIG
// parameters (notify-keyspace-events): every node has the value of the
// log entries it applied.
type SettingsReader interface {
	Setting(name string) string
}

// setReplicated sets a replicated parameter through the backend (the
// log), so that every node applies it at the same point.
func (s *Server) setReplicated(name, value string) resp.Reply {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommandTimeout)
	defer cancel()
	res, err := s.backend.Apply(ctx, fsm.SetConfigCommand(name, value))
	if err != nil {
		return resp.Err(errorText(err))
	}
	if res.Reply.IsError() {
		return res.Reply
	}
	if err := s.appliedHere(ctx, res); err != nil {
		return resp.Err(errorText(err))
	}
	return resp.Reply{}
}

// AppliedWaiter is implemented by backends where a write may be applied
// elsewhere first (a follower forwards it to the leader).
type AppliedWaiter interface {
	WaitApplied(ctx context.Context, index uint64) error
}

// appliedHere waits until this node has applied res's entry, so that a
// configuration change made through a follower (CONFIG SET of a
// replicated setting, ACL SETUSER) reads back on it at once.
func (s *Server) appliedHere(ctx context.Context, res fsm.Result) error {
	w, ok := s.backend.(AppliedWaiter)
	if !ok || res.LogIndex == 0 {
		return nil
	}
	return w.WaitApplied(ctx, res.LogIndex)
}

// msgPolicy refuses an eviction policy: a lock server must never drop a
// key (a lock) to make room, so a write over maxmemory is refused instead.
const msgPolicy = "deadbolt evicts no key: noeviction is its only maxmemory-policy (a write over maxmemory is refused)"

func configSetErr(arg, msg string) resp.Reply {
	return resp.Err("ERR CONFIG SET failed (possibly related to argument '" + truncate(arg, 128) + "') - " + msg)
}

// normalizeParam checks a value and returns it as CONFIG GET shows it, or
// Redis's reason for refusing it.
func normalizeParam(p *configParam, v string) (string, string) {
	switch p.kind {
	case pBool:
		switch strings.ToLower(v) {
		case "yes":
			return "yes", ""
		case "no":
			return "no", ""
		}
		return "", "argument must be 'yes' or 'no'"
	case pEnum:
		for _, e := range p.enum {
			if strings.EqualFold(v, e) {
				return e, ""
			}
		}
		return "", "argument(s) must be one of the following: " + strings.Join(p.enum, ", ")
	case pInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", "argument couldn't be parsed into an integer"
		}
		if p.name == "hz" {
			n = min(max(n, 1), 500)
		}
		if n < p.min || n > p.max {
			return "", rangeMsg(p)
		}
		return strconv.FormatInt(n, 10), ""
	case pMem:
		n, ok := parseMemory(v)
		if !ok {
			return "", "argument must be a memory value"
		}
		if n < p.min || n > p.max {
			return "", rangeMsg(p)
		}
		return strconv.FormatInt(n, 10), ""
	case pSave:
		f := strings.Fields(v)
		if len(f)%2 != 0 {
			return "", "Invalid save parameters"
		}
		for _, x := range f {
			if n, err := strconv.ParseInt(x, 10, 64); err != nil || n < 0 {
				return "", "Invalid save parameters"
			}
		}
		return strings.Join(f, " "), ""
	case pCOBL:
		if msg := cobl(v); msg != "" {
			return "", msg
		}
		return v, ""
	case pNotify:
		if _, ok := fsm.ParseNotifyFlags(v); !ok {
			return "", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
		}
		return v, "" // as given: CONFIG GET prints it without n after A, but n stays on
	}
	return v, ""
}

func rangeMsg(p *configParam) string {
	return "argument must be between " + strconv.FormatInt(p.min, 10) + " and " + strconv.FormatInt(p.max, 10) + " inclusive"
}

// cobl checks a client-output-buffer-limit value; only the pubsub class's
// hard limit is applied (see applyParam).
func cobl(v string) string {
	f := strings.Fields(v)
	if len(f)%4 != 0 || len(f) == 0 {
		return "Wrong number of arguments in buffer limit configuration."
	}
	for i := 0; i < len(f); i += 4 {
		switch strings.ToLower(f[i]) {
		case "normal", "slave", "replica", "pubsub":
		default:
			return "Invalid client class specified in buffer limit configuration."
		}
		_, ok1 := parseMemory(f[i+1])
		_, ok2 := parseMemory(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil || secs < 0 {
			return "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
	}
	return ""
}

// parseMemory reads a memory value as Redis's memtoull: digits and an
// optional unit b, k, kb, m, mb, g, gb (k = 1000, kb = 1024).
func parseMemory(v string) (int64, bool) {
	lower := strings.ToLower(v)
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mul = strings.TrimSuffix(lower, u.suffix), u.mul
			break
		}
	}
	if lower == "" || strings.TrimLeft(lower, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n > math.MaxInt64/mul {
		return 0, false
	}
	return n * mul, true
}

// applyParam stores a checked value and applies those the server uses.
func (s *Server) applyParam(p *configParam, v string) {
	switch p.name {
	case "requirepass":
		s.adm.requirePass.Store(&v)
	case "maxclients":
		n, _ := strconv.Atoi(v)
		s.mu.Lock()
		s.cfg.MaxClients = n
		s.mu.Unlock()
		return
	case "proto-max-bulk-len", "client-query-buffer-limit":
		n, _ := strconv.ParseInt(v, 10, 64)
		s.mu.Lock()
		if p.name == "proto-max-bulk-len" {
			s.cfg.MaxBulkLen = n
		} else {
			s.cfg.MaxQueryBuffer = n
			s.adm.queryLimit.Store(n)
		}
		s.mu.Unlock()
		return
	case "client-output-buffer-limit":
		applyCOBL(s, v)
		return
	case "protected-mode":
		s.adm.protected.Store(v == "yes")
	case "slowlog-log-slower-than", "slowlog-max-len":
		s.slow.configure(p.name, v)
	}
	s.adm.mu.Lock()
	s.adm.params[p.name] = v
	s.adm.mu.Unlock()
}

// applyCOBL merges a checked client-output-buffer-limit value into the
// current one, class by class, as Redis does.
func applyCOBL(s *Server, v string) {
	p := paramByName["client-output-buffer-limit"]
	cur := strings.Fields(s.configGet(p))
	limits := make(map[string]string)
	for i := 0; i+3 < len(cur); i += 4 {
		limits[cur[i]] = strings.Join(cur[i+1:i+4], " ")
	}
	f := strings.Fields(v)
	for i := 0; i+3 < len(f); i += 4 {
		class := strings.ToLower(f[i])
		if class == "replica" {
			class = "slave"
		}
		hard, _ := parseMemory(f[i+1])
		soft, _ := parseMemory(f[i+2])
		secs, _ := strconv.ParseInt(f[i+3], 10, 64)
		limits[class] = strconv.FormatInt(hard, 10) + " " + strconv.FormatInt(soft, 10) + " " + strconv.FormatInt(secs, 10)
		if class == "pubsub" {
			s.adm.pubsubLimit.Store(hard)
		}
	}
	val := "normal " + limits["normal"] + " slave " + limits["slave"] + " pubsub " + limits["pubsub"]
	s.adm.mu.Lock()
	s.adm.params[p.name] = val
	s.adm.mu.Unlock()
}
