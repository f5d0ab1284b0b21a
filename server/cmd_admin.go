package server

import (
	"context"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	registerConn(
		connSpec{name: "client", arity: -2, flags: connAdmin, fn: cmdClient},
		connSpec{name: "config", arity: -2, flags: connAdmin, fn: cmdConfig},
		connSpec{name: "wait", arity: 3, flags: mayBlock, fn: cmdWait},
		connSpec{name: "waitaof", arity: 4, flags: mayBlock, fn: cmdWaitAOF},
		connSpec{name: "role", arity: 1, fn: cmdRole},
		connSpec{name: "lastsave", arity: 1, fn: cmdLastSave},
		connSpec{name: "save", arity: 1, flags: connAdmin, fn: cmdSave},
		connSpec{name: "bgsave", arity: -1, flags: connAdmin, fn: cmdBgSave},
		connSpec{name: "bgrewriteaof", arity: 1, flags: connAdmin, fn: cmdBgRewriteAOF},
		connSpec{name: "debug", arity: -2, flags: connAdmin | mayBlock, fn: cmdDebug},
		connSpec{name: "memory", arity: -2, fn: cmdMemory},
		connSpec{name: "shutdown", arity: -1, flags: connAdmin, fn: cmdShutdown},
		connSpec{name: "monitor", arity: 1, flags: connAdmin, fn: cmdMonitor},
		connSpec{name: "readonly", arity: 1, flags: connLocal, fn: cmdReadOnly},
		connSpec{name: "readwrite", arity: 1, flags: connLocal, fn: cmdReadWrite},
		connSpec{name: "asking", arity: 1, flags: connLocal, fn: cmdAsking},
		connSpec{name: "latency", arity: -2, flags: connAdmin, fn: cmdLatency},
		connSpec{name: "slowlog", arity: -2, flags: connAdmin, fn: cmdSlowlog},
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

	requirePass atomic.Pointer[string]
	pubsubLimit atomic.Int64 // client-output-buffer-limit pubsub hard limit; 0 none
	queryLimit  atomic.Int64 // client-query-buffer-limit, read by the event loop
	lastSave    atomic.Int64 // Unix seconds
	dirty       atomic.Int64 // writes since the last SAVE
	replID      string       // master_replid

	mu     sync.Mutex
	params map[string]string // CONFIG SET values by canonical name
}

func (s *Server) initAdmin() {
	a := &s.adm
	a.ctx, a.cancel = context.WithCancel(context.Background())
	pass := s.cfg.RequirePass
	a.requirePass.Store(&pass)
	a.pubsubLimit.Store(int64(s.cfg.PubSubOutputLimit))
	a.queryLimit.Store(s.cfg.MaxQueryBuffer)
	a.lastSave.Store(time.Now().Unix())
	a.replID = newRunID()
	a.params = make(map[string]string)
}

// requirePass is the password clients must AUTH with, "" for none.
func (s *Server) requirePass() string { return *s.adm.requirePass.Load() }

// pubsubOutputLimit is the backlog past which a subscriber is dropped.
func (s *Server) pubsubOutputLimit() int {
	n := s.adm.pubsubLimit.Load()
	if n <= 0 || n > math.MaxInt32 {
		return math.MaxInt
	}
	return int(n)
}

// clientState is a connection's state for CLIENT and friends.
type clientState struct {
	// Owned by the connection's goroutine.
	replyOff  bool // CLIENT REPLY OFF
	skipNext  bool // CLIENT REPLY SKIP: the next command's replies are dropped
	skipThis  bool
	readonly  bool // READONLY (cluster replica reads)
	noEvict   bool
	noTouch   bool
	rejected  bool      // the current command was refused before it ran
	errPrefix string    // first word of the current command's last error reply
	spec      *fsm.Spec // the current command's, if the state machine runs it

	// Guarded by conn.mu: CLIENT LIST on other connections reads them.
	libName, libVer string
	view            connView
}

// connView is what other connections see of one between its commands.
type connView struct {
	db, multi, multiMem int
	cmd                 string
	readonly, noEvict   bool
	noTouch             bool
}

// beginCommand starts a request: CLIENT REPLY SKIP applies to this one.
func (a *clientState) beginCommand() {
	a.skipThis, a.skipNext = a.skipNext, false
	a.rejected, a.errPrefix, a.spec = false, "", nil
}

// quiet reports whether replies are being dropped (CLIENT REPLY OFF/SKIP).
func (a *clientState) quiet() bool { return a.replyOff || a.skipThis }

func (a *clientState) noteError(msg []byte) {
	word := msg
	for i, ch := range msg {
		if ch == ' ' {
			word = msg[:i]
			break
		}
	}
	a.errPrefix = string(word)
	if a.errPrefix == "" {
		a.errPrefix = "ERR"
	}
}

// endCommand records a finished request in the statistics and publishes
// the connection's state for CLIENT LIST.
func (c *conn) endCommand(took time.Duration) {
	a := &c.adm
	a.skipThis = false
	s := c.srv
	name := c.lastCmd
	failed := a.errPrefix != ""
	if failed {
		s.errStats.record(a.errPrefix)
	}
	if name != "" {
		s.cmdStats.record(name, took, a.rejected, failed)
	}
	if !failed && c.multi == nil && (name == "exec" || a.spec != nil && a.spec.Flags&(fsm.Write|fsm.PubSub) == fsm.Write) {
		s.adm.dirty.Add(1) // a write, roughly as Redis counts changes
	}
	v := c.liveView()
	c.mu.Lock()
	a.view = v
	c.mu.Unlock()
}

// liveView is the connection's state; only its own goroutine may call it.
func (c *conn) liveView() connView {
	v := connView{db: c.db, multi: -1, cmd: c.lastCmd, readonly: c.adm.readonly, noEvict: c.adm.noEvict, noTouch: c.adm.noTouch}
	if c.multi != nil {
		v.multi = len(c.multi.queued)
		for _, q := range c.multi.queued {
			for _, a := range q {
				v.multiMem += len(a)
			}
		}
	}
	if v.cmd == "" {
		v.cmd = "NULL"
	}
	return v
}

// ---- CLIENT ----

func cmdClient(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "id":
		c.reply(resp.IntReply(int64(c.id)))
	case "getname":
		c.mu.Lock()
		name := c.name
		c.mu.Unlock()
		if name == "" {
			c.reply(resp.NilReply)
		} else {
			c.reply(resp.BulkString(name))
		}
	case "setname":
		if msg := validClientName(args[2]); msg != "" {
			c.reply(resp.Err(msg))
			return
		}
		c.mu.Lock()
		c.name = string(args[2])
		c.mu.Unlock()
		c.reply(resp.OK)
	case "setinfo":
		clientSetInfo(c, args)
	case "info":
		c.reply(resp.BulkString(c.srv.clientLine(c, c, args) + "\n"))
	case "list":
		clientList(c, args)
	case "kill":
		clientKill(c, args)
	case "reply":
		switch strings.ToLower(string(args[2])) {
		case "on":
			c.adm.replyOff, c.adm.skipNext, c.adm.skipThis = false, false, false
			c.reply(resp.OK)
		case "off":
			c.adm.replyOff = true
		case "skip":
			if !c.adm.replyOff {
				c.adm.skipNext = true
			}
		default:
			c.reply(resp.Err("ERR syntax error"))
		}
	case "no-evict", "no-touch":
		on, ok := onOff(args[2])
		if !ok {
			c.reply(resp.Err("ERR syntax error"))
			return
		}
		if sub == "no-evict" {
			c.adm.noEvict = on
		} else {
			c.adm.noTouch = on
		}
		c.reply(resp.OK)
	case "pause":
		// Accepted and ignored: a deadbolt node never stops serving
		// clients to let a replica catch up.
		if _, ok := parseTimeout(c, args[2]); !ok {
			return
		}
		if len(args) == 4 {
			mode := strings.ToLower(string(args[3]))
			if mode != "write" && mode != "all" {
				c.reply(resp.Err("ERR CLIENT PAUSE mode must be WRITE or ALL"))
				return
			}
		} else if len(args) > 4 {
			c.reply(resp.Err("ERR syntax error"))
			return
		}
		c.reply(resp.OK)
	case "unpause":
		c.reply(resp.OK)
	case "tracking":
		on, ok := onOff(args[2])
		switch {
		case !ok:
			c.reply(resp.Err("ERR syntax error"))
		case on:
			c.reply(resp.Err("ERR CLIENT TRACKING (client side caching) is not supported by deadbolt"))
		default:
			c.reply(resp.OK)
		}
	case "caching":
		c.reply(resp.Err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"))
	case "getredir":
		c.reply(resp.IntReply(-1))
	case "trackinginfo":
		c.reply(resp.ArrayReply(
			resp.BulkString("flags"), resp.ArrayReply(resp.BulkString("off")),
			resp.BulkString("redirect"), resp.IntReply(-1),
			resp.BulkString("prefixes"), resp.EmptyArr,
		))
	case "unblock":
		if len(args) == 4 {
			r := strings.ToLower(string(args[3]))
			if r != "timeout" && r != "error" {
				c.reply(resp.Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"))
				return
			}
		}
		if _, err := strconv.ParseInt(string(args[2]), 10, 64); err != nil {
			c.reply(resp.Err(msgNotInt))
			return
		}
		c.reply(resp.Zero) // nothing blocks in deadbolt's server
	case "help":
		c.reply(helpReply("CLIENT", clientHelp))
	default:
		c.reply(unknownSubcommand(args))
	}
}

const msgNotInt = "ERR value is not an integer or out of range"

var clientHelp = []string{
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"SETINFO <option> <value>",
	"    Set client meta attr. Options are:",
	"    * LIB-NAME: the client lib name.",
	"    * LIB-VER: the client lib version.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"NO-TOUCH (ON|OFF)",
	"    Will not touch LRU/LFU stats when this mode is on.",
}

func onOff(b []byte) (on, ok bool) {
	switch strings.ToLower(string(b)) {
	case "on":
		return true, true
	case "off":
		return false, true
	}
	return false, false
}

// clientSetInfo is CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2).
func clientSetInfo(c *conn, args [][]byte) {
	attr := string(args[2])
	lower := strings.ToLower(attr)
	if lower != "lib-name" && lower != "lib-ver" {
		c.reply(resp.Err("ERR Unrecognized option '" + truncate(attr, 128) + "'"))
		return
	}
	if validClientName(args[3]) != "" {
		c.reply(resp.Err("ERR " + truncate(attr, 128) + " cannot contain spaces, newlines or special characters."))
		return
	}
	c.mu.Lock()
	if lower == "lib-name" {
		c.adm.libName = string(args[3])
	} else {
		c.adm.libVer = string(args[3])
	}
	c.mu.Unlock()
	c.reply(resp.OK)
}

// clientType is a connection's type for CLIENT LIST/KILL TYPE.
func clientType(o *conn) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.subs[subChannel])+len(o.subs[subPattern])+len(o.subs[subShard]) > 0 {
		return "pubsub"
	}
	return "normal"
}

