package server

import (
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

func init() { registerConn(connSpec{name: "client", arity: -2, flags: connAdmin, fn: cmdClient}) }

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
	stat      *cmdStat  // the current command's counters (cmdstats.go)
	args      [][]byte  // the current command's arguments, for SLOWLOG

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
	c.account(took) // cmdstats.go
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
	m := c.multi
	if m == nil {
		m = c.execing
	}
	if m != nil {
		v.multi = len(m.queued)
		for _, q := range m.queued {
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
		c.reply(resp.VerbatimReply("txt", c.srv.clientLine(c, c, args)+"\n"))
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
		// clients to let a replica catch up. Redis checks the number of
		// arguments, then the mode, then the timeout.
		if len(args) > 4 {
			c.reply(subcommandSyntaxError(args))
			return
		}
		if len(args) == 4 {
			mode := strings.ToLower(string(args[3]))
			if mode != "write" && mode != "all" {
				c.reply(resp.Err("ERR CLIENT PAUSE mode must be WRITE or ALL"))
				return
			}
		}
		if _, ok := parseTimeout(c, args[2]); !ok {
			return
		}
		c.reply(resp.OK)
	case "unpause":
		c.reply(resp.OK)
	case "tracking":
		on, ok := onOff(args[2])
		switch {
		case !ok || !trackingOptionsOK(args[3:]):
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
		c.reply(resp.MapReply(
			resp.BulkString("flags"), resp.SetReply(resp.BulkString("off")),
			resp.BulkString("redirect"), resp.IntReply(-1),
			resp.BulkString("prefixes"), resp.EmptyArr,
		))
	case "unblock":
		if len(args) > 4 {
			c.reply(subcommandSyntaxError(args))
			return
		}
		if len(args) == 4 {
			r := strings.ToLower(string(args[3]))
			if r != "timeout" && r != "error" {
				c.reply(resp.Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"))
				return
			}
		}
		if _, err := parseInt(args[2]); err != nil {
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

// trackingOptionsOK reports whether CLIENT TRACKING's options after ON|OFF
// are words Redis reads there (it reads them before it turns tracking on
// or off, and answers a syntax error for any other).
func trackingOptionsOK(opts [][]byte) bool {
	for i := 0; i < len(opts); i++ {
		switch strings.ToLower(string(opts[i])) {
		case "bcast", "optin", "optout", "noloop":
		case "redirect", "prefix":
			if i+1 == len(opts) {
				return false
			}
			i++
		default:
			return false
		}
	}
	return true
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
			id, err := parseInt(a)
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
	c.reply(resp.VerbatimReply("txt", b.String()))
}

// clientLine is a connection's CLIENT LIST line, in Redis 7.2's format
// (7.0's plus lib-name and lib-ver). self is the connection asking, whose
// state is read directly; args is its current command.
func (s *Server) clientLine(o, self *conn, args [][]byte) string {
	now := time.Now()
	o.mu.Lock()
	name, lib, ver, proto := o.name, o.adm.libName, o.adm.libVer, o.proto
	uname := o.userName()
	idle := now.Sub(o.lastUsed)
	sub, psub, ssub := len(o.subs[subChannel]), len(o.subs[subPattern]), len(o.subs[subShard])
	omem := len(o.out) + o.piecesLen + int(o.lc.unsent.Load())
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
	w("user", uname)
	n("redir", -1)
	n("resp", int64(proto))
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
		id                     uint64
		addr, laddr, typ, user string
		skipMe                 = true
		hasAddr, hasLaddr      bool
	)
	for i := 2; i < len(args); i += 2 {
		val := args[i+1]
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, err := parseInt(val)
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
			if c.srv.users().Get(string(val)) == nil {
				c.reply(resp.Err("ERR No such user '" + truncate(string(val), 128) + "'"))
				return
			}
			user = string(val)
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
			user != "" && o.userNameLocked() != user,
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
	n, err := parseInt(b)
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

// reset is RESET's part: replies on, read-write, eviction and touch
// flags off.
func (a *clientState) reset() {
	a.replyOff, a.skipNext, a.skipThis = false, false, false
	a.readonly, a.noEvict, a.noTouch = false, false, false
}
