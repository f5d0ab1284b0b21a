package server

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/glob"
	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	registerConn(
		connSpec{name: "subscribe", arity: -2, flags: inSubMode | connPubSub | connLocal, fn: cmdSubscribe},
		connSpec{name: "unsubscribe", arity: -1, flags: inSubMode | connPubSub | connLocal, fn: cmdUnsubscribe},
		connSpec{name: "psubscribe", arity: -2, flags: inSubMode | connPubSub | connLocal, fn: cmdPSubscribe},
		connSpec{name: "punsubscribe", arity: -1, flags: inSubMode | connPubSub | connLocal, fn: cmdPUnsubscribe},
		connSpec{name: "ssubscribe", arity: -2, flags: inSubMode | connPubSub | connLocal, fn: cmdSSubscribe},
		connSpec{name: "sunsubscribe", arity: -1, flags: inSubMode | connPubSub | connLocal, fn: cmdSUnsubscribe},
		connSpec{name: "pubsub", arity: -2, flags: connPubSub, fn: cmdPubSub},
	)
}

// The three kinds of subscription.
type subKind uint8

const (
	subChannel subKind = iota
	subPattern
	subShard
)

var subNames = [3][2]string{
	subChannel: {"subscribe", "unsubscribe"},
	subPattern: {"psubscribe", "punsubscribe"},
	subShard:   {"ssubscribe", "sunsubscribe"},
}

// subscriptions are one connection's, in the order they were made.
type subscriptions [3][]string

func (s *subscriptions) has(k subKind, name string) bool {
	for _, n := range s[k] {
		if n == name {
			return true
		}
	}
	return false
}

func (s *subscriptions) remove(k subKind, name string) bool {
	for i, n := range s[k] {
		if n == name {
			s[k] = append(s[k][:i], s[k][i+1:]...)
			return true
		}
	}
	return false
}

// count is the number Redis reports after (un)subscribing: channels plus
// patterns, or shard channels alone.
func (s *subscriptions) count(k subKind) int {
	if k == subShard {
		return len(s[subShard])
	}
	return len(s[subChannel]) + len(s[subPattern])
}

// pushReply is a message or a (un)subscription confirmation: an array in
// RESP2, a push in RESP3.
func pushReply(elems ...resp.Reply) resp.Reply {
	return resp.Reply{Type: resp.Push, Elems: elems}
}

// frame is one message for many subscribers, encoded once for each
// protocol when first needed. Subscribers of one message are served one
// at a time (under the hub's lock), so a frame needs no lock of its own.
type frame struct {
	r   resp.Reply
	enc [2][]byte // RESP2, RESP3
}

func (f *frame) encoded(proto int) []byte {
	i := 0
	if proto >= 3 {
		i = 1
	}
	if f.enc[i] == nil {
		f.enc[i] = f.r.AppendProto(nil, proto)
	}
	return f.enc[i]
}

// Hub delivers published messages to this node's subscribers.
type Hub struct {
	mu        sync.RWMutex
	subs      [3]map[string][]*conn // name -> subscribers in subscription order
	delivered atomic.Int64          // messages queued to subscribers, ever
	// listening counts subscriptions (a connection and a name) of every
	// kind; changed under mu, read without it (Listened).
	listening atomic.Int64
}

// Listened reports whether any connection has a subscription (a channel,
// pattern or shard channel), for fsm.Options.Listened: while none has, the
// state machine records no published message for this hub. A connection
// that subscribes while a command is applied may so miss a message the
// command published; Redis orders the two the same way (a subscription
// made after PUBLISH ran does not get its message).
func (h *Hub) Listened() bool { return h.listening.Load() > 0 }

// NewHub returns an empty hub.
func NewHub() *Hub {
	h := &Hub{}
	for i := range h.subs {
		h.subs[i] = make(map[string][]*conn)
	}
	return h
}

func (c *conn) subscribed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs[0])+len(c.subs[1])+len(c.subs[2]) > 0
}

