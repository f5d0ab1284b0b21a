package server

import (
	"context"
	"strings"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	registerConn(
		connSpec{name: "ping", arity: -1, flags: inSubMode | connLocal, fn: cmdPing},
		connSpec{name: "echo", arity: 2, flags: connLocal, fn: cmdEcho},
		connSpec{name: "quit", arity: -1, flags: noAuth | inSubMode | multiCtl | connLocal, fn: cmdQuit},
		// AUTH and HELLO are queued inside MULTI, as in Redis (multi.go).
		connSpec{name: "auth", arity: -2, flags: noAuth, fn: cmdAuth},
		connSpec{name: "hello", arity: -1, flags: noAuth, fn: cmdHello},
		connSpec{name: "select", arity: 2, flags: connLocal, fn: cmdSelect},
		connSpec{name: "reset", arity: 1, flags: noAuth | inSubMode | multiCtl | connLocal, fn: cmdReset},
		connSpec{name: "multi", arity: 1, flags: multiCtl | connLocal, fn: cmdMulti},
		connSpec{name: "exec", arity: 1, flags: multiCtl, fn: cmdExec},
		connSpec{name: "discard", arity: 1, flags: multiCtl | connLocal, fn: cmdDiscard},
		connSpec{name: "watch", arity: -2, flags: multiCtl, fn: cmdWatch},
		connSpec{name: "unwatch", arity: 1, flags: connLocal, fn: cmdUnwatch}, // queued inside MULTI
	)
}

var pong = resp.StatusReply("PONG")

func cmdPing(c *conn, args [][]byte) {
	if len(args) > 2 {
		c.reply(resp.Err(fsm.WrongArity("ping")))
		return
	}
	if c.subscribed() && c.protocol() < 3 {
		msg := []byte{}
		if len(args) == 2 {
			msg = args[1]
		}
		c.reply(resp.ArrayReply(resp.BulkString("pong"), resp.BulkReply(msg)))
		return
	}
	if len(args) == 2 {
		c.reply(resp.BulkReply(args[1]))
		return
	}
	c.reply(pong)
}

func cmdEcho(c *conn, args [][]byte) { c.reply(resp.BulkReply(args[1])) }

func cmdQuit(c *conn, _ [][]byte) {
	c.reply(resp.OK)
	c.closing = true
}

const (
	msgWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	msgAuthNoPwd = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
)

func (c *conn) setAuthed(ok bool) {
	c.authed = ok
	c.rd.Unauthenticated = !ok
}

func cmdAuth(c *conn, args [][]byte) {
	switch len(args) {
	case 2:
		if d := c.srv.users().Default(); d == nil || d.NoPass {
			c.reply(resp.Err(msgAuthNoPwd))
			return
		}
		if !c.authenticate([]byte("default"), args[1], args) {
			c.reply(resp.Err(msgWrongPass))
			return
		}
	case 3:
		if !c.authenticate(args[1], args[2], args) {
			c.reply(resp.Err(msgWrongPass))
			return
		}
	default:
		c.reply(resp.Err("ERR syntax error"))
		return
	}
	c.reply(resp.OK)
}

func cmdHello(c *conn, args [][]byte) {
	i, proto := 1, c.protocol()
	if len(args) >= 2 {
		ver, err := parseInt(args[1])
		if err != nil {
			c.reply(resp.Err("ERR Protocol version is not an integer or out of range"))
			return
		}
		if ver != 2 && ver != 3 {
			c.reply(resp.Err("NOPROTO unsupported protocol version"))
			return
		}
		i, proto = 2, int(ver)
	}
	var name []byte
	setName := false
	for ; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		switch {
		case opt == "auth" && i+2 < len(args):
			if !c.authenticate(args[i+1], args[i+2], args) {
				c.reply(resp.Err(msgWrongPass))
				return
			}
			i += 2
		case opt == "setname" && i+1 < len(args):
			name, setName = args[i+1], true
			i++
		default:
			c.reply(resp.Err("ERR Syntax error in HELLO option '" + string(args[i]) + "'"))
			return
		}
	}
	if !c.authed {
		c.reply(resp.Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"))
		return
	}
	if setName {
		if msg := validClientName(name); msg != "" {
			c.reply(resp.Err(msg))
			return
		}
		c.mu.Lock()
		c.name = string(name)
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.proto = proto
	if c.member && proto == 3 {
		c.proto = resp.ProtoMember
	}
	c.mu.Unlock()
	c.reply(resp.MapReply(
		resp.BulkString("server"), resp.BulkString("redis"),
		resp.BulkString("version"), resp.BulkString(RedisVersion),
		resp.BulkString("proto"), resp.IntReply(int64(proto)),
		resp.BulkString("id"), resp.IntReply(int64(c.id)),
		resp.BulkString("mode"), resp.BulkString("standalone"),
		resp.BulkString("role"), resp.BulkString(c.srv.role()),
		resp.BulkString("modules"), resp.EmptyArr,
	))
}

// validClientName returns Redis's error for a name with spaces or
// newlines, or "".
func validClientName(name []byte) string {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return "ERR Client names cannot contain spaces, newlines or special characters."
		}
	}
	return ""
}

