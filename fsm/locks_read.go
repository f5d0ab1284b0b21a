package fsm

import (
	"bytes"
	"math"
	"sort"
	"strings"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/resp"
)

// LocksCommand is the internal read behind DEADBOLT LOCKS: the server
// sends "__locks" followed by the options the client gave (MATCH pattern,
// KIND kind, COUNT n). It is a read: served like GET (forwarded to the
// leader and read-indexed in a cluster), never through the log.
const LocksCommand = "__locks"

func init() {
	register(Spec{Name: LocksCommand, Arity: -1, Flags: Read | Internal | NoScript, fn: cmdLocks})
}

// Lock kinds DEADBOLT LOCKS reports, in the order of its help.
var lockKindNames = []string{"reentrant", "fair", "fenced", "rwlock", "semaphore", "permit-semaphore", "latch", "string"}

// LockKindNames lists the kinds DEADBOLT LOCKS recognises.
func LockKindNames() []string { return append([]string(nil), lockKindNames...) }

// DefaultLocksCount is how many locks DEADBOLT LOCKS lists without COUNT.
const DefaultLocksCount = 100

// noExpiryScore is the score a Redisson permit-expirable semaphore gives
// a permit that never expires.
const noExpiryScore = 922337203685477

const (
	msgLocksCount = "ERR COUNT must be a positive integer"
	msgLocksKind  = "ERR unknown lock kind '%s' (one of reentrant, fair, fenced, rwlock, semaphore, permit-semaphore, latch, string)"
)

// cmdLocks lists the keys shaped as the locks of the clients deadbolt
// serves, in (db, name) order, as an array of maps:
//
//	name, kind, db, holders (array of maps: id, count, and expires-ms for
//	a permit), held-since-ms (-1: unknown), lease-ms (-1: none),
//	channels (where its waiters subscribe; the server adds waiters), queue
//	(a fair lock's waiting owners: id, deadline-ms), and by kind: mode
//	(rwlock), token (fenced), permits (semaphores), count (latch).
//
// A restricted ACL user (Command.User) sees only the locks it could read
// (lockReader): COUNT counts those.
func cmdLocks(c *Ctx, args [][]byte) resp.Reply {
	var (
		pattern []byte
		kind    string
		count   = DefaultLocksCount
	)
	for i := 1; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return resp.Err(msgSyntax)
		}
		val := args[i+1]
		switch {
		case optEq(args[i], "match"):
			pattern = val
		case optEq(args[i], "kind"):
			kind = strings.ToLower(string(val))
			found := false
			for _, k := range lockKindNames {
				found = found || k == kind
			}
			if !found {
				return resp.Err(strings.Replace(msgLocksKind, "%s", truncName(string(val)), 1))
			}
		case optEq(args[i], "count"):
			n, ok := parseInt64(val)
			if !ok || n < 1 {
				return resp.Err(msgLocksCount)
			}
			count = int(min(n, math.MaxInt32))
		default:
			return resp.Err(msgSyntax)
		}
	}
	out := []resp.Reply{}
	readable, ok := c.lockReader(args)
	if !ok {
		return resp.ArrayReply(out...)
	}
	for db, ks := range c.f.dbs {
		// Only keys that can be locks are sorted: lock-shaped strings and
		// hashes. Whether the user may read them is asked once a key is
		// known to be a lock, with its companion keys (describeLock).
		var names []string
		for k, v := range ks.keys.all() {
			if v.lock != shapeNone || v.Kind == KindHash {
				if pattern == nil || stringMatch(pattern, []byte(k), false) {
					names = append(names, k)
				}
			}
		}
		sort.Strings(names)
		for _, name := range names {
			if len(out) >= count {
				return resp.ArrayReply(out...)
			}
			v := ks.keys.get(name)
			if v.expired(c.now) {
				continue
			}
			if r, k, ok := c.describeLock(ks, db, name, v, readable); ok && (kind == "" || kind == k) {
				out = append(out, r)
			}
		}
	}
	return resp.ArrayReply(out...)
}

