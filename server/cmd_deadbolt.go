package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// DEADBOLT is deadbolt's own command family. DEADBOLT LOCKS lists the
// keys shaped as the locks of the clients deadbolt serves (fsm/locks.go):
// a read through the backend's read path (forwarded to the leader and
// read-indexed in a cluster, like GET), to which this node adds the
// waiters subscribed here and on the other members. A restricted ACL
// user sees only the locks whose keys it may read (fsm.LocksCommand).
func init() {
	registerConn(connSpec{name: "deadbolt", arity: -2, flags: mayBlock | noMulti, fn: cmdDeadbolt}) // a read of the whole keyspace: not at a place in a transaction
}

var deadboltHelp = []string{
	"LOCKS [MATCH <pattern>] [KIND <kind>] [COUNT <count>]",
	"    List the locks held, in (db, name) order: name, kind, db, holders (id, count),",
	"    held-since-ms, lease-ms, channels, waiters (on every member that answers),",
	"    waiters-nodes (how many did) and queue (fair locks).",
	"    Kinds: " + strings.Join(fsm.LockKindNames(), ", ") + ". COUNT defaults to 100.",
}

func cmdDeadbolt(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "help":
		c.reply(helpReply("DEADBOLT", deadboltHelp))
	case "locks":
		c.reply(deadboltLocks(c, args[2:]))
	}
}

// MemberAsker is implemented by a cluster backend: DEADBOLT LOCKS asks
// the other members how many subscribers they have to the locks'
// channels (PUBSUB NUMSUB and SHARDNUMSUB, sent as a member).
type MemberAsker interface {
	AskOthers(ctx context.Context, args [][]byte, timeout time.Duration) (replies []resp.Reply, unanswered int)
}

// askTimeout bounds how long DEADBOLT LOCKS waits for another member's
// subscriber counts.
const askTimeout = 500 * time.Millisecond

// deadboltLocks reads the locks through the backend and adds to each the
// waiters subscribed to its channels on every member that answers. The
// read carries the connection's ACL user: the state machine lists only
// the locks that user may read (fsm/locks_read.go), and the reply is
// checked again here against the user this node knows, so that a state
// machine that did not filter (an older leader answering a forwarded
// read during an upgrade) shows a user no other lock either.
func deadboltLocks(c *conn, opts [][]byte) resp.Reply {
	user := c.scriptUser()
	var readable func(keys ...[]byte) bool
	if user != "" {
		argv := append([][]byte{[]byte("deadbolt"), []byte("locks")}, opts...)
		if readable = c.user.KeyReader(acl.LookupArgs(argv), argv); readable == nil {
			user = "" // it may read every key
		}
	}
	return c.srv.locks(context.Background(), c.db, user, readable, opts)
}

// Locks answers DEADBOLT LOCKS with options opts (MATCH, KIND, COUNT, as
// the command's arguments) for a caller without a connection: the status
// page and its JSON API (httpapi). ctx bounds the read.
func (s *Server) Locks(ctx context.Context, opts [][]byte) resp.Reply {
	return s.locks(ctx, 0, "", nil, opts)
}

// locks reads the locks user (an ACL user's name, "" for every lock) may
// see; readable, if not nil, tests each lock's name again.
func (s *Server) locks(ctx context.Context, db int, user string, readable func(keys ...[]byte) bool, opts [][]byte) resp.Reply {
	cmd := fsm.Command{DB: db, Args: append([][]byte{[]byte(fsm.LocksCommand)}, opts...), User: user}
	res, err := s.backend.Read(ctx, cmd)
	if err != nil {
		return resp.Err(errorText(err))
	}
	r := res.Reply
	if r.Type != resp.Array {
		return r // an error reply
	}
	if readable != nil {
		kept := r.Elems[:0]
		for _, lock := range r.Elems {
			if name := lockField(lock, "name"); name.Type == resp.Bulk && readable(name.Str) {
				kept = append(kept, lock)
			}
		}
		r.Elems = kept
	}
	// Every channel once, counted here, then on the other members.
	counts := make(map[string]int64)
	var chans [][]byte
	for _, lock := range r.Elems {
		for _, ch := range lockChannels(lock) {
			if _, seen := counts[string(ch.Str)]; !seen {
				counts[string(ch.Str)] = int64(s.hub.numSub(subChannel, string(ch.Str)) + s.hub.numSub(subShard, string(ch.Str)))
				chans = append(chans, ch.Str)
			}
		}
	}
	nodes := int64(1)
	if a, ok := s.backend.(MemberAsker); ok && len(chans) > 0 {
		nodes += askWaiters(a, chans, counts)
	}
	for i := range r.Elems {
		r.Elems[i] = withWaiters(r.Elems[i], counts, nodes)
	}
	return r
}

// askWaiters adds the other members' subscribers to counts and returns
// how many members answered both questions.
func askWaiters(a MemberAsker, chans [][]byte, counts map[string]int64) int64 {
	var answers [2][]resp.Reply
	var wg sync.WaitGroup
	for i, sub := range []string{"NUMSUB", "SHARDNUMSUB"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([][]byte{[]byte("PUBSUB"), []byte(sub)}, chans...)
			answers[i], _ = a.AskOthers(context.Background(), args, askTimeout)
		}()
	}
	wg.Wait()
	for _, replies := range answers {
		for _, r := range replies {
			for j := 0; j+1 < len(r.Elems); j += 2 {
				if n, ok := counts[string(r.Elems[j].Str)]; ok && r.Elems[j+1].Type == resp.Int {
					counts[string(r.Elems[j].Str)] = n + r.Elems[j+1].Int
				}
			}
		}
	}
	return int64(min(len(answers[0]), len(answers[1])))
}

// lockChannels returns the "channels" of a lock's map.
func lockChannels(lock resp.Reply) []resp.Reply {
	return lockField(lock, "channels").Elems
}

// lockField returns the field name of a lock's map (a zero Reply if it
// has none).
func lockField(lock resp.Reply, name string) resp.Reply {
	for i := 0; i+1 < len(lock.Elems); i += 2 {
		if string(lock.Elems[i].Str) == name {
			return lock.Elems[i+1]
		}
	}
	return resp.Reply{}
}

// withWaiters adds "waiters" and "waiters-nodes" to a lock's map after
// "channels": how many clients subscribe (SUBSCRIBE or SSUBSCRIBE) to its
// channels on the members counted, or -1 for a kind whose clients poll
// (no channel); and how many members were counted (a member that did not
// answer in time is not).
func withWaiters(lock resp.Reply, counts map[string]int64, nodes int64) resp.Reply {
	kv := lock.Elems
	out := make([]resp.Reply, 0, len(kv)+4)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kv[i], kv[i+1])
		if string(kv[i].Str) != "channels" {
			continue
		}
		n := int64(-1)
		if len(kv[i+1].Elems) > 0 {
			n = 0
			for _, ch := range kv[i+1].Elems {
				n += counts[string(ch.Str)]
			}
		}
		out = append(out, resp.BulkString("waiters"), resp.IntReply(n), resp.BulkString("waiters-nodes"), resp.IntReply(nodes))
	}
	lock.Elems = out
	return lock
}