// role is "master" or "slave" as INFO and HELLO report it.
func (s *Server) role() string {
	if s.cfg.Info != nil {
		r := s.cfg.Info.Role()
		if len(r.Elems) > 0 {
			if string(r.Elems[0].Str) == "slave" {
				return "replica"
			}
		}
	}
	return "master"
}

func cmdSelect(c *conn, args [][]byte) {
	db, err := parseInt(args[1])
	if err != nil {
		c.reply(resp.Err("ERR value is not an integer or out of range"))
		return
	}
	if db < 0 || db >= fsm.NumDBs {
		c.reply(resp.Err("ERR DB index is out of range"))
		return
	}
	c.db = int(db)
	c.reply(resp.OK)
}

func cmdReset(c *conn, _ [][]byte) {
	c.multi = nil
	c.watches = nil
	c.db = 0
	c.srv.hub.unsubscribeAll(c)
	c.mu.Lock()
	c.name = ""
	c.proto = 2
	c.mu.Unlock()
	t := c.srv.users()
	c.setUser(t.Default(), t)
	c.setAuthed(defaultAuthed(t))
	c.adm.reset()
	c.reply(resp.StatusReply("RESET"))
}

func cmdMulti(c *conn, _ [][]byte) {
	if c.multi != nil {
		c.reply(resp.Err(msgNestedMulti))
		return
	}
	c.multi = &multiState{}
	c.reply(resp.OK)
}

func cmdDiscard(c *conn, _ [][]byte) {
	if c.multi == nil {
		c.reply(resp.Err(msgDiscardNoMu))
		return
	}
	c.multi = nil
	c.watches = nil
	c.reply(resp.OK)
}

func cmdExec(c *conn, _ [][]byte) {
	m := c.multi
	if m == nil {
		c.reply(resp.Err(msgExecNoMulti))
		return
	}
	c.multi = nil
	watches := c.watches
	c.watches = nil
	if m.dirty {
		c.reply(resp.Err(msgExecAbort))
		return
	}
	if !c.recheckQueued(m) {
		return
	}
	cmd := fsm.Command{DB: c.db, Tx: m.keyspaceTx(), Watch: watches, User: c.scriptUser()}
	if cmd.Tx == nil {
		cmd.Tx = [][][]byte{}
	}
	var (
		res fsm.Result
		err error
	)
	if !txWrites(cmd.Tx) {
		res, err = c.srv.backend.Read(context.Background(), cmd)
	} else {
		res, err = c.srv.backend.Apply(context.Background(), cmd)
	}
	if m.nlocal > 0 && err == nil && res.Reply.Type == resp.Array {
		// The keyspace part ran; now the connection commands (multi.go).
		var encoded []byte
		res.Reply, encoded = c.mergeExec(m, cmd.DB, res.DB, res.Reply.Elems)
		if encoded != nil {
			c.finishExecEncoded(res, encoded)
			return
		}
	}
	c.finishExec(res, err)
}

// txWrites reports whether a transaction has any command that needs the
// log.
func txWrites(tx [][][]byte) bool {
	for _, args := range tx {
		s, ok := fsm.Lookup(args[0])
		if !ok || s.Flags&fsm.Write != 0 {
			return true
		}
	}
	return false
}

func (c *conn) finishExec(res fsm.Result, err error) {
	if err != nil {
		msg := errorText(err)
		if strings.HasPrefix(msg, "MISCONF ") {
			// Refused for a full disk: Redis refuses such an EXEC
			// before it runs, as execCommandAbort words it.
			msg = "EXECABORT Transaction discarded because of: " + msg
		}
		c.reply(resp.Err(msg))
		return
	}
	c.db = res.DB
	if len(res.Denials) > 0 {
		c.logScriptDenials(res.Denials)
	}
	c.reply(res.Reply)
}

// finishExecEncoded is finishExec for an array mergeExec encoded.
func (c *conn) finishExecEncoded(res fsm.Result, encoded []byte) {
	c.db = res.DB
	if len(res.Denials) > 0 {
		c.logScriptDenials(res.Denials)
	}
	c.replyEncoded(encoded)
}

func cmdWatch(c *conn, args [][]byte) {
	if c.multi != nil {
		c.reply(resp.Err(msgWatchInMult))
		return
	}
	for _, k := range args[1:] {
		key := string(k)
		dup := false
		for _, w := range c.watches {
			if w.DB == c.db && w.Key == key {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		v, err := c.srv.backend.KeyVersion(context.Background(), c.db, key)
		if err != nil {
			c.reply(resp.Err(errorText(err)))
			return
		}
		c.watches = append(c.watches, fsm.Watch{DB: c.db, Key: key, Version: v})
	}
	c.reply(resp.OK)
}

func cmdUnwatch(c *conn, _ [][]byte) {
	c.watches = nil
	c.reply(resp.OK)
}