// lockReader returns which keys the command's ACL user may see the locks
// of: a lock is shown as if DEADBOLT LOCKS named its key, and every
// companion key its entry is read from (a fair lock's queue and timeouts,
// a fenced lock's token, a permit semaphore's permits), for reading
// (acl.User.KeyReader): lock tokens and owner ids are what a client
// releases a lock with. nil: every key (no user, or one who may read
// them all). ok is false when the user is gone (it sees nothing).
func (c *Ctx) lockReader(args [][]byte) (readable func(keys ...[]byte) bool, ok bool) {
	if c.user == "" {
		return nil, true
	}
	u := c.f.users.Get(c.user)
	if u == nil {
		return nil, false
	}
	argv := append([][]byte{[]byte("deadbolt"), []byte("locks")}, args[1:]...)
	return u.KeyReader(acl.LookupArgs(argv), argv), true
}

func truncName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// live returns key's value in ks if it is present, of kind k and not
// expired.
func (c *Ctx) live(ks *keyspace, key string, k Kind) *Value {
	v := ks.keys.get(key)
	if v == nil || v.Kind != k || v.expired(c.now) {
		return nil
	}
	return v
}

// companion returns a lock's companion key as live does, and notes it
// among the keys the user must be able to read to see the entry.
func (c *Ctx) companion(ks *keyspace, e *lockEntry, key string, k Kind) *Value {
	v := c.live(ks, key, k)
	if v != nil && e.readable != nil {
		e.read = append(e.read, []byte(key))
	}
	return v
}

// lockEntry collects one lock's fields.
type lockEntry struct {
	readable   func(keys ...[]byte) bool // the keys the user may see (lockReader); nil: all
	read       [][]byte                  // the companion keys read, when readable is set
	name, kind string
	db         int
	holders    []resp.Reply
	since      int64
	lease      int64
	channels   []resp.Reply
	queue      []resp.Reply
	extra      []resp.Reply // kind-specific pairs
}

func (e *lockEntry) reply() resp.Reply {
	kv := []resp.Reply{
		resp.BulkString("name"), resp.BulkString(e.name),
		resp.BulkString("kind"), resp.BulkString(e.kind),
		resp.BulkString("db"), resp.IntReply(int64(e.db)),
		resp.BulkString("holders"), resp.ArrayReply(e.holders...),
		resp.BulkString("held-since-ms"), resp.IntReply(e.since),
		resp.BulkString("lease-ms"), resp.IntReply(e.lease),
		resp.BulkString("channels"), resp.ArrayReply(e.channels...),
		resp.BulkString("queue"), resp.ArrayReply(e.queue...),
	}
	return resp.MapReply(append(kv, e.extra...)...)
}

func holder(id []byte, count int64) resp.Reply {
	return resp.MapReply(resp.BulkString("id"), resp.BulkReply(id), resp.BulkString("count"), resp.IntReply(count))
}

// describeLock recognises the lock layout of key name, if it has one, and
// returns its entry and kind.
func (c *Ctx) describeLock(ks *keyspace, db int, name string, v *Value, readable func(keys ...[]byte) bool) (resp.Reply, string, bool) {
	e := lockEntry{readable: readable, name: name, db: db, since: -1, lease: -1}
	if v.Deadline != 0 {
		e.lease = max(v.Deadline-c.now, 0)
	}
	switch v.Kind {
	case KindString:
		if !c.describeStringLock(ks, &e, v) {
			return resp.Reply{}, "", false
		}
	case KindHash:
		if !c.describeHashLock(ks, &e, v) {
			return resp.Reply{}, "", false
		}
	default:
		return resp.Reply{}, "", false
	}
	if readable != nil && !readable(append(e.read, []byte(name))...) {
		return resp.Reply{}, "", false // as if the lock were not there
	}
	return e.reply(), e.kind, true
}

func (c *Ctx) describeStringLock(ks *keyspace, e *lockEntry, v *Value) bool {
	switch v.lock {
	case shapeString:
		e.kind = "string"
		e.since = v.created()
		e.holders = []resp.Reply{holder(v.Str, 1)}
	case shapeSemaphore:
		e.kind = "semaphore"
		e.channels = []resp.Reply{resp.BulkString(companionName("redisson_sc", e.name))}
		e.extra = []resp.Reply{resp.BulkString("permits"), counterValue(v.Str)}
		if z := c.companion(ks, e, suffixedName(e.name, "timeout"), KindZSet); z != nil {
			e.kind = "permit-semaphore"
			z.zset().Each(func(m string, score float64) bool {
				exp := int64(-1)
				if score < noExpiryScore {
					exp = int64(score)
				}
				e.holders = append(e.holders, resp.MapReply(
					resp.BulkString("id"), resp.BulkString(hexID(m)),
					resp.BulkString("count"), resp.IntReply(1),
					resp.BulkString("expires-ms"), resp.IntReply(exp)))
				return true
			})
		}
	case shapeLatch:
		e.kind = "latch"
		ch := "redisson_countdownlatch__channel__{" + e.name + "}"
		if strings.Contains(e.name, "{") {
			ch = "redisson_countdownlatch__channel__" + e.name
		}
		e.channels = []resp.Reply{resp.BulkString(ch)}
		e.extra = []resp.Reply{resp.BulkString("count"), counterValue(v.Str)}
	default:
		return false
	}
	return true
}