// parseClientType accepts Redis's type names; "" if unknown.
func parseClientType(b []byte) string {
	switch t := strings.ToLower(string(b)); t {
	case "normal", "pubsub", "master":
		return t
	case "replica", "slave":
		return "replica"
	}
	return ""
}

func clientList(c *conn, args [][]byte) {
	all := c.srv.clients()
	var sel []*conn
	switch {
	case len(args) == 2:
		sel = all
	case len(args) == 4 && strings.EqualFold(string(args[2]), "type"):
		typ := parseClientType(args[3])
		if typ == "" {
			c.reply(resp.Err("ERR Unknown client type '" + truncate(string(args[3]), 128) + "'"))
			return
		}
		for _, o := range all {
			if clientType(o) == typ {
				sel = append(sel, o)
			}
		}
	case len(args) > 3 && strings.EqualFold(string(args[2]), "id"):
		byID := make(map[uint64]*conn, len(all))
		for _, o := range all {
			byID[o.id] = o
		}
		for _, a := range args[3:] {
			id, err := strconv.ParseInt(string(a), 10, 64)
			if err != nil {
				c.reply(resp.Err("ERR Invalid client ID"))
				return
			}
			if o := byID[uint64(id)]; o != nil && id > 0 {
				sel = append(sel, o)
			}
		}
	default:
		c.reply(resp.Err("ERR syntax error"))
		return
	}
	var b strings.Builder
	for _, o := range sel {
		b.WriteString(c.srv.clientLine(o, c, args))
		b.WriteByte('\n')
	}
	c.reply(resp.BulkString(b.String()))
}

