package server

import (
	"strconv"
	"strings"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// Connection commands inside MULTI (server/DESIGN.md, "Transactions").
//
// Redis 7.0 queues every command but MULTI, EXEC, DISCARD, WATCH, QUIT and
// RESET, refuses the no_multi ones (SAVE, SHUTDOWN) and runs the queue in
// order inside EXEC. deadbolt's state machine applies the keyspace
// commands of a transaction as one unit (fsm.Command.Tx), so EXEC runs
// them first, all at once, and then the queued connection commands in
// their order, each reply put back at its position in EXEC's array. That
// gives Redis's results as long as no connection command is moved past a
// keyspace command that it affects or that affects it; queueing refuses
// the orders where it would be (multiOrder), so every transaction that is
// accepted answers as Redis answers it.

// multiState is a connection's open transaction.
type multiState struct {
	queued [][][]byte
	local  []*connSpec // per queued command: the connection command, nil for the state machine's
	nlocal int
	dirty  bool // a command failed to queue: EXEC answers EXECABORT
	// The first queued connection command that no keyspace command
	// (noKeyspace) or no keyspace write (noWrite) may follow, and the
	// first AUTH (or HELLO ... AUTH), which not even PING may follow
	// (noneAfter): Redis checks each command against the user at the time
	// it runs inside EXEC.
	noKeyspace, noWrite, noneAfter string
	hello                          bool // a HELLO is queued: EXEC's elements may change protocol
	pubsub                         bool // a SUBSCRIBE-family command is queued (multi_conn.go)
}

// order says which keyspace commands may follow a queued connection
// command in the same transaction.
type order uint8

const (
	anyOrder  order = iota // neither reads the keyspace nor changes what keyspace commands do
	noWrite                // reads keyspace state: only keyspace reads may follow
	lastOrder              // changes what keyspace commands do: no keyspace command may follow
	authOrder              // may change the user: only connection commands may follow, checked at their turn
)

// multiOrder classifies a connection command for queueing.
func multiOrder(cs *connSpec, args [][]byte) order {
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(string(args[1]))
	}
	switch cs.name {
	case "info":
		if len(args) == 1 {
			return noWrite // the default sections include keyspace and memory
		}
		for _, a := range args[1:] {
			switch strings.ToLower(string(a)) {
			case "keyspace", "memory", "persistence", "stats", "all", "everything", "default":
				return noWrite // key counts, cached scripts, changes since the last save
			}
		}
		return anyOrder
	case "bgsave", "bgrewriteaof":
		return noWrite
	case "memory": // but MEMORY USAGE, queued as the state machine's (queue)
		if sub == "help" || sub == "malloc-stats" || sub == "purge" {
			return anyOrder
		}
		return noWrite
	case "config":
		if sub != "set" {
			return anyOrder
		}
		for i := 2; i < len(args); i += 2 {
			if p := paramByName[strings.ToLower(string(args[i]))]; p != nil && fsm.IsReplicatedSetting(canonical(p).name) {
				return lastOrder // notify-keyspace-events, the encoding thresholds
			}
		}
	case "acl":
		switch sub {
		case "setuser", "deluser", "load":
			return lastOrder
		}
	case "auth":
		return authOrder
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe":
		// A message a later keyspace command publishes would reach the
		// new subscription in the middle of EXEC's array.
		return lastOrder
	case "hello":
		for _, a := range args[1:] {
			if strings.EqualFold(string(a), "auth") {
				return authOrder
			}
		}
	}
	return anyOrder
}

// connLevel are the state machine's commands that touch no key and that
// no connection command affects: they may stand anywhere in a transaction.
var connLevel = map[string]bool{"ping": true, "echo": true, "select": true, "time": true, "unwatch": true}

// notQueued are connection commands refused inside MULTI although Redis
// queues them: the cluster's members' own. (WAIT is queued and does not
// wait inside EXEC, as in Redis; WAITAOF and DEBUG: dispatch,
// multi_conn.go.)
var notQueued = map[string]bool{
	"raft": true, cluster.ForwardCommand: true, cluster.AppliedCommand: true,
}