// counterValue is a semaphore's or latch's count as an integer, or its
// text if it is not one.
func counterValue(b []byte) resp.Reply {
	if n, ok := parseInt64(b); ok {
		return resp.IntReply(n)
	}
	return resp.BulkReply(b)
}

// hexID prints a permit id: Redisson's are 16 raw bytes.
func hexID(m string) string {
	for i := 0; i < len(m); i++ {
		if m[i] < 0x21 || m[i] > 0x7e {
			const digits = "0123456789abcdef"
			b := make([]byte, 2*len(m))
			for j := 0; j < len(m); j++ {
				b[2*j], b[2*j+1] = digits[m[j]>>4], digits[m[j]&15]
			}
			return string(b)
		}
	}
	return m
}

// maxHoldFields bounds how many fields a hash may have to be taken for a
// lock by its layout alone (a lock has one owner; a read lock a few).
const maxHoldFields = 1024

func (c *Ctx) describeHashLock(ks *keyspace, e *lockEntry, v *Value) bool {
	if v.Deadline == 0 {
		// Redisson gives every lock a lease (the watchdog's, when the
		// caller gives none); a hash without one is data, such as
		// counters kept with HINCRBY.
		return false
	}
	if v.lock != shapeNone {
		e.since = v.created()
	}
	if mode, ok := v.hash().Get([]byte("mode")); ok && (string(mode) == "read" || string(mode) == "write") {
		e.kind = "rwlock"
		e.extra = []resp.Reply{resp.BulkString("mode"), resp.BulkReply(mode)}
		v.hash().Each(func(f, val []byte) bool {
			if string(f) != "mode" {
				n, _ := parseInt64(val)
				e.holders = append(e.holders, holder(f, n))
			}
			return true
		})
		e.channels = []resp.Reply{resp.BulkString(companionName("redisson_rwlock", e.name))}
		return true
	}
	if v.lock != shapeHash && !holdCounts(v.hash()) {
		return false
	}
	v.hash().Each(func(f, val []byte) bool {
		n, _ := parseInt64(val)
		e.holders = append(e.holders, holder(f, n))
		return true
	})
	channel := companionName("redisson_lock__channel", e.name)
	e.kind = "reentrant"
	if q := c.companion(ks, e, companionName("redisson_lock_queue", e.name), KindList); q != nil {
		e.kind = "fair"
		z := c.companion(ks, e, companionName("redisson_lock_timeout", e.name), KindZSet)
		q.list().Each(func(id []byte) bool {
			deadline := int64(-1)
			if z != nil {
				if s, ok := z.zset().Score(id); ok {
					deadline = int64(s)
				}
			}
			e.queue = append(e.queue, resp.MapReply(resp.BulkString("id"), resp.BulkReply(id),
				resp.BulkString("deadline-ms"), resp.IntReply(deadline)))
			e.channels = append(e.channels, resp.BulkString(channel+":"+string(id)))
			return true
		})
		return true
	}
	e.channels = []resp.Reply{resp.BulkString(channel)}
	if t := c.companion(ks, e, companionName("redisson_lock_token", e.name), KindString); t != nil {
		e.kind = "fenced"
		e.extra = []resp.Reply{resp.BulkString("token"), counterValue(t.Str)}
	}
	return true
}

// holdCounts reports whether a hash looks like a Redisson lock: a few
// "<owner>:<thread>" fields holding positive counts.
func holdCounts(h hashRef) bool {
	n := h.Len()
	if n == 0 || n > maxHoldFields {
		return false
	}
	ok := true
	h.peekEach(func(f, val []byte) bool { // keeps nothing: the bytes may change in place after
		k, isInt := parseInt64(val)
		ok = isInt && k > 0 && bytes.IndexByte(f, ':') > 0
		return ok
	})
	return ok
}