func (h *Hub) subscribe(c *conn, k subKind, names [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range names {
		name := string(b)
		c.mu.Lock()
		if !c.subs.has(k, name) {
			c.subs[k] = append(c.subs[k], name)
			h.subs[k][name] = append(h.subs[k][name], c)
			h.listening.Add(1)
		}
		n := c.subs.count(k)
		c.confirm(pushReply(resp.BulkString(subNames[k][0]), resp.BulkReply(b), resp.IntReply(int64(n))))
		c.mu.Unlock()
	}
}

// confirm queues a (un)subscription confirmation, or inside EXEC makes it
// an element of EXEC's array (multi_conn.go); c.mu is held.
func (c *conn) confirm(r resp.Reply) {
	if c.capture != nil {
		*c.capture = append(*c.capture, r)
		return
	}
	c.out = r.AppendProto(c.out, c.proto)
}

// unsubscribe removes the named subscriptions, or all of kind k when names
// is empty, answering once per name as Redis does.
func (h *Hub) unsubscribe(c *conn, k subKind, names [][]byte, reply bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var list []string
	if len(names) == 0 {
		list = append(list, c.subs[k]...)
	} else {
		for _, b := range names {
			list = append(list, string(b))
		}
	}
	if len(list) == 0 && reply {
		c.confirm(pushReply(resp.BulkString(subNames[k][1]), resp.NilReply, resp.IntReply(int64(c.subs.count(k)))))
		return
	}
	for _, name := range list {
		if c.subs.remove(k, name) {
			h.drop(k, name, c)
		}
		if reply {
			c.confirm(pushReply(resp.BulkString(subNames[k][1]), resp.BulkString(name), resp.IntReply(int64(c.subs.count(k)))))
		}
	}
}

// drop removes c from the subscribers of name; h.mu is held.
func (h *Hub) drop(k subKind, name string, c *conn) {
	list := h.subs[k][name]
	for i, o := range list {
		if o == c {
			list = append(list[:i:i], list[i+1:]...)
			h.listening.Add(-1)
			break
		}
	}
	if len(list) == 0 {
		delete(h.subs[k], name)
	} else {
		h.subs[k][name] = list
	}
}

func (h *Hub) unsubscribeAll(c *conn) {
	for k := subChannel; k <= subShard; k++ {
		h.unsubscribe(c, k, nil, false)
	}
}

// Deliver sends each message to this node's subscribers and returns the
// total number of deliveries.
func (h *Hub) Deliver(msgs []fsm.Publish) int {
	n := 0
	for _, c := range h.DeliverEach(msgs) {
		n += c
	}
	return n
}

// DeliverEach sends each message to this node's subscribers: channel
// subscribers, then pattern subscribers (SPUBLISH: shard channel
// subscribers). It returns the number of deliveries of each message, or
// nil when none was delivered (the usual case: a Redisson unlock publishes
// to a channel nobody on this node listens to), which saves an allocation
// on every node for every such command.
func (h *Hub) DeliverEach(msgs []fsm.Publish) []int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var counts []int
	set := func(i, n int) {
		if n == 0 {
			return
		}
		if counts == nil {
			counts = make([]int, len(msgs))
		}
		counts[i] = n
	}
	for i, m := range msgs {
		n := 0
		if m.Shard {
			for _, c := range h.subs[subShard][string(m.Channel)] {
				if c.push(&frame{r: pushReply(resp.BulkString("smessage"), resp.BulkReply(m.Channel), resp.BulkReply(m.Message))}) {
					n++
				}
			}
			set(i, n)
			h.delivered.Add(int64(n))
			continue
		}
		f := frame{r: pushReply(resp.BulkString("message"), resp.BulkReply(m.Channel), resp.BulkReply(m.Message))}
		for _, c := range h.subs[subChannel][string(m.Channel)] {
			if c.push(&f) {
				n++
			}
		}
		for pat, subs := range h.subs[subPattern] {
			if !glob.Match([]byte(pat), m.Channel) {
				continue
			}
			pf := frame{r: pushReply(resp.BulkString("pmessage"), resp.BulkString(pat), resp.BulkReply(m.Channel), resp.BulkReply(m.Message))}
			for _, c := range subs {
				if c.push(&pf) {
					n++
				}
			}
		}
		set(i, n)
		h.delivered.Add(int64(n))
	}
	return counts
}