// clientLine is a connection's CLIENT LIST line, in Redis 7.2's format
// (7.0's plus lib-name and lib-ver). self is the connection asking, whose
// state is read directly; args is its current command.
func (s *Server) clientLine(o, self *conn, args [][]byte) string {
	now := time.Now()
	o.mu.Lock()
	name, lib, ver := o.name, o.adm.libName, o.adm.libVer
	idle := now.Sub(o.lastUsed)
	sub, psub, ssub := len(o.subs[subChannel]), len(o.subs[subPattern]), len(o.subs[subShard])
	omem := len(o.out) + int(o.lc.unsent.Load())
	v := o.adm.view
	o.mu.Unlock()
	qbuf, argvMem := 0, 0
	if v.cmd == "" { // no command finished yet
		v = connView{multi: -1, cmd: "NULL"}
	}
	if o == self {
		v = o.liveView()
		idle = 0
		qbuf = o.qbuf
		for _, a := range args {
			argvMem += len(a)
		}
	}
	var flags []byte
	if sub+psub+ssub > 0 {
		flags = append(flags, 'P')
	}
	if v.multi >= 0 {
		flags = append(flags, 'x')
	}
	if v.readonly {
		flags = append(flags, 'r')
	}
	if v.noEvict {
		flags = append(flags, 'e')
	}
	if v.noTouch {
		flags = append(flags, 'T')
	}
	if len(flags) == 0 {
		flags = append(flags, 'N')
	}
	events := "r"
	if omem > 0 {
		events = "rw"
	}
	const rbs = 16 << 10 // the request reader's buffer
	var b strings.Builder
	w := func(k, val string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(val)
	}
	n := func(k string, val int64) { w(k, strconv.FormatInt(val, 10)) }
	n("id", int64(o.id))
	w("addr", o.addr)
	w("laddr", o.laddr)
	n("fd", int64(o.fd()))
	w("name", name)
	n("age", int64(now.Sub(o.created)/time.Second))
	n("idle", int64(idle/time.Second))
	w("flags", string(flags))
	n("db", int64(v.db))
	n("sub", int64(sub))
	n("psub", int64(psub))
	n("ssub", int64(ssub))
	n("multi", int64(v.multi))
	n("qbuf", int64(qbuf))
	n("qbuf-free", int64(rbs-qbuf))
	n("argv-mem", int64(argvMem))
	n("multi-mem", int64(v.multiMem))
	n("rbs", rbs)
	n("rbp", int64(qbuf))
	n("obl", 0)
	n("oll", 0)
	n("omem", int64(omem))
	n("tot-mem", int64(rbs+argvMem+v.multiMem+omem))
	w("events", events)
	w("cmd", v.cmd)
	w("user", "default")
	n("redir", -1)
	n("resp", 2)
	w("lib-name", lib)
	w("lib-ver", ver)
	return b.String()
}

