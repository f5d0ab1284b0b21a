package server

import (
	"net"
	"strconv"
	"strings"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/resp"
)

// Connection-level commands inside MULTI whose Redis 7.0 behaviour is not
// a plain queue-and-answer (server/DESIGN.md, "Transactions";
// testdata/transcripts/transactions.txt runs each against redis-server
// 7.0.15, over RESP2 and RESP3):
//
//   - AUTH and HELLO are queued and run inside EXEC at their place. HELLO
//     2/3 switches the protocol halfway through EXEC's array: its own
//     reply and every later element are encoded in the new protocol, the
//     array's header and the elements before it in the old one (execWriter).
//     Redis checks each command against the connection's user when EXEC
//     runs it, so after an AUTH the commands that follow are checked
//     against the user AUTH logged in (execDenial); since deadbolt runs
//     the keyspace part first, no keyspace command may follow a queued
//     AUTH (multiOrder's authOrder, refused when queued).
//   - The SUBSCRIBE family is queued and run inside EXEC: its
//     confirmations become elements of EXEC's array, one per channel, so
//     the array holds more elements than its header says, as Redis writes
//     it; PING after it answers in the subscribed form (subscribedPing);
//     messages for the connection wait until EXEC's reply is queued
//     (holdMessages), as Redis writes them after it. SSUBSCRIBE answers
//     7.0's DENY BLOCKING error there (runQueued). No keyspace command
//     but the connection-level ones may follow it (lastOrder).
//   - WAITAOF is a Redis 7.2 command: 7.0 answers it inside MULTI as an
//     unknown command, and so does deadbolt (dispatch), which answers it
//     as 7.2 does outside MULTI.
//   - DEBUG is refused when queued, with 7.0's own error while
//     enable-debug-command forbids it (the default), as 7.0 refuses every
//     protected command before queueing it; otherwise with deadbolt's
//     (DEBUG SLEEP inside EXEC would hold the event loop).

// Redis 7.0's refusal of DEBUG when enable-debug-command does not allow it.
const msgDebugNotAllowed = `ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`

// debugRefusal is Redis 7.0's refusal of DEBUG on this connection, or ""
// when enable-debug-command allows it here.
func (c *conn) debugRefusal() string {
	switch c.srv.configGet(paramByName["enable-debug-command"]) {
	case "yes":
	case "local":
		if host, _, _ := net.SplitHostPort(c.addr); host != "127.0.0.1" && host != "::1" {
			return msgDebugNotAllowed // Redis's local: 127.0.0.1 or ::1 (protected.go)
		}
	default:
		return msgDebugNotAllowed
	}
	return ""
}

// debugInMulti is the refusal of DEBUG inside MULTI.
func (c *conn) debugInMulti() string {
	if why := c.debugRefusal(); why != "" {
		return why
	}
	return "ERR 'debug' is not supported inside MULTI"
}

// msgACLChanged starts the reply to a queued command its user may no
// longer run when EXEC reaches it.
const msgACLChanged = "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: "

func aclChangedWhy(r int) string {
	switch r {
	case acl.DeniedCmd:
		return "no permission to execute the command or subcommand"
	case acl.DeniedKey:
		return "no permission to touch the specified keys"
	}
	return "no permission to access one of the channels used as arguments"
}

// execDenial checks a queued command against the connection's user as
// EXEC reaches it (after an AUTH inside the same EXEC): Redis's NOPERM
// reply and true when the user may not run it, logged in the ACL LOG with
// the multi context.
func (c *conn) execDenial(args [][]byte) (resp.Reply, bool) {
	if c.member || c.user == nil || c.user.Unrestricted() {
		return resp.Reply{}, false
	}
	cmd := acl.LookupArgs(args)
	d := c.user.Check(cmd, args)
	if d.Reason == acl.DeniedNone {
		return resp.Reply{}, false
	}
	c.srv.aclLog.add(c, d.Reason, "multi", denialObject(d, cmd, strings.ToLower(string(args[0])), args), c.userName(), args)
	return resp.Err(msgACLChanged + aclChangedWhy(d.Reason)), true
}

// execWriter encodes EXEC's array element by element, each in the
// protocol in force when its command ran, for a transaction with a HELLO.
type execWriter struct {
	buf []byte
}

func newExecWriter(n int) *execWriter {
	// The header is *n in RESP2 and RESP3 alike.
	return &execWriter{buf: append(strconv.AppendInt([]byte{'*'}, int64(n), 10), '\r', '\n')}
}

func (w *execWriter) add(r resp.Reply, proto int) { w.buf = r.AppendProto(w.buf, proto) }

// replyEncoded queues an already encoded reply (EXEC's, from execWriter),
// unless CLIENT REPLY turned replies off, and after it the messages that
// arrived for subscriptions the EXEC made.
func (c *conn) replyEncoded(b []byte) {
	quiet := c.adm.quiet()
	c.mu.Lock()
	if !quiet {
		c.out = append(c.out, b...)
	}
	c.out = append(c.out, c.held...)
	c.held, c.hold = nil, false
	c.mu.Unlock()
}

// holdMessages keeps the messages published to this connection's
// subscriptions from now on until EXEC's reply is queued (replyEncoded):
// Redis, single-threaded, writes them after it.
func (c *conn) holdMessages() {
	c.mu.Lock()
	c.hold = true
	c.mu.Unlock()
}

// subscribedPing is PING's reply once an EXEC's SUBSCRIBE made the
// connection subscribed: over RESP2 the subscribed form, ["pong", msg].
func (c *conn) subscribedPing(args [][]byte, r resp.Reply) resp.Reply {
	if !c.subscribed() || c.protocol() >= 3 {
		return r
	}
	msg := []byte{}
	if len(args) == 2 {
		msg = args[1]
	}
	return resp.ArrayReply(resp.BulkString("pong"), resp.BulkReply(msg))
}
