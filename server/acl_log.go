package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/resp"
)

// aclLog is ACL LOG: the commands, keys, channels and logins this node
// refused, newest first. Like Redis, a refusal like one of the last ten
// (same reason, context, object and user, within a minute) counts in that
// entry instead of adding one.
type aclLog struct {
	mu      sync.Mutex
	entries []*aclLogEntry // newest first
	max     int
}

type aclLogEntry struct {
	count    int64
	reason   int
	context  string
	object   string
	username string
	at       time.Time
	cinfo    string
}

const (
	aclLogDefaultMax = 128 // acllog-max-len
	aclLogGroupScan  = 10
	aclLogGroupSpan  = time.Minute
)

func (l *aclLog) add(c *conn, reason int, context, object, username string, args [][]byte) {
	e := &aclLogEntry{count: 1, reason: reason, context: context, object: object, username: username, at: time.Now()}
	e.cinfo = c.srv.clientLine(c, c, args)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < len(l.entries) && i < aclLogGroupScan; i++ {
		o := l.entries[i]
		d := e.at.Sub(o.at)
		if d < 0 {
			d = -d
		}
		if o.reason == e.reason && o.context == e.context && o.object == e.object && o.username == e.username && d <= aclLogGroupSpan {
			o.count++
			o.cinfo, o.at = e.cinfo, e.at
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = o
			return
		}
	}
	l.entries = append([]*aclLogEntry{e}, l.entries...)
	max := l.max
	if max <= 0 {
		max = aclLogDefaultMax
	}
	if len(l.entries) > max {
		l.entries = l.entries[:max]
	}
}

func aclLogCmd(c *conn, args [][]byte) {
	l := &c.srv.aclLog
	count := int64(10)
	if len(args) == 3 {
		if strings.EqualFold(string(args[2]), "reset") {
			l.mu.Lock()
			l.entries = nil
			l.mu.Unlock()
			c.reply(resp.OK)
			return
		}
		v, err := parseInt(args[2])
		if err != nil {
			c.reply(resp.Err(msgNotInt))
			return
		}
		count = max(v, 0)
	}
	now := time.Now()
	l.mu.Lock()
	n := min(int(min(count, int64(len(l.entries)))), len(l.entries))
	out := make([]resp.Reply, n)
	for i, e := range l.entries[:n] {
		age := float64(now.Sub(e.at).Milliseconds()) / 1000
		out[i] = resp.MapReply(
			resp.BulkString("count"), resp.IntReply(e.count),
			resp.BulkString("reason"), resp.BulkString(acl.ReasonName(e.reason)),
			resp.BulkString("context"), resp.BulkString(e.context),
			resp.BulkString("object"), resp.BulkString(e.object),
			resp.BulkString("username"), resp.BulkString(e.username),
			resp.BulkString("age-seconds"), resp.DoubleReply([]byte(strconv.FormatFloat(age, 'f', -1, 64))),
			resp.BulkString("client-info"), resp.BulkString(e.cinfo),
		)
	}
	l.mu.Unlock()
	c.reply(resp.ArrayReply(out...))
}
