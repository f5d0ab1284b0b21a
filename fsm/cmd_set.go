package fsm

import (
	"math"
	"math/bits"

	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	register(
		Spec{Name: "sadd", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSadd},
		Spec{Name: "srem", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSrem},
		Spec{Name: "sismember", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSismember},
		Spec{Name: "smismember", Arity: -3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSmismember},
		Spec{Name: "smembers", Arity: 2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSmembers},
		Spec{Name: "scard", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdScard},
		Spec{Name: "spop", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSpop},
		Spec{Name: "srandmember", Arity: -2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSrandmember},
		Spec{Name: "sscan", Arity: -3, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSscan},
	)
}

// Error replies shared by the collection commands (Redis 7.0).
const (
	msgCountPositive = "ERR value is out of range, must be positive"
	msgRandCount     = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)

// maxRandRepeats bounds the count of SRANDMEMBER and HRANDFIELD with a
// negative count (repeats allowed). Redis streams such a reply however
// long it is; a node here builds it in memory, so a count like -10^18
// would take the node down instead of one client.
const maxRandRepeats = 100_000

func cmdSadd(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	isNew := v == nil
	if isNew {
		v = &Value{Kind: KindSet, agg: NewSet()}
	}
	n := 0
	for _, m := range args[2:] {
		if c.setAdd(v, m) {
			n++
		}
	}
	if n > 0 {
		saveValue(c, args[1], v, isNew)
		c.notify(notifySet, "sadd", args[1])
	}
	return resp.IntReply(int64(n))
}

func cmdSrem(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	n := 0
	for _, m := range args[2:] {
		if v.set().Remove(m) {
			n++
		}
	}
	if n > 0 {
		c.touch(v)
		c.notify(notifySet, "srem", args[1])
		c.removeIfEmpty(args[1], v)
	}
	return resp.IntReply(int64(n))
}

func cmdSismember(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v != nil && v.set().Has(args[2]) {
		return resp.One
	}
	return resp.Zero
}

func cmdSmismember(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	out := make([]resp.Reply, 0, len(args)-2)
	for _, m := range args[2:] {
		if v != nil && v.set().Has(m) {
			out = append(out, resp.One)
		} else {
			out = append(out, resp.Zero)
		}
	}
	return resp.ArrayReply(out...)
}

func cmdSmembers(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.SetReply()
	}
	return setMembersReply(v.set())
}

func setMembersReply(s *Set) resp.Reply {
	out := make([]resp.Reply, 0, s.Len())
	s.Each(func(m string) bool {
		out = append(out, resp.BulkString(m))
		return true
	})
	return resp.SetReply(out...)
}

func cmdScard(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	return resp.IntReply(int64(v.set().Len()))
}

// cmdSpop removes members chosen as SRANDMEMBER chooses distinct ones.
func cmdSpop(c *Ctx, args [][]byte) resp.Reply {
	if len(args) > 3 {
		return resp.Err(msgSyntax)
	}
	count, hasCount := int64(1), len(args) == 3
	if hasCount {
		n, ok := parseInt64(args[2])
		if !ok || n < 0 {
			return resp.Err(msgCountPositive)
		}
		count = n
	}
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		if hasCount {
			return resp.SetReply()
		}
		return resp.NilReply
	}
	if count == 0 {
		return resp.SetReply()
	}
	var reply resp.Reply
	if hasCount && count >= int64(v.set().Len()) {
		reply = setMembersReply(v.set())
		c.remove(string(args[1]))
		c.notify(notifySet, "spop", args[1])
		c.notify(notifyGeneric, "del", args[1])
		return reply
	}
	picks := pickIndexes(newPickRand(c, args[1]), v.set().Len(), count)
	members := make([]string, len(picks))
	for i, p := range picks {
		members[i] = v.set().nth(p)
	}
	out := make([]resp.Reply, len(members))
	for i, m := range members {
		v.set().Remove([]byte(m))
		out[i] = resp.BulkString(m)
	}
	c.touch(v)
	c.notify(notifySet, "spop", args[1])
	c.removeIfEmpty(args[1], v)
	if !hasCount {
		return out[0]
	}
	return resp.SetReply(out...)
}

