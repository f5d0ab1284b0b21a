package server

import (
	"context"
	"errors"
	"github.com/deadbolt/deadbolt/acl"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	registerConn(
		connSpec{name: "wait", arity: 3, flags: mayBlock, fn: cmdWait},
		connSpec{name: "waitaof", arity: 4, flags: mayBlock, fn: cmdWaitAOF},
		connSpec{name: "role", arity: 1, fn: cmdRole},
		connSpec{name: "lastsave", arity: 1, fn: cmdLastSave},
		connSpec{name: "save", arity: 1, flags: connAdmin | noMulti, fn: cmdSave},
		connSpec{name: "bgsave", arity: -1, flags: connAdmin, fn: cmdBgSave},
		connSpec{name: "bgrewriteaof", arity: 1, flags: connAdmin, fn: cmdBgRewriteAOF},
		connSpec{name: "debug", arity: -2, flags: connAdmin | mayBlock, fn: cmdDebug},
		connSpec{name: "memory", arity: -2, fn: cmdMemory},
		connSpec{name: "monitor", arity: 1, flags: connAdmin, fn: cmdMonitor},
		connSpec{name: "readonly", arity: 1, flags: connLocal, fn: cmdReadOnly},
		connSpec{name: "readwrite", arity: 1, flags: connLocal, fn: cmdReadWrite},
		connSpec{name: "asking", arity: 1, flags: connLocal, fn: cmdAsking},
		connSpec{name: "latency", arity: -2, flags: connAdmin, fn: cmdLatency},
	)
}

// Waiter is implemented by a backend whose writes reach followers (a Raft
// cluster). WAIT asks it how many followers have this node's writes.
// Without it a node has no replicas and WAIT answers 0 at once.
type Waiter interface {
	// Wait waits until numReplicas followers have every write this node
	// acknowledged so far, or until timeout passes (0: no limit) or ctx
	// ends, and returns how many have them.
	Wait(ctx context.Context, numReplicas int, timeout time.Duration) (int, error)
}

// AOFWaiter is implemented by a backend that writes its log to disk.
// WAITAOF asks it; without it the node has no append-only file (Redis's
// appendonly no) and no replicas.
type AOFWaiter interface {
	// WaitAOF waits until this node's own log (numLocal, 0 or 1) and
	// numReplicas followers have every write acknowledged so far on disk,
	// or until timeout passes (0: no limit) or ctx ends. It returns how
	// many did: local is 0 or 1. An error carrying a RedisError (such as
	// WAITAOF's "numlocal is set but appendonly is disabled") is sent as
	// it is.
	WaitAOF(ctx context.Context, numLocal, numReplicas int, timeout time.Duration) (local, replicas int, err error)
}

// Saver is implemented by a backend that can write a snapshot of the
// state machine on request (SAVE, BGSAVE).
type Saver interface {
	Save(ctx context.Context) error
}

// adminState is the server's state behind CLIENT, CONFIG and the other
// administrative commands.
type adminState struct {
	ctx    context.Context // ends when the server closes: blocking commands give up
	cancel context.CancelFunc

	requirePass   atomic.Pointer[string]    // CONFIG GET requirepass
	ownUsers      atomic.Pointer[acl.Users] // users of a backend without its own (acl.go)
	protected     atomic.Bool               // protected-mode (protected.go)
	pubsubLimit   atomic.Int64              // client-output-buffer-limit pubsub hard limit; 0 none
	queryLimit    atomic.Int64              // client-query-buffer-limit, read by the event loop
	lastSave      atomic.Int64              // Unix seconds
	shutdownAsked atomic.Bool               // a client's SHUTDOWN called Config.Shutdown (cmd_shutdown.go)
	dirty         atomic.Int64              // writes since the last SAVE
	replID        string                    // master_replid

	mu     sync.Mutex
	params map[string]string // CONFIG SET values by canonical name
}