// fd is the socket's file descriptor, or -1.
func (c *conn) fd() int {
	if c.lc.lp != nil {
		return c.lc.fd
	}
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if raw.Control(func(f uintptr) { fd = int(f) }) != nil {
		return -1
	}
	return fd
}

// clientKill is CLIENT KILL ip:port, or CLIENT KILL with filters.
func clientKill(c *conn, args [][]byte) {
	if len(args) == 3 {
		addr := string(args[2])
		for _, o := range c.srv.clients() {
			if o.addr == addr {
				c.reply(resp.OK)
				c.kill(o)
				return
			}
		}
		c.reply(resp.Err("ERR No such client"))
		return
	}
	if len(args)%2 != 0 {
		c.reply(resp.Err("ERR syntax error"))
		return
	}
	var (
		id                uint64
		addr, laddr, typ  string
		skipMe            = true
		hasAddr, hasLaddr bool
	)
	for i := 2; i < len(args); i += 2 {
		val := args[i+1]
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil || n <= 0 {
				c.reply(resp.Err("ERR client-id should be greater than 0"))
				return
			}
			id = uint64(n)
		case "type":
			typ = parseClientType(val)
			if typ == "" {
				c.reply(resp.Err("ERR Unknown client type '" + truncate(string(val), 128) + "'"))
				return
			}
		case "addr":
			addr, hasAddr = string(val), true
		case "laddr":
			laddr, hasLaddr = string(val), true
		case "user":
			if string(val) != "default" {
				c.reply(resp.Err("ERR No such user '" + truncate(string(val), 128) + "'"))
				return
			}
		case "skipme":
			switch strings.ToLower(string(val)) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				c.reply(resp.Err("ERR syntax error"))
				return
			}
		default:
			c.reply(resp.Err("ERR syntax error"))
			return
		}
	}
	var victims []*conn
	for _, o := range c.srv.clients() {
		switch {
		case id != 0 && o.id != id,
			hasAddr && o.addr != addr,
			hasLaddr && o.laddr != laddr,
			typ != "" && clientType(o) != typ,
			skipMe && o == c:
			continue
		}
		victims = append(victims, o)
	}
	c.reply(resp.IntReply(int64(len(victims))))
	for _, o := range victims {
		c.kill(o)
	}
}

