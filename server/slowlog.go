package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// SLOWLOG, as in Redis 7.0: every command that ran for at least
// slowlog-log-slower-than microseconds (negative: none; 0: all) is kept,
// the newest slowlog-max-len of them. A command's time is from its
// dispatch to its reply (in a cluster it includes replication, unlike
// Redis, whose time excludes I/O). EXEC is logged with the transaction's
// time and each queued command when it is queued; Redis logs each queued
// command as EXEC runs it, and not EXEC.

func init() {
	registerConn(connSpec{name: "slowlog", arity: -2, flags: connAdmin, fn: cmdSlowlog})
}

const (
	slowMaxArgs  = 32  // arguments kept per entry; the last says how many more there were
	slowMaxBytes = 128 // bytes kept per argument
)

type slowEntry struct {
	id       int64
	unix     int64
	usec     int64
	args     []string
	addr     string
	clientNm string
}

// slowLog is the server's SLOWLOG. The configuration is read on every
// command, so it sits in atomics; the entries are touched only for slow
// commands.
type slowLog struct {
	threshold atomic.Int64 // µs; negative: log nothing
	maxLen    atomic.Int64

	mu      sync.Mutex
	nextID  int64
	entries []slowEntry // oldest first

	records slowRecords // "slow command" log records (slowlog_log.go)
}

// isSlow reports whether a command that took took goes in the log.
func (l *slowLog) isSlow(took time.Duration) bool {
	th := l.threshold.Load()
	return th >= 0 && took.Microseconds() >= th
}

// configure applies slowlog-log-slower-than or slowlog-max-len.
func (l *slowLog) configure(name, v string) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return
	}
	switch name {
	case "slowlog-log-slower-than":
		l.threshold.Store(n)
	case "slowlog-max-len":
		l.maxLen.Store(n)
	}
}

// add logs a command of c's that took took.
func (l *slowLog) add(c *conn, args [][]byte, took time.Duration) {
	e := slowEntry{unix: time.Now().Unix(), usec: took.Microseconds(), args: slowArgs(args), addr: c.addr}
	c.mu.Lock()
	e.clientNm = c.name
	c.mu.Unlock()
	max := int(min(l.maxLen.Load(), 1<<20))
	l.mu.Lock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if over := len(l.entries) - max; over > 0 {
		n := copy(l.entries, l.entries[over:])
		clear(l.entries[n:])
		l.entries = l.entries[:n]
	}
	l.mu.Unlock()
	l.records.note(&e, e.args[0])
}

// slowArgs copies what an entry keeps of a command's arguments: at most
// 32, the last of them then "... (N more arguments)", each cut to 128
// bytes and "... (N more bytes)", and secrets as "(redacted)".
func slowArgs(args [][]byte) []string {
	n := min(len(args), slowMaxArgs)
	out := make([]string, n)
	for j := range n {
		a := args[j]
		switch {
		case n != len(args) && j == n-1:
			out[j] = "... (" + strconv.Itoa(len(args)-n+1) + " more arguments)"
		case redacted(args, j):
			out[j] = "(redacted)"
		case len(a) > slowMaxBytes:
			out[j] = string(a[:slowMaxBytes]) + "... (" + strconv.Itoa(len(a)-slowMaxBytes) + " more bytes)"
		default:
			out[j] = string(a)
		}
	}
	return out
}

// redacted reports whether argument j of a command is a secret that
// Redis 7.0 leaves out of the slow log: AUTH's arguments, HELLO's after
// AUTH, a password CONFIG SET sets, ACL SETUSER's rules.
func redacted(args [][]byte, j int) bool {
	if j == 0 {
		return false
	}
	name := strings.ToLower(string(args[0]))
	switch name {
	case "auth":
		return true
	case "hello":
		for i := 2; i < len(args) && i < j; i++ {
			if strings.EqualFold(string(args[i]), "auth") {
				return j <= i+2
			}
			if strings.EqualFold(string(args[i]), "setname") {
				i++
			}
		}
	case "config":
		if j >= 3 && j%2 == 1 && strings.EqualFold(string(args[1]), "set") {
			switch strings.ToLower(string(args[j-1])) {
			case "requirepass", "masterauth", "tls-key-file-pass", "tls-client-key-file-pass":
				return true
			}
		}
	case "acl":
		return j >= 3 && strings.EqualFold(string(args[1]), "setuser")
	}
	return false
}

func cmdSlowlog(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	l := &c.srv.slow
	switch sub {
	case "get":
		if len(args) > 3 {
			c.reply(subcommandSyntaxError(args))
			return
		}
		count := int64(10)
		if len(args) == 3 {
			n, err := parseInt(args[2])
			if err != nil || n < -1 {
				c.reply(resp.Err("ERR count should be greater than or equal to -1"))
				return
			}
			count = n
		}
		c.reply(l.get(count))
	case "len":
		l.mu.Lock()
		n := len(l.entries)
		l.mu.Unlock()
		c.reply(resp.IntReply(int64(n)))
	case "reset":
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
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

// get is SLOWLOG GET's reply: the newest count entries (-1: all), newest
// first.
func (l *slowLog) get(count int64) resp.Reply {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.entries)
	if count >= 0 && count < int64(n) {
		n = int(count)
	}
	out := make([]resp.Reply, 0, n)
	for i := len(l.entries) - 1; i >= len(l.entries)-n; i-- {
		e := l.entries[i]
		args := make([]resp.Reply, len(e.args))
		for j, a := range e.args {
			args[j] = resp.BulkString(a)
		}
		out = append(out, resp.ArrayReply(
			resp.IntReply(e.id), resp.IntReply(e.unix), resp.IntReply(e.usec),
			resp.ArrayReply(args...), resp.BulkString(e.addr), resp.BulkString(e.clientNm)))
	}
	return resp.ArrayReply(out...)
}