func (s *Server) initAdmin() {
	a := &s.adm
	a.ctx, a.cancel = context.WithCancel(context.Background())
	pass := s.cfg.RequirePass
	a.requirePass.Store(&pass)
	users := s.cfg.Users
	if users == nil {
		users = acl.NewUsers()
		if pass != "" {
			users = users.WithDefaultPassword(pass)
		}
	}
	a.ownUsers.Store(users)
	go s.watchUsers(a.ctx.Done())
	a.protected.Store(s.cfg.ProtectedMode)
	a.pubsubLimit.Store(int64(s.cfg.PubSubOutputLimit))
	a.queryLimit.Store(s.cfg.MaxQueryBuffer)
	a.lastSave.Store(time.Now().Unix())
	a.replID = newRunID()
	a.params = make(map[string]string)
	for _, name := range []string{"slowlog-log-slower-than", "slowlog-max-len"} {
		s.slow.configure(name, paramByName[name].def)
	}
}

// requirePass is requirepass as CONFIG GET shows it: the last value set
// on this node (the default user's password itself is replicated).
func (s *Server) requirePass() string { return *s.adm.requirePass.Load() }

// pubsubOutputLimit is the backlog past which a subscriber is dropped.
func (s *Server) pubsubOutputLimit() int {
	n := s.adm.pubsubLimit.Load()
	if n <= 0 || n > math.MaxInt32 {
		return math.MaxInt
	}
	return int(n)
}

// ---- WAIT, WAITAOF, ROLE ----

func cmdWait(c *conn, args [][]byte) {
	n, err := parseInt(args[1])
	if err != nil {
		c.reply(resp.Err(msgNotInt))
		return
	}
	timeout, ok := parseTimeout(c, args[2])
	if !ok {
		return
	}
	if c.execing != nil {
		// Inside EXEC Redis does not block: it answers how many replicas
		// have acknowledged so far. A millisecond is as close as a count
		// taken on the leader comes (multi.go).
		timeout = time.Millisecond
	}
	// A cluster's followers forward writes, and WAIT, to the leader.
	if _, fwd := c.srv.backend.(Waiter); !fwd && c.srv.role() != "master" {
		c.reply(resp.Err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."))
		return
	}
	w, ok := c.srv.backend.(Waiter)
	if !ok {
		c.reply(resp.Zero)
		return
	}
	got, err := w.Wait(c.srv.adm.ctx, int(min(max(n, 0), math.MaxInt32)), timeout)
	if err != nil {
		c.reply(resp.Err(errorText(err)))
		return
	}
	c.reply(resp.IntReply(int64(got)))
}

// cmdWaitAOF is WAITAOF numlocal numreplicas timeout, as Redis 7.2 has it.
func cmdWaitAOF(c *conn, args [][]byte) {
	local, err := parseInt(args[1])
	if err != nil {
		c.reply(resp.Err(msgNotInt))
		return
	}
	if local < 0 || local > 1 {
		c.reply(resp.Err("ERR value is out of range, value must between 0 and 1"))
		return
	}
	replicas, err := parseInt(args[2])
	if err != nil {
		c.reply(resp.Err(msgNotInt))
		return
	}
	if replicas < 0 {
		c.reply(resp.Err("ERR value is out of range, must be positive"))
		return
	}
	timeout, ok := parseTimeout(c, args[3])
	if !ok {
		return
	}
	if _, fwd := c.srv.backend.(AOFWaiter); !fwd && c.srv.role() != "master" {
		c.reply(resp.Err("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated."))
		return
	}
	w, ok := c.srv.backend.(AOFWaiter)
	if !ok {
		if local > 0 {
			c.reply(resp.Err("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."))
			return
		}
		c.reply(resp.ArrayReply(resp.Zero, resp.Zero))
		return
	}
	gotLocal, gotReplicas, err := w.WaitAOF(c.srv.adm.ctx, int(local), int(min(replicas, math.MaxInt32)), timeout)
	if err != nil {
		c.reply(resp.Err(errorText(err)))
		return
	}
	c.reply(resp.ArrayReply(resp.IntReply(int64(gotLocal)), resp.IntReply(int64(gotReplicas))))
}

func cmdRole(c *conn, _ [][]byte) {
	if c.srv.cfg.Info != nil {
		c.reply(c.srv.cfg.Info.Role())
		return
	}
	c.reply(resp.ArrayReply(resp.BulkString("master"), resp.Zero, resp.EmptyArr))
}

// ---- persistence ----

func cmdLastSave(c *conn, _ [][]byte) { c.reply(resp.IntReply(c.srv.adm.lastSave.Load())) }

// save asks the backend for a snapshot, if it can take one; an in-memory
// node has nothing to write.
// InMemory is implemented by a backend that keeps nothing on disk (a
// single node without --data-dir): SAVE and BGSAVE say that nothing is
// saved instead of pretending.
type InMemory interface {
	InMemory() bool
}

// errNothingSaved is SAVE's and BGSAVE's answer on a node without a disk.
var errNothingSaved = errors.New("this node keeps its data in memory only (started without --data-dir): nothing is saved, and a restart starts empty")

func (s *Server) inMemory() bool {
	m, ok := s.backend.(InMemory)
	return ok && m.InMemory()
}

func (s *Server) save() error {
	if s.inMemory() {
		return errNothingSaved
	}
	if sv, ok := s.backend.(Saver); ok {
		ctx, cancel := context.WithTimeout(s.adm.ctx, s.cfg.CommandTimeout)
		defer cancel()
		if err := sv.Save(ctx); err != nil {
			return err
		}
	}
	s.adm.dirty.Store(0)
	s.adm.lastSave.Store(time.Now().Unix())
	return nil
}

func cmdSave(c *conn, _ [][]byte) {
	if err := c.srv.save(); err != nil {
		c.reply(resp.Err(errorText(err)))
		return
	}
	c.reply(resp.OK)
}

func cmdBgSave(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(string(args[1]), "schedule")) {
		c.reply(resp.Err("ERR syntax error"))
		return
	}
	s := c.srv
	if s.inMemory() {
		c.reply(resp.Err(errorText(errNothingSaved)))
		return
	}
	go func() {
		if err := s.save(); err != nil {
			s.cfg.Logger.Warn("server: BGSAVE failed", "err", err)
		}
	}()
	c.reply(resp.StatusReply("Background saving started"))
}

