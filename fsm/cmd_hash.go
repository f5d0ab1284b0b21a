package fsm

import (
	"bytes"
	"math"
	"math/big"
	"sort"
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	register(
		Spec{Name: "hset", Arity: -4, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHset},
		Spec{Name: "hsetnx", Arity: 4, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHsetnx},
		Spec{Name: "hget", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHget},
		Spec{Name: "hmget", Arity: -3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHmget},
		Spec{Name: "hmset", Arity: -4, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHmset},
		Spec{Name: "hdel", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHdel},
		Spec{Name: "hexists", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHexists},
		Spec{Name: "hincrby", Arity: 4, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHincrby},
		Spec{Name: "hincrbyfloat", Arity: 4, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHincrbyfloat},
		Spec{Name: "hlen", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHlen},
		Spec{Name: "hgetall", Arity: 2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHgetall},
		Spec{Name: "hkeys", Arity: 2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHkeys},
		Spec{Name: "hvals", Arity: 2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHvals},
		Spec{Name: "hstrlen", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHstrlen},
		Spec{Name: "hrandfield", Arity: -2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHrandfield},
		Spec{Name: "hscan", Arity: -3, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdHscan},
	)
}

// Error replies of the hash commands (Redis 7.0 t_hash.c).
const (
	msgHashIncrNotFinite = "ERR value is NaN or Infinity"
	msgHashIncrOverflow  = "ERR increment would produce NaN or Infinity"
	msgOutOfRangeBare    = "ERR value is out of range"
)

// hashForWrite returns the hash at key for a command that adds fields: the
// existing one, or a new empty one (isNew) that the caller puts once it
// has a field, or drops. ok is false for a key of another kind.
//
// A new hash packs its first fields into the state machine's scratch
// (FSM.newHash, marked as the hash's own, so Set writes there in place
// while they fit), and put moves them in with the key's name (takeName,
// which moves every packed hash of up to sharedNameMax bytes, as the
// scratch is): a Redisson lock's HSET or HINCRBY so allocates the Value
// and one slice, not a third for the packed bytes. Nothing may hand the
// bytes out before put (nothing does: the callers only set fields).
func hashForWrite(c *Ctx, key []byte) (v *Value, isNew, ok bool) {
	v, ok = c.lookupKind(key, KindHash)
	if !ok {
		return nil, false, false
	}
	if v == nil {
		return &Value{Kind: KindHash, Str: c.f.newHash[:0:len(c.f.newHash)], agg: packOwned{}}, true, true
	}
	return v, false, true
}

// saveValue records a change to an aggregate: a new value is put under
// key, an existing one is touched (for WATCH).
func saveValue(c *Ctx, key []byte, v *Value, isNew bool) {
	if isNew {
		c.put(key, v)
	} else {
		c.touch(v)
	}
}

func cmdHset(c *Ctx, args [][]byte) resp.Reply  { return hsetGeneric(c, args, "hset") }
func cmdHmset(c *Ctx, args [][]byte) resp.Reply { return hsetGeneric(c, args, "hmset") }
func hsetGeneric(c *Ctx, args [][]byte, name string) resp.Reply {
	if len(args)%2 == 1 {
		return resp.Err(WrongArity(name))
	}
	v, isNew, ok := hashForWrite(c, args[1])
	if !ok {
		return resp.Err(msgWrongType)
	}
	added := 0
	for i := 2; i < len(args); i += 2 {
		if c.hashSet(v, args[i], args[i+1]) {
			added++
		}
	}
	saveValue(c, args[1], v, isNew)
	if isNew {
		c.lockHashWrite(v, true, args[2], args[3], false)
	}
	c.notify(notifyHash, "hset", args[1])
	if name == "hmset" {
		return resp.OK
	}
	return resp.IntReply(int64(added))
}

func cmdHsetnx(c *Ctx, args [][]byte) resp.Reply {
	v, isNew, ok := hashForWrite(c, args[1])
	if !ok {
		return resp.Err(msgWrongType)
	}
	if _, exists := v.hash().peek(args[2]); exists {
		return resp.Zero
	}
	c.hashSet(v, args[2], args[3])
	saveValue(c, args[1], v, isNew)
	c.notify(notifyHash, "hset", args[1])
	return resp.One
}

func cmdHget(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.NilReply
	}
	if val, ok := v.hash().Get(args[2]); ok {
		return resp.BulkReply(val)
	}
	return resp.NilReply
}

func cmdHmget(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	out := make([]resp.Reply, 0, len(args)-2)
	for _, f := range args[2:] {
		r := resp.NilReply
		if v != nil {
			if val, ok := v.hash().Get(f); ok {
				r = resp.BulkReply(val)
			}
		}
		out = append(out, r)
	}
	return resp.ArrayReply(out...)
}

