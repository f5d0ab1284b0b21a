package fsm

import (
	"bytes"
	"math"
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// String commands.
//
// A stored string's bytes are never changed in place once stored: replies
// hand them out without copying (capped, so that appending to a reply
// cannot reach them), and a reply may still be waiting to be written when
// the next command runs. APPEND only ever writes past the end of what was
// handed out; SETRANGE builds a new buffer. (The bit commands keep the one
// exception, a buffer no other command has seen: cmd_bit.go.)
func init() {
	register(
		Spec{Name: "get", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdGet},
		Spec{Name: "set", Arity: -3, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSet},
		Spec{Name: "setnx", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSetNX},
		Spec{Name: "setex", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSetEX},
		Spec{Name: "psetex", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSetEX},
		Spec{Name: "getset", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdGetSet},
		Spec{Name: "getdel", Arity: 2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdGetDel},
		Spec{Name: "getex", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdGetEx},
		Spec{Name: "mget", Arity: -2, Flags: Read | Fast, FirstKey: 1, LastKey: -1, Step: 1, fn: cmdMGet},
		Spec{Name: "mset", Arity: -3, Flags: Write, FirstKey: 1, LastKey: -1, Step: 2, fn: cmdMSet},
		Spec{Name: "msetnx", Arity: -3, Flags: Write, FirstKey: 1, LastKey: -1, Step: 2, fn: cmdMSet},
		Spec{Name: "incr", Arity: 2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdIncr},
		Spec{Name: "decr", Arity: 2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdIncr},
		Spec{Name: "incrby", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdIncrBy},
		Spec{Name: "decrby", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdIncrBy},
		Spec{Name: "incrbyfloat", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdIncrByFloat},
		Spec{Name: "append", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdAppend},
		Spec{Name: "strlen", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdStrlen},
		Spec{Name: "getrange", Arity: 4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdGetRange},
		Spec{Name: "substr", Arity: 4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdGetRange},
		Spec{Name: "setrange", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSetRange},
	)
}

const (
	msgDecrOverflow = "ERR decrement would overflow"
	msgIncrFloatNaN = "ERR increment would produce NaN or Infinity"
	msgOffsetRange  = "ERR offset is out of range"

	// maxStringLen is the longest string APPEND and SETRANGE may make:
	// Redis's proto-max-bulk-len, 512 MiB by default.
	maxStringLen = 512 << 20
)

// strReply replies with a stored string without copying it.
func strReply(b []byte) resp.Reply {
	return resp.BulkReply(b[:len(b):len(b)])
}

// newString returns a new string value holding b, for Ctx.put: a value of
// up to sharedNameMax bytes is copied there, into its name's allocation
// (Value.takeName), and a longer one here, so that b (a request's
// argument) is never kept and is copied once.
func newString(b []byte) *Value {
	if len(b) <= sharedNameMax {
		return &Value{Kind: KindString, Str: b}
	}
	return &Value{Kind: KindString, Str: append([]byte{}, b...)}
}

// Option flags of SET and GETEX, as Redis's parser keeps them.
const (
	optNX = 1 << iota
	optXX
	optEX
	optPX
	optKeepTTL
	optGet
	optEXAT
	optPXAT
	optPersist
)

// parseStringOpts parses the options of SET (from args[3]) or GETEX (from
// args[2]) exactly as Redis's parseExtendedStringArgumentsOrReply does,
// including what it lets through (EX given twice: the last one counts).
func parseStringOpts(args [][]byte, isSet bool) (flags int, expire []byte, ok bool) {
	j := 2
	if isSet {
		j = 3
	}
	const expiries = optEX | optPX | optEXAT | optPXAT
	for ; j < len(args); j++ {
		opt := args[j]
		next := j < len(args)-1
		switch {
		case isSet && optEq(opt, "nx") && flags&optXX == 0:
			flags |= optNX
		case isSet && optEq(opt, "xx") && flags&optNX == 0:
			flags |= optXX
		case isSet && optEq(opt, "get"):
			flags |= optGet
		case isSet && optEq(opt, "keepttl") && flags&(optPersist|expiries) == 0:
			flags |= optKeepTTL
		case !isSet && optEq(opt, "persist") && flags&(optKeepTTL|expiries) == 0:
			flags |= optPersist
		case optEq(opt, "ex") && next && flags&(optKeepTTL|optPersist|optEXAT|optPX|optPXAT) == 0:
			flags |= optEX
			expire = args[j+1]
			j++
		case optEq(opt, "px") && next && flags&(optKeepTTL|optPersist|optEX|optEXAT|optPXAT) == 0:
			flags |= optPX
			expire = args[j+1]
			j++
		case optEq(opt, "exat") && next && flags&(optKeepTTL|optPersist|optEX|optPX|optPXAT) == 0:
			flags |= optEXAT
			expire = args[j+1]
			j++
		case optEq(opt, "pxat") && next && flags&(optKeepTTL|optPersist|optEX|optEXAT|optPX) == 0:
			flags |= optPXAT
			expire = args[j+1]
			j++
		default:
			return 0, nil, false
		}
	}
	return flags, expire, true
}

// expireDeadline turns an EX/PX/EXAT/PXAT argument into a deadline in ms
// as Redis's getExpireMillisecondsOrReply does: the number must be
// positive and the deadline must not overflow.
func (c *Ctx) expireDeadline(args [][]byte, arg []byte, flags int) (int64, resp.Reply, bool) {
	ms, ok := parseInt64(arg)
	if !ok {
		return 0, resp.Err(msgNotInt), false
	}
	seconds := flags&(optPX|optPXAT) == 0
	if ms <= 0 || seconds && ms > math.MaxInt64/1000 {
		return 0, errInvalidExpire(args), false
	}
	if seconds {
		ms *= 1000
	}
	if flags&(optEX|optPX) != 0 {
		ms += c.now // wraps on overflow, caught below, as in Redis
	}
	if ms <= 0 {
		return 0, errInvalidExpire(args), false
	}
	return ms, resp.Reply{}, true
}

// getString is GET's lookup: the value, a nil reply for a missing key, or
// WRONGTYPE.
func (c *Ctx) getString(key []byte) (v *Value, r resp.Reply, ok bool) {
	v, ok = c.lookupKind(key, KindString)
	if !ok {
		return nil, resp.Err(msgWrongType), false
	}
	if v == nil {
		return nil, resp.NilReply, true
	}
	return v, strReply(v.Str), true
}

func cmdGet(c *Ctx, args [][]byte) resp.Reply {
	_, r, _ := c.getString(args[1])
	return r
}

// setGeneric is the common part of SET, SETNX, SETEX and PSETEX. ok and
// abort are the replies when the value is set or not (NX/XX).
func (c *Ctx) setGeneric(args [][]byte, flags int, key, val, expire []byte, ok, abort resp.Reply) resp.Reply {
	var deadline int64
	if expire != nil {
		d, errReply, good := c.expireDeadline(args, expire, flags)
		if !good {
			return errReply
		}
		deadline = d
	}
	var old resp.Reply
	if flags&optGet != 0 {
		var good bool
		if _, old, good = c.getString(key); !good {
			return old
		}
	}
	cur := c.lookup(key)
	if flags&optNX != 0 && cur != nil || flags&optXX != 0 && cur == nil {
		if flags&optNX != 0 {
			c.lockContended(cur)
		}
		if flags&optGet != 0 {
			return old
		}
		return abort
	}
	nv := newString(val)
	if flags&optKeepTTL != 0 && cur != nil {
		nv.Deadline = cur.Deadline
	}
	if expire != nil {
		nv.Deadline = deadline
	}
	c.put(key, nv)
	switch {
	case flags&optNX != 0:
		c.lockTaken(nv, shapeString)
	case cur == nil && expire != nil && c.script.active && !bytes.HasPrefix(key, redissonPrefix):
		// A script that creates a string with a lease takes a lock
		// (node-redlock checks EXISTS, then SETs with PX, in one script);
		// Redisson's own strings (its unlock latch) are not locks.
		c.lockTaken(nv, shapeString)
	case cur != nil && cur.lock == shapeString && expire != nil && bytes.Equal(cur.Str, val):
		// Its holder setting the same token again with a new lease
		// extends the lock (node-redlock's extend): still held, since
		// it was taken.
		nv.lock = shapeString
		nv.setCreated(cur.created())
	}
	c.notify(notifyString, "set", key)
	if expire != nil {
		c.notify(notifyGeneric, "expire", key)
	}
	if flags&optGet != 0 {
		return old
	}
	return ok
}

// redissonPrefix starts the names of Redisson's helper keys (its unlock
// latch, channels, queues), none of them a lock of its own.
var redissonPrefix = []byte("redisson_")

func cmdSet(c *Ctx, args [][]byte) resp.Reply {
	flags, expire, ok := parseStringOpts(args, true)
	if !ok {
		return resp.Err(msgSyntax)
	}
	return c.setGeneric(args, flags, args[1], args[2], expire, resp.OK, resp.NilReply)
}

func cmdSetNX(c *Ctx, args [][]byte) resp.Reply {
	return c.setGeneric(args, optNX, args[1], args[2], nil, resp.One, resp.Zero)
}

// cmdSetEX serves SETEX key seconds value and PSETEX key ms value.
func cmdSetEX(c *Ctx, args [][]byte) resp.Reply {
	flags := optEX
	if optEq(args[0], "psetex") {
		flags = optPX
	}
	return c.setGeneric(args, flags, args[1], args[3], args[2], resp.OK, resp.NilReply)
}

// cmdGetSet sets a new value (dropping any expiry) and replies with the
// old one.
func cmdGetSet(c *Ctx, args [][]byte) resp.Reply {
	_, old, ok := c.getString(args[1])
	if !ok {
		return old
	}
	c.put(args[1], newString(args[2]))
	c.notify(notifyString, "set", args[1])
	return old
}

func cmdGetDel(c *Ctx, args [][]byte) resp.Reply {
	v, r, _ := c.getString(args[1])
	if v != nil {
		c.del(args[1])
		c.notify(notifyGeneric, "del", args[1])
	}
	return r
}

// cmdGetEx is GET that may also set (EX, PX, EXAT, PXAT) or remove
// (PERSIST) the key's expiry. A deadline already past deletes the key
// after replying with its value.
func cmdGetEx(c *Ctx, args [][]byte) resp.Reply {
	flags, expire, ok := parseStringOpts(args, false)
	if !ok {
		return resp.Err(msgSyntax)
	}
	v, r, _ := c.getString(args[1])
	if v == nil {
		return r
	}
	if expire != nil {
		deadline, errReply, good := c.expireDeadline(args, expire, flags)
		if !good {
			return errReply
		}
		if flags&(optEXAT|optPXAT) != 0 && deadline <= c.now {
			c.del(args[1])
			c.notify(notifyGeneric, "del", args[1])
			return r
		}
		c.setDeadline(args[1], v, deadline)
		c.touch(v)
		c.notify(notifyGeneric, "expire", args[1])
		return r
	}
	if flags&optPersist != 0 && v.Deadline != 0 {
		c.setDeadline(args[1], v, 0)
		c.touch(v)
		c.notify(notifyGeneric, "persist", args[1])
	}
	return r
}

// cmdMGet replies nil for missing keys and for keys of other types.
func cmdMGet(c *Ctx, args [][]byte) resp.Reply {
	out := make([]resp.Reply, len(args)-1)
	for i, k := range args[1:] {
		if v := c.lookup(k); v != nil && v.Kind == KindString {
			out[i] = strReply(v.Str)
		}
	}
	return resp.ArrayReply(out...)
}

// cmdMSet serves MSET and MSETNX (which sets nothing, replying 0, if any
// of the keys exists). Each key loses its expiry.
func cmdMSet(c *Ctx, args [][]byte) resp.Reply {
	nx := optEq(args[0], "msetnx")
	if len(args)%2 == 0 {
		if nx {
			return resp.Err(WrongArity("msetnx"))
		}
		return resp.Err(WrongArity("mset"))
	}
	if nx {
		for j := 1; j < len(args); j += 2 {
			if c.lookup(args[j]) != nil {
				return resp.Zero
			}
		}
	}
	for j := 1; j < len(args); j += 2 {
		if !nx {
			// As Redis's setKey: an expired key goes first ("expired"),
			// so that the new one is new (a "new" event, and a walk in
			// progress learns of it: walkTouched).
			c.lookup(args[j])
		}
		c.put(args[j], newString(args[j+1]))
		c.notify(notifyString, "set", args[j])
	}
	if nx {
		return resp.One
	}
	return resp.OK
}

// incrBy adds incr to the integer stored at key (0 if missing), keeping
// the key's expiry.
func (c *Ctx) incrBy(key []byte, incr int64) resp.Reply {
	v, ok := c.lookupKind(key, KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	var cur int64
	if v != nil {
		if cur, ok = parseInt64(v.Str); !ok {
			return resp.Err(msgNotInt)
		}
	}
	if incr < 0 && cur < 0 && incr < math.MinInt64-cur ||
		incr > 0 && cur > 0 && incr > math.MaxInt64-cur {
		return resp.Err(msgOverflow)
	}
	n := cur + incr
	s := strconv.AppendInt(nil, n, 10)
	if v == nil {
		c.put(key, &Value{Kind: KindString, Str: s})
	} else {
		v.Str = s
		v.setEnc(encAuto)
		c.touch(v)
		if v.lock != 0 {
			c.lockCounterChange(v, incr)
		}
	}
	c.notify(notifyString, "incrby", key)
	return resp.IntReply(n)
}

// cmdIncr serves INCR and DECR.
func cmdIncr(c *Ctx, args [][]byte) resp.Reply {
	if optEq(args[0], "decr") {
		return c.incrBy(args[1], -1)
	}
	return c.incrBy(args[1], 1)
}

// cmdIncrBy serves INCRBY and DECRBY.
func cmdIncrBy(c *Ctx, args [][]byte) resp.Reply {
	n, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	if optEq(args[0], "decrby") {
		if n == math.MinInt64 {
			return resp.Err(msgDecrOverflow)
		}
		n = -n
	}
	return c.incrBy(args[1], n)
}

// cmdIncrByFloat adds in 80-bit long double precision, as Redis does on
// x86-64, and stores the sum as Redis prints it ("%.17Lf", trailing zeros
// cut): 10.50 + 0.1 is "10.6", 0.1 + 0.2 is "0.3". The key keeps its
// expiry.
func cmdIncrByFloat(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	cur := []byte("0")
	if v != nil {
		cur = v.Str
	}
	a, ok := parseLongDouble(cur)
	if !ok {
		return resp.Err(msgNotFloat)
	}
	b, ok := parseLongDouble(args[2])
	if !ok {
		return resp.Err(msgNotFloat)
	}
	sum, ok := addLongDouble(a, b)
	if !ok {
		return resp.Err(msgIncrFloatNaN)
	}
	s := formatLongDouble(sum)
	if v == nil {
		c.put(args[1], &Value{Kind: KindString, createdHi: uint16(encNoInt) << encShift, Str: s})
	} else {
		v.Str = s
		v.setEnc(encNoInt)
		c.touch(v)
	}
	c.notify(notifyString, "incrbyfloat", args[1])
	return strReply(s)
}

// cmdAppend appends to a string (creating it), keeping its expiry.
func cmdAppend(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		c.put(args[1], newString(args[2]))
		c.notify(notifyString, "append", args[1])
		return resp.IntReply(int64(len(args[2])))
	}
	if int64(len(v.Str))+int64(len(args[2])) > maxStringLen {
		return resp.Err(msgStringTooLong)
	}
	v.Str = append(v.Str, args[2]...) // writes only past what replies hold
	v.setEnc(encRaw)
	c.touch(v)
	c.notify(notifyString, "append", args[1])
	return resp.IntReply(int64(len(v.Str)))
}

func cmdStrlen(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	return resp.IntReply(int64(len(v.Str)))
}

// cmdGetRange serves GETRANGE and its old name SUBSTR: inclusive offsets,
// negative ones from the end, clamped to the string.
func cmdGetRange(c *Ctx, args [][]byte) resp.Reply {
	start, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	end, ok := parseInt64(args[3])
	if !ok {
		return resp.Err(msgNotInt)
	}
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	empty := resp.BulkReply(nil)
	if v == nil {
		return empty
	}
	n := int64(len(v.Str))
	if start < 0 && end < 0 && start > end {
		return empty
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return empty
	}
	return strReply(v.Str[start : end+1])
}

// cmdSetRange overwrites part of a string, padding with zero bytes,
// keeping its expiry. An empty value changes nothing (and creates no key).
func cmdSetRange(c *Ctx, args [][]byte) resp.Reply {
	offset, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	if offset < 0 {
		return resp.Err(msgOffsetRange)
	}
	val := args[3]
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if len(val) == 0 {
		if v == nil {
			return resp.Zero
		}
		return resp.IntReply(int64(len(v.Str)))
	}
	if offset > maxStringLen-int64(len(val)) {
		return resp.Err(msgStringTooLong)
	}
	var old []byte
	if v != nil {
		old = v.Str
	}
	buf := make([]byte, max(int64(len(old)), offset+int64(len(val))))
	copy(buf, old)
	copy(buf[offset:], val)
	if v == nil {
		c.put(args[1], &Value{Kind: KindString, createdHi: uint16(encRaw) << encShift, Str: buf})
	} else {
		v.Str = buf
		v.setEnc(encRaw)
		c.touch(v)
	}
	c.notify(notifyString, "setrange", args[1])
	return resp.IntReply(int64(len(buf)))
}