func cmdBgRewriteAOF(c *conn, _ [][]byte) {
	c.reply(resp.StatusReply("Background append only file rewriting started"))
}

// ---- DEBUG, MEMORY, MONITOR, cluster client commands (SHUTDOWN: cmd_shutdown.go) ----

func cmdDebug(c *conn, args [][]byte) {
	if why := c.debugRefusal(); why != "" {
		c.reply(resp.Err(why)) // Redis 7.0 refuses every subcommand, HELP too
		return
	}
	switch strings.ToLower(string(args[1])) {
	case "sleep":
		if len(args) != 3 {
			c.reply(subcommandSyntaxError(args))
			return
		}
		// As Redis's strtod: an unparsable number sleeps 0 s. Only this
		// connection waits, not the whole node.
		sec, _ := strconv.ParseFloat(string(args[2]), 64)
		if sec > 0 {
			d := time.Duration(min(sec, 3600) * float64(time.Second))
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.srv.adm.ctx.Done():
				t.Stop()
			}
		}
		c.reply(resp.OK)
	case "help":
		c.reply(helpReply("DEBUG", []string{
			"SLEEP <seconds>",
			"    Stop the server for <seconds>. Decimals allowed.",
		}))
	default:
		c.reply(resp.Err("ERR unknown subcommand '" + truncate(string(args[1]), 128) + "'. Try DEBUG HELP."))
	}
}