func cmdHdel(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	n := 0
	for _, f := range args[2:] {
		if v.hash().Del(f) {
			n++
			if v.hash().Len() == 0 {
				break
			}
		}
	}
	if n > 0 {
		c.touch(v)
		c.notify(notifyHash, "hdel", args[1])
		c.removeIfEmpty(args[1], v)
	}
	return resp.IntReply(int64(n))
}

func cmdHexists(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	if _, ok := v.hash().peek(args[2]); ok {
		return resp.One
	}
	return resp.Zero
}

func cmdHincrby(c *Ctx, args [][]byte) resp.Reply {
	incr, ok := parseInt64(args[3])
	if !ok {
		return resp.Err(msgNotInt)
	}
	v, isNew, ok := hashForWrite(c, args[1])
	if !ok {
		return resp.Err(msgWrongType)
	}
	var cur int64
	old, exists := v.hash().peek(args[2]) // parsed, not kept
	if exists {
		if cur, ok = parseInt64(old); !ok {
			return resp.Err(msgHashNotInt)
		}
	}
	if incr < 0 && cur < 0 && incr < math.MinInt64-cur || incr > 0 && cur > 0 && incr > math.MaxInt64-cur {
		return resp.Err(msgOverflow)
	}
	cur += incr
	var num [20]byte // Set copies it
	count := strconv.AppendInt(num[:0], cur, 10)
	c.hashSet(v, args[2], count)
	saveValue(c, args[1], v, isNew)
	if isNew || v.lock != 0 && incr > 0 {
		c.lockHashWrite(v, isNew, args[2], count, exists)
	}
	c.notify(notifyHash, "hincrby", args[1])
	return resp.IntReply(cur)
}

// cmdHincrbyfloat adds in long double precision, as Redis does, and stores
// and replies with the sum printed as INCRBYFLOAT prints it.
func cmdHincrbyfloat(c *Ctx, args [][]byte) resp.Reply {
	incr, ok := parseLongDouble(args[3])
	if !ok {
		return resp.Err(msgNotFloat)
	}
	if incr.IsInf() {
		return resp.Err(msgHashIncrNotFinite)
	}
	v, isNew, ok := hashForWrite(c, args[1])
	if !ok {
		return resp.Err(msgWrongType)
	}
	cur := new(big.Float)
	if old, exists := v.hash().peek(args[2]); exists { // parsed, not kept
		if cur, ok = parseLongDouble(old); !ok {
			return resp.Err(msgHashNotFloat)
		}
	}
	sum, ok := addLongDouble(cur, incr)
	if !ok {
		return resp.Err(msgHashIncrOverflow)
	}
	s := formatLongDouble(sum)
	c.hashSet(v, args[2], s)
	saveValue(c, args[1], v, isNew)
	c.notify(notifyHash, "hincrbyfloat", args[1])
	return resp.BulkReply(s)
}

func cmdHlen(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	return resp.IntReply(int64(v.hash().Len()))
}

func cmdHgetall(c *Ctx, args [][]byte) resp.Reply {
	r := hashDump(c, args, true, true)
	if r.Type == resp.Array {
		r.Type = resp.Map
	}
	return r
}
func cmdHkeys(c *Ctx, args [][]byte) resp.Reply { return hashDump(c, args, true, false) }
func cmdHvals(c *Ctx, args [][]byte) resp.Reply { return hashDump(c, args, false, true) }

func hashDump(c *Ctx, args [][]byte, fields, values bool) resp.Reply {
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.EmptyArr
	}
	out := make([]resp.Reply, 0, v.hash().Len()*2)
	v.hash().Each(func(f, val []byte) bool {
		if fields {
			out = append(out, resp.BulkReply(f))
		}
		if values {
			out = append(out, resp.BulkReply(val))
		}
		return true
	})
	return resp.ArrayReply(out...)
}

func cmdHstrlen(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	val, _ := v.hash().peek(args[2])
	return resp.IntReply(int64(len(val)))
}