func cmdSubscribe(c *conn, args [][]byte)  { c.srv.hub.subscribe(c, subChannel, args[1:]) }
func cmdPSubscribe(c *conn, args [][]byte) { c.srv.hub.subscribe(c, subPattern, args[1:]) }
func cmdSSubscribe(c *conn, args [][]byte) { c.srv.hub.subscribe(c, subShard, args[1:]) }
func cmdUnsubscribe(c *conn, args [][]byte) {
	c.srv.hub.unsubscribe(c, subChannel, args[1:], true)
}
func cmdPUnsubscribe(c *conn, args [][]byte) {
	c.srv.hub.unsubscribe(c, subPattern, args[1:], true)
}
func cmdSUnsubscribe(c *conn, args [][]byte) {
	c.srv.hub.unsubscribe(c, subShard, args[1:], true)
}

// names returns the subscribed names of kind k matching pattern (all if
// nil), sorted.
func (h *Hub) names(k subKind, pattern []byte) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for name := range h.subs[k] {
		if pattern == nil || glob.Match(pattern, []byte(name)) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Receivers counts this node's subscribers that a message on channel
// would reach now: channel and pattern subscribers, or for SPUBLISH
// (shard) the shard channel's.
func (h *Hub) Receivers(channel []byte, shard bool) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if shard {
		return len(h.subs[subShard][string(channel)])
	}
	n := len(h.subs[subChannel][string(channel)])
	for pat, subs := range h.subs[subPattern] {
		if glob.Match([]byte(pat), channel) {
			n += len(subs)
		}
	}
	return n
}

func (h *Hub) numSub(k subKind, name string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[k][name])
}

func cmdPubSub(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	h := c.srv.hub
	switch {
	case (sub == "channels" || sub == "shardchannels") && len(args) <= 3:
		k := subChannel
		if sub == "shardchannels" {
			k = subShard
		}
		var pat []byte
		if len(args) == 3 {
			pat = args[2]
		}
		names := h.names(k, pat)
		out := make([]resp.Reply, len(names))
		for i, n := range names {
			out[i] = resp.BulkString(n)
		}
		c.reply(resp.ArrayReply(out...))
	case sub == "numsub" || sub == "shardnumsub":
		k := subChannel
		if sub == "shardnumsub" {
			k = subShard
		}
		out := make([]resp.Reply, 0, 2*(len(args)-2))
		for _, ch := range args[2:] {
			out = append(out, resp.BulkReply(ch), resp.IntReply(int64(h.numSub(k, string(ch)))))
		}
		c.reply(resp.ArrayReply(out...))
	case sub == "numpat" && len(args) == 2:
		h.mu.RLock()
		n := len(h.subs[subPattern])
		h.mu.RUnlock()
		c.reply(resp.IntReply(int64(n)))
	case sub == "help" && len(args) == 2:
		c.reply(helpReply("PUBSUB", []string{
			"CHANNELS [<pattern>]",
			"    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT",
			"    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]",
			"    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]",
			"    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]",
			"    Return the number of subscribers for the specified shard level channel(s)",
		}))
	default:
		c.reply(subcommandSyntaxError(args))
	}
}

// helpReply is the reply of a "<CMD> HELP" subcommand.
func helpReply(cmd string, lines []string) resp.Reply {
	all := append([]string{cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}, lines...)
	all = append(all, "HELP", "    Prints this help.")
	out := make([]resp.Reply, len(all))
	for i, l := range all {
		out[i] = resp.StatusReply(l)
	}
	return resp.ArrayReply(out...)
}

// unknownSubcommand is Redis's error for a subcommand it does not know.
func unknownSubcommand(args [][]byte) resp.Reply {
	return resp.Err("ERR unknown subcommand '" + truncate(string(args[1]), 128) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