func cmdMemory(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "usage":
		// The state machine's (fsm/memusage.go): inside MULTI it is queued
		// with the keyspace commands (multi.go).
		res, err := c.srv.backend.Read(context.Background(), fsm.Command{DB: c.db, Args: fsm.MemoryUsageArgs(args[2:]), User: c.scriptUser()})
		if err != nil {
			c.reply(resp.Err(errorText(err)))
			return
		}
		c.reply(res.Reply)
	case "stats":
		m := readMem()
		keys := 0
		if ks, ok := c.srv.backend.(KeyspaceStats); ok {
			for db := range fsm.NumDBs {
				n, _ := ks.KeyspaceStats(db)
				keys += n
			}
		}
		perKey := int64(0)
		if keys > 0 {
			perKey = int64(m.used) / int64(keys)
		}
		c.reply(resp.MapReply(
			resp.BulkString("peak.allocated"), resp.IntReply(int64(m.peak)),
			resp.BulkString("total.allocated"), resp.IntReply(int64(m.used)),
			resp.BulkString("startup.allocated"), resp.Zero,
			resp.BulkString("replication.backlog"), resp.Zero,
			resp.BulkString("clients.slaves"), resp.Zero,
			resp.BulkString("clients.normal"), resp.Zero,
			resp.BulkString("cluster.links"), resp.Zero,
			resp.BulkString("aof.buffer"), resp.Zero,
			resp.BulkString("lua.caches"), resp.Zero,
			resp.BulkString("functions.caches"), resp.Zero,
			resp.BulkString("overhead.total"), resp.Zero,
			resp.BulkString("keys.count"), resp.IntReply(int64(keys)),
			resp.BulkString("keys.bytes-per-key"), resp.IntReply(perKey),
			resp.BulkString("dataset.bytes"), resp.IntReply(int64(m.used)),
			resp.BulkString("dataset.percentage"), resp.BulkString("100"),
			resp.BulkString("peak.percentage"), resp.BulkString(strconv.FormatFloat(m.peakPerc(), 'f', -1, 64)),
			resp.BulkString("fragmentation"), resp.BulkString(strconv.FormatFloat(m.fragRatio(), 'f', 2, 64)),
		))
	case "doctor":
		c.reply(resp.VerbatimReply("txt", "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"))
	case "malloc-stats":
		c.reply(resp.VerbatimReply("txt", "Stats not supported for the current allocator\n"))
	case "purge":
		c.reply(resp.OK)
	case "help":
		c.reply(helpReply("MEMORY", []string{
			"DOCTOR",
			"    Return memory problems reports.",
			"MALLOC-STATS",
			"    Return internal statistics report from the memory allocator.",
			"PURGE",
			"    Attempt to purge dirty pages for reclamation by the allocator.",
			"STATS",
			"    Return information about the memory usage of the server.",
			"USAGE <key> [SAMPLES <count>]",
			"    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).",
		}))
	default:
		c.reply(unknownSubcommand(args))
	}
}

func cmdMonitor(c *conn, _ [][]byte) {
	c.reply(resp.Err("ERR MONITOR is not supported by deadbolt"))
}

// READONLY, READWRITE and ASKING are sent by cluster-mode clients; every
// node serves reads and writes, so they only change what CLIENT LIST shows.
func cmdReadOnly(c *conn, _ [][]byte) {
	c.adm.readonly = true
	c.reply(resp.OK)
}

func cmdReadWrite(c *conn, _ [][]byte) {
	c.adm.readonly = false
	c.reply(resp.OK)
}

func cmdAsking(c *conn, _ [][]byte) { c.reply(resp.OK) }

// ---- LATENCY: nothing is recorded (SLOWLOG: slowlog.go) ----

func cmdLatency(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "latest", "history", "histogram":
		c.reply(resp.EmptyArr)
	case "reset":
		c.reply(resp.Zero)
	case "graph":
		c.reply(resp.Err("ERR No samples available for event '" + truncate(string(args[2]), 128) + "'"))
	case "doctor":
		c.reply(resp.VerbatimReply("txt", "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"))
	case "help":
		c.reply(helpReply("LATENCY", []string{
			"DOCTOR",
			"    Return a human readable latency analysis report.",
			"GRAPH <event>",
			"    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>",
			"    Return time-latency samples for the <event> class.",
			"LATEST",
			"    Return the latest latency samples for all events.",
			"RESET [<event> ...]",
			"    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]",
			"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.",
		}))
	default:
		c.reply(unknownSubcommand(args))
	}
}