// queue adds a command to the open transaction, or refuses it.
func (c *conn) queue(spec *fsm.Spec, cs *connSpec, name string, args [][]byte) {
	m := c.multi
	if spec == nil && cs.name == "memory" && len(args) > 1 && strings.EqualFold(string(args[1]), "usage") {
		// MEMORY USAGE reads the keyspace: the state machine's part.
		if msg := subcommandError(args); msg != "" {
			c.reject(name, msg)
			return
		}
		spec, _ = fsm.Lookup([]byte(fsm.MemoryUsageCommand))
		args = fsm.MemoryUsageArgs(args[2:])
	}
	if spec != nil {
		if m.noneAfter != "" {
			c.reject(name, "ERR '"+c.lastCmd+"' cannot follow '"+m.noneAfter+"' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands")
			return
		}
		if !connLevel[spec.Name] {
			after := m.noKeyspace
			if after == "" && spec.Flags&fsm.Write != 0 {
				after = m.noWrite
			}
			if after != "" {
				c.reject(name, "ERR '"+c.lastCmd+"' cannot follow '"+after+"' in a transaction: deadbolt runs a transaction's connection commands after its keyspace commands")
				return
			}
		}
		m.queued = append(m.queued, copyArgs(args))
		m.local = append(m.local, nil)
		c.reply(resp.Queued)
		return
	}
	if notQueued[cs.name] {
		c.reject(name, "ERR '"+name+"' is not supported inside MULTI")
		return
	}
	if hasSubcommands(cs.name) {
		if msg := subcommandError(args); msg != "" {
			c.reject(name, msg)
			return
		}
	}
	switch multiOrder(cs, args) {
	case noWrite:
		if m.noWrite == "" {
			m.noWrite = c.lastCmd
		}
	case lastOrder:
		if m.noKeyspace == "" {
			m.noKeyspace = c.lastCmd
		}
	case authOrder:
		if m.noKeyspace == "" {
			m.noKeyspace = c.lastCmd
		}
		if m.noneAfter == "" {
			m.noneAfter = c.lastCmd
		}
	}
	switch cs.name {
	case "hello":
		m.hello = true
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe":
		m.pubsub = true
	}
	m.queued = append(m.queued, copyArgs(args))
	m.local = append(m.local, cs)
	m.nlocal++
	c.reply(resp.Queued)
}

// subcommandError is the error Redis gives when queueing a container
// command with an unknown subcommand or a wrong number of arguments, or
// "" (checkSubcommand's checks, without answering).
func subcommandError(args [][]byte) string {
	name := strings.ToLower(string(args[0]))
	if len(args) < 2 {
		return fsm.WrongArity(name)
	}
	d := docs()[name+"|"+strings.ToLower(string(args[1]))]
	if d == nil || len(args[1]) > 64 {
		return unknownSubcommand(args).String()
	}
	if !arityOK(d.arity, len(args)) {
		return fsm.WrongArity(d.name)
	}
	return ""
}

// keyspaceTx is the state machine's part of a transaction.
func (m *multiState) keyspaceTx() [][][]byte {
	if m.nlocal == 0 {
		return m.queued
	}
	tx := make([][][]byte, 0, len(m.queued)-m.nlocal)
	for i, args := range m.queued {
		if m.local[i] == nil {
			tx = append(tx, args)
		}
	}
	return tx
}

// mergeExec runs a transaction's connection commands after its keyspace
// part answered ks (one reply per keyspace command) and returns EXEC's
// array, every reply at its command's position. Each connection command
// sees the database the SELECTs before it chose. With a HELLO queued it
// returns the array already encoded instead, each element in the
// protocol in force at its place (multi_conn.go).
func (c *conn) mergeExec(m *multiState, startDB, endDB int, ks []resp.Reply) (resp.Reply, []byte) {
	out := make([]resp.Reply, len(m.queued))
	var w *execWriter
	if m.hello || m.pubsub {
		w = newExecWriter(len(out))
	}
	if m.pubsub {
		c.holdMessages()
	}
	db, k := startDB, 0
	recheck := false // an AUTH ran: check what follows against its user
	c.execing = m
	defer func() { c.execing = nil }()
	for i, args := range m.queued {
		cs := m.local[i]
		switch {
		case cs == nil:
			if k < len(ks) {
				out[i] = ks[k]
			}
			k++
			lower := strings.ToLower(string(args[0]))
			if lower == "select" && out[i].Type == resp.Status {
				if n, err := strconv.Atoi(string(args[1])); err == nil {
					db = n
				}
			}
			if lower == "ping" && m.pubsub && !out[i].IsError() {
				out[i] = c.subscribedPing(args, out[i])
			}
		default:
			if recheck {
				if r, denied := c.execDenial(args); denied {
					out[i] = r
					break
				}
			}
			c.db = db
			got := c.runQueued(cs, args)
			out[i] = got[0]
			if cs.name == "auth" || cs.name == "hello" {
				recheck = true
			}
			if w != nil && len(got) > 1 {
				// One reply per channel: Redis writes them all, more
				// elements than the array's header says.
				for _, r := range got {
					w.add(r, c.protocol())
				}
				continue
			}
		}
		if w != nil {
			w.add(out[i], c.protocol())
		}
	}
	c.db = endDB
	if w != nil {
		return resp.Reply{}, w.buf
	}
	return resp.ArrayReply(out...), nil
}

// runQueued runs one queued connection command inside EXEC and returns its
// replies: one, or one per channel for the SUBSCRIBE family.
func (c *conn) runQueued(cs *connSpec, args [][]byte) []resp.Reply {
	switch cs.name {
	case "monitor":
		return []resp.Reply{resp.Err("ERR MONITOR isn't allowed for DENY BLOCKING client")}
	case "ssubscribe":
		// Redis 7.0 lets SUBSCRIBE and PSUBSCRIBE run inside EXEC, for
		// backward compatibility, but not SSUBSCRIBE.
		return []resp.Reply{resp.Err("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")}
	}
	var got []resp.Reply
	saved := c.capture
	c.capture = &got
	defer func() { c.capture = saved }()
	cs.fn(c, args)
	if len(got) == 0 {
		return []resp.Reply{resp.NilReply} // SHUTDOWN answers nothing, but it is never queued
	}
	return got
}