func cmdSrandmember(c *Ctx, args [][]byte) resp.Reply {
	if len(args) > 3 {
		return resp.Err(msgSyntax)
	}
	if len(args) == 2 {
		v, ok := c.lookupKind(args[1], KindSet)
		if !ok {
			return resp.Err(msgWrongType)
		}
		if v == nil {
			return resp.NilReply
		}
		return resp.BulkString(v.set().nth(newPickRand(c, args[1]).intn(v.set().Len())))
	}
	n, errReply, ok := parseRandCount(args[2])
	if !ok {
		return errReply
	}
	if n < -maxRandRepeats {
		return resp.Err(msgOutOfRangeBare)
	}
	v, ok := c.lookupKind(args[1], KindSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil || n == 0 {
		return resp.EmptyArr
	}
	if n >= int64(v.set().Len()) {
		r := setMembersReply(v.set())
		r.Type = resp.Array // an array, not a set, even in RESP3
		return r
	}
	picks := pickIndexes(newPickRand(c, args[1]), v.set().Len(), n)
	out := make([]resp.Reply, len(picks))
	for i, p := range picks {
		out[i] = resp.BulkString(v.set().nth(p))
	}
	return resp.ArrayReply(out...)
}

// parseRandCount parses the count of SRANDMEMBER and HRANDFIELD: any
// integer but the lowest (whose negation does not fit).
func parseRandCount(b []byte) (int64, resp.Reply, bool) {
	n, ok := parseInt64(b)
	if !ok {
		return 0, resp.Err(msgNotInt), false
	}
	if n == math.MinInt64 {
		return 0, resp.Err(msgRandCount), false
	}
	return n, resp.Reply{}, true
}

// pickIndexes chooses positions in [0, size) for a random-member command
// with count n: |n| positions that may repeat when n < 0; otherwise n
// distinct ones in the order drawn, or all of them in order when n >= size.
func pickIndexes(r *pickRand, size int, n int64) []int {
	if n < 0 {
		out := make([]int, -n)
		for i := range out {
			out[i] = r.intn(size)
		}
		return out
	}
	if n >= int64(size) {
		out := make([]int, size)
		for i := range out {
			out[i] = i
		}
		return out
	}
	// A partial Fisher-Yates shuffle, over a sparse permutation.
	swapped := make(map[int]int, n)
	at := func(i int) int {
		if j, ok := swapped[i]; ok {
			return j
		}
		return i
	}
	out := make([]int, n)
	for i := range out {
		j := i + r.intn(size-i)
		out[i] = at(j)
		swapped[j] = at(i)
	}
	return out
}

// pickRand is the deterministic stand-in for Redis's random choices (SPOP,
// SRANDMEMBER, HRANDFIELD): a splitmix64 stream seeded from what every
// replica shares — the command's time, the state's version and the key —
// so that every node picks the same elements, and the next call picks
// others.
type pickRand struct{ s uint64 }

func newPickRand(c *Ctx, key []byte) *pickRand {
	h := uint64(14695981039346656037) // FNV-1a
	for _, b := range key {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return &pickRand{s: h ^ uint64(c.now)*0x9E3779B97F4A7C15 ^ bits.RotateLeft64(c.f.version, 32)}
}

func (r *pickRand) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// intn returns a number in [0, n), n > 0.
func (r *pickRand) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// cmdSscan: a set of at most 512 integers is an intset in Redis 7.0, the
// compact case of elemScan; any other set is a hash table.
func cmdSscan(c *Ctx, args [][]byte) resp.Reply {
	return elemScan(c, args, KindSet, func(v *Value) ([]scanElem, bool) {
		out := make([]scanElem, 0, v.set().Len())
		compact := v.set().Len() <= 512
		v.set().Each(func(m string) bool {
			if compact {
				_, compact = parseInt64([]byte(m))
			}
			out = append(out, scanElem{name: m})
			return true
		})
		return out, compact
	})
}