// cmdHrandfield picks fields as Redis's HRANDFIELD does (distinct fields
// for a positive count, repeats allowed for a negative one), but from a
// deterministic sequence (see pickRand).
func cmdHrandfield(c *Ctx, args [][]byte) resp.Reply {
	if len(args) == 2 {
		v, ok := c.lookupKind(args[1], KindHash)
		if !ok {
			return resp.Err(msgWrongType)
		}
		if v == nil {
			return resp.NilReply
		}
		fields := hashEntries(v.hash())
		return resp.BulkReply(fields[newPickRand(c, args[1]).intn(len(fields))].name)
	}
	n, errReply, ok := parseRandCount(args[2])
	if !ok {
		return errReply
	}
	withValues := false
	if len(args) > 4 || len(args) == 4 && !bytes.EqualFold(args[3], []byte("withvalues")) {
		return resp.Err(msgSyntax)
	}
	if len(args) == 4 {
		withValues = true
		if n < -math.MaxInt64/2 || n > math.MaxInt64/2 {
			return resp.Err(msgOutOfRangeBare)
		}
	}
	if n < -maxRandRepeats {
		return resp.Err(msgOutOfRangeBare)
	}
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil || n == 0 {
		return resp.EmptyArr
	}
	fields := hashEntries(v.hash())
	picks := pickIndexes(newPickRand(c, args[1]), len(fields), n)
	out := make([]resp.Reply, 0, len(picks)*2)
	for _, i := range picks {
		out = append(out, resp.BulkReply(fields[i].name))
		if withValues {
			out = append(out, resp.BulkReply(fields[i].value))
		}
	}
	if withValues {
		return resp.PairsReply(out...)
	}
	return resp.ArrayReply(out...)
}

// hashEntries returns the live fields of h in order.
func hashEntries(h hashRef) []hashField {
	out := make([]hashField, 0, h.Len())
	h.Each(func(f, v []byte) bool {
		out = append(out, hashField{name: f, value: v})
		return true
	})
	return out
}

func cmdHscan(c *Ctx, args [][]byte) resp.Reply {
	return elemScan(c, args, KindHash, func(v *Value) ([]scanElem, bool) {
		out := make([]scanElem, 0, v.hash().Len())
		compact := v.hash().Len() <= 128
		v.hash().Each(func(f, val []byte) bool {
			compact = compact && len(f) <= 64 && len(val) <= 64
			out = append(out, scanElem{name: string(f), value: resp.BulkReply(val), paired: true})
			return true
		})
		return out, compact
	})
}

// scanElem is one element of a collection for HSCAN, SSCAN and ZSCAN: a
// field and its value, a member, or a member and its score.
type scanElem struct {
	name   string
	value  resp.Reply
	paired bool
}

// elemScan serves HSCAN, SSCAN and ZSCAN. elems lists the collection in
// its own order and says whether Redis 7.0 would hold it in a compact
// encoding (listpack, intset). Redis answers those with every element at
// once and cursor 0, whatever the cursor and COUNT, and so does this; the
// orders agree (insertion order, intset's numeric order, score order).
// Larger collections are paged as SCAN pages keys (see scanHash): the
// cursor is a position in the order of the elements' hashes, so an element
// present for the whole iteration is returned exactly once.
func elemScan(c *Ctx, args [][]byte, kind Kind, elems func(*Value) ([]scanElem, bool)) resp.Reply {
	cursor, ok := parseCursor(args[2])
	if !ok {
		return resp.Err(msgInvalidCursor)
	}
	v, ok := c.lookupKind(args[1], kind)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.ArrayReply(resp.BulkString("0"), resp.EmptyArr)
	}
	count := int64(10)
	var pat []byte
	for i := 3; i < len(args); i += 2 {
		more := i+1 < len(args)
		switch {
		case more && optIs(args[i], "count"):
			n, ok := parseInt64(args[i+1])
			if !ok {
				return resp.Err(msgNotInt)
			}
			if n < 1 {
				return resp.Err(msgSyntax)
			}
			count = n
		case more && optIs(args[i], "match"):
			pat = args[i+1]
			if len(pat) == 1 && pat[0] == '*' {
				pat = nil
			}
		default:
			return resp.Err(msgSyntax)
		}
	}
	page, compact := elems(v)
	next := uint64(0)
	if !compact {
		type hashed struct {
			h uint64
			e scanElem
		}
		var batch []hashed
		for _, e := range page {
			if h := scanHash(e.name); h >= cursor {
				batch = append(batch, hashed{h, e})
			}
		}
		sort.Slice(batch, func(i, j int) bool {
			if batch[i].h != batch[j].h {
				return batch[i].h < batch[j].h
			}
			return batch[i].e.name < batch[j].e.name
		})
		if int64(len(batch)) > count {
			n := int(count)
			for n < len(batch) && batch[n].h == batch[n-1].h {
				n++ // elements with the same hash go together
			}
			if n < len(batch) {
				next = batch[n].h
			}
			batch = batch[:n]
		}
		page = page[:0]
		for _, b := range batch {
			page = append(page, b.e)
		}
	}
	out := []resp.Reply{}
	for _, e := range page {
		if pat != nil && !stringMatch(pat, []byte(e.name), false) {
			continue
		}
		out = append(out, resp.BulkString(e.name))
		if e.paired {
			out = append(out, e.value)
		}
	}
	return resp.ArrayReply(resp.BulkString(strconv.FormatUint(next, 10)), resp.ArrayReply(out...))
}