// kill closes connection o: another one at once, c itself after its reply.
func (c *conn) kill(o *conn) {
	if o == c {
		c.closing = true
		return
	}
	o.abort()
}

// parseTimeout reads a millisecond timeout as Redis's
// getTimeoutFromObjectOrReply does, answering the error itself.
func parseTimeout(c *conn, b []byte) (time.Duration, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		c.reply(resp.Err("ERR timeout is not an integer or out of range"))
		return 0, false
	}
	if n < 0 {
		c.reply(resp.Err("ERR timeout is negative"))
		return 0, false
	}
	return time.Duration(min(n, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, true
}

// ---- WAIT, WAITAOF, ROLE ----

func cmdWait(c *conn, args [][]byte) {
	n, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil {
		c.reply(resp.Err(msgNotInt))
		return
	}
	timeout, ok := parseTimeout(c, args[2])
	if !ok {
		return
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
	local, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil {
		c.reply(resp.Err(msgNotInt))
		return
	}
	if local < 0 || local > 1 {
		c.reply(resp.Err("ERR value is out of range, value must between 0 and 1"))
		return
	}
	replicas, err := strconv.ParseInt(string(args[2]), 10, 64)
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
func (s *Server) save() error {
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

// ---- DEBUG, MEMORY, SHUTDOWN, MONITOR, cluster client commands ----

func cmdDebug(c *conn, args [][]byte) {
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
		c.reply(resp.Err("ERR MEMORY USAGE is not supported by deadbolt"))
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
		c.reply(resp.ArrayReply(
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
		c.reply(resp.BulkString("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"))
	case "malloc-stats":
		c.reply(resp.BulkString("Stats not supported for the current allocator\n"))
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

// cmdShutdown refuses: a client must not be able to stop a node (and, in
// a cluster, take away a voter). Stop the process instead.
func cmdShutdown(c *conn, args [][]byte) {
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave", "save", "now", "force", "abort":
		default:
			c.reply(resp.Err("ERR syntax error"))
			return
		}
	}
	c.reply(resp.Err("ERR SHUTDOWN is not supported by deadbolt: stop the process instead"))
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

// ---- LATENCY, SLOWLOG: nothing is recorded ----

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
		c.reply(resp.BulkString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"))
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

func cmdSlowlog(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "get":
		if len(args) > 3 {
			c.reply(subcommandSyntaxError(args))
			return
		}
		if len(args) == 3 {
			n, err := strconv.ParseInt(string(args[2]), 10, 64)
			if err != nil || n < -1 {
				c.reply(resp.Err("ERR count should be greater than or equal to -1"))
				return
			}
		}
		c.reply(resp.EmptyArr)
	case "len":
		c.reply(resp.Zero)
	case "reset":
		c.reply(resp.OK)
	case "help":
		c.reply(helpReply("SLOWLOG", []string{
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
		}))
	default:
		c.reply(unknownSubcommand(args))
	}
}

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
	{name: "tls-port", kind: pInt, def: "0", immutable: true},
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
		c.reply(resp.OK)
	case "rewrite":
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
			if p := paramByName[lower]; p != nil {
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
	}
	c.reply(resp.ArrayReply(out...))
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
		p := paramByName[strings.ToLower(arg)]
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
	}
	s := c.srv
	for _, ch := range changes {
		s.applyParam(ch.p, ch.val)
	}
	c.reply(resp.OK)
}

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
		for _, ch := range v {
			if !strings.ContainsRune("Ag$lshzxeKEtmdn", ch) {
				return "", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
			}
		}
		if v != "" {
			return "", "keyspace notifications are not supported by deadbolt"
		}
		return "", ""
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
	case "notify-keyspace-events":
		return
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

// reset is RESET's part: replies on, read-write, eviction and touch
// flags off.
func (a *clientState) reset() {
	a.replyOff, a.skipNext, a.skipThis = false, false, false
	a.readonly, a.noEvict, a.noTouch = false, false, false
}
