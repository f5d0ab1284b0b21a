package fsm

import (
	"bytes"

	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	register(
		Spec{Name: "lpush", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLpush},
		Spec{Name: "rpush", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdRpush},
		Spec{Name: "lpushx", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLpushx},
		Spec{Name: "rpushx", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdRpushx},
		Spec{Name: "lpop", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLpop},
		Spec{Name: "rpop", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdRpop},
		Spec{Name: "llen", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLlen},
		Spec{Name: "lindex", Arity: 3, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLindex},
		Spec{Name: "lrange", Arity: 4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLrange},
		Spec{Name: "lrem", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLrem},
		Spec{Name: "lset", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLset},
		Spec{Name: "ltrim", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLtrim},
		Spec{Name: "linsert", Arity: 5, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLinsert},
		Spec{Name: "lpos", Arity: -3, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdLpos},
		Spec{Name: "lmove", Arity: 5, Flags: Write, FirstKey: 1, LastKey: 2, Step: 1, fn: cmdLmove},
		Spec{Name: "rpoplpush", Arity: 3, Flags: Write, FirstKey: 1, LastKey: 2, Step: 1, fn: cmdRpoplpush},
	)
}

// Error replies of the list commands (Redis 7.0 t_list.c).
const (
	msgLposRank   = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	msgLposCount  = "ERR COUNT can't be negative"
	msgLposMaxlen = "ERR MAXLEN can't be negative"
)

func cmdLpush(c *Ctx, args [][]byte) resp.Reply  { return pushGeneric(c, args, true, false) }
func cmdRpush(c *Ctx, args [][]byte) resp.Reply  { return pushGeneric(c, args, false, false) }
func cmdLpushx(c *Ctx, args [][]byte) resp.Reply { return pushGeneric(c, args, true, true) }
func cmdRpushx(c *Ctx, args [][]byte) resp.Reply { return pushGeneric(c, args, false, true) }

func pushGeneric(c *Ctx, args [][]byte, front, existing bool) resp.Reply {
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	isNew := v == nil
	if isNew {
		if existing {
			return resp.Zero
		}
		v = &Value{Kind: KindList, agg: NewList()}
	}
	for _, e := range args[2:] {
		if front {
			v.list().PushFront(e)
		} else {
			v.list().PushBack(e)
		}
	}
	saveValue(c, args[1], v, isNew)
	c.notify(notifyList, pushEvent(front), args[1])
	return resp.IntReply(int64(v.list().Len()))
}

func cmdLpop(c *Ctx, args [][]byte) resp.Reply { return popGeneric(c, args, true) }
func cmdRpop(c *Ctx, args [][]byte) resp.Reply { return popGeneric(c, args, false) }

// popGeneric is LPOP and RPOP: one element as a bulk reply, or with a count
// an array (a nil array when the key is missing).
func popGeneric(c *Ctx, args [][]byte, front bool) resp.Reply {
	if len(args) > 3 {
		if front {
			return resp.Err(WrongArity("lpop"))
		}
		return resp.Err(WrongArity("rpop"))
	}
	count, hasCount := int64(1), len(args) == 3
	if hasCount {
		n, ok := parseInt64(args[2])
		if !ok || n < 0 {
			return resp.Err(msgCountPositive)
		}
		count = n
	}
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		if hasCount {
			return resp.Reply{Type: resp.NilArray}
		}
		return resp.NilReply
	}
	if !hasCount {
		e := listPop(v.list(), front)
		c.touch(v)
		c.notify(notifyList, popEvent(front), args[1])
		c.removeIfEmpty(args[1], v)
		return resp.BulkReply(e)
	}
	n := min(count, int64(v.list().Len()))
	out := make([]resp.Reply, n)
	for i := range out {
		out[i] = resp.BulkReply(listPop(v.list(), front))
	}
	if n > 0 {
		c.touch(v)
		c.notify(notifyList, popEvent(front), args[1])
		c.removeIfEmpty(args[1], v)
	}
	return resp.ArrayReply(out...)
}

func pushEvent(front bool) string {
	if front {
		return "lpush"
	}
	return "rpush"
}

func popEvent(front bool) string {
	if front {
		return "lpop"
	}
	return "rpop"
}

func listPop(l *List, front bool) []byte {
	if front {
		return l.PopFront()
	}
	return l.PopBack()
}

func cmdLlen(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	return resp.IntReply(int64(v.list().Len()))
}

func cmdLindex(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.NilReply
	}
	i, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	n := int64(v.list().Len())
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return resp.NilReply
	}
	return resp.BulkReply(v.list().Index(int(i)))
}

// indexRange turns a start/stop pair (negative counts from the end) into
// 0-based inclusive positions within a sequence of n elements, as LRANGE,
// LTRIM, ZRANGE and ZREMRANGEBYRANK do; ok is false for an empty range.
func indexRange(start, stop, n int64) (int, int, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= n {
		return 0, 0, false
	}
	if stop >= n {
		stop = n - 1
	}
	return int(start), int(stop), true
}

// parseIndexPair parses two integer arguments.
func parseIndexPair(a, b []byte) (int64, int64, bool) {
	x, ok := parseInt64(a)
	if !ok {
		return 0, 0, false
	}
	y, ok := parseInt64(b)
	return x, y, ok
}

func cmdLrange(c *Ctx, args [][]byte) resp.Reply {
	start, stop, ok := parseIndexPair(args[2], args[3])
	if !ok {
		return resp.Err(msgNotInt)
	}
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.EmptyArr
	}
	from, to, ok := indexRange(start, stop, int64(v.list().Len()))
	if !ok {
		return resp.EmptyArr
	}
	return resp.BulkArray(v.list().Range(from, to))
}

func cmdLrem(c *Ctx, args [][]byte) resp.Reply {
	count, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	l, elem := v.list(), args[3]
	n := l.Len()
	limit, fromTail := count, count < 0
	if fromTail {
		limit = -limit // -2^63 stays negative: no limit, as in Redis
	}
	drop := make([]bool, n)
	removed := int64(0)
	for k := 0; k < n; k++ {
		i := k
		if fromTail {
			i = n - 1 - k
		}
		if bytes.Equal(l.Index(i), elem) {
			drop[i] = true
			removed++
			if limit != 0 && removed == limit {
				break
			}
		}
	}
	if removed == 0 {
		return resp.Zero
	}
	kept := make([][]byte, 0, n-int(removed))
	for i := 0; i < n; i++ {
		if !drop[i] {
			kept = append(kept, l.Index(i))
		}
	}
	l.replace(kept)
	c.touch(v)
	c.notify(notifyList, "lrem", args[1])
	c.removeIfEmpty(args[1], v)
	return resp.IntReply(removed)
}

func cmdLset(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Err(msgNoSuchKey)
	}
	i, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	n := int64(v.list().Len())
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return resp.Err(msgOutOfRange)
	}
	v.list().SetIndex(int(i), args[3])
	c.touch(v)
	c.notify(notifyList, "lset", args[1])
	return resp.OK
}

func cmdLtrim(c *Ctx, args [][]byte) resp.Reply {
	start, stop, ok := parseIndexPair(args[2], args[3])
	if !ok {
		return resp.Err(msgNotInt)
	}
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.OK
	}
	l := v.list()
	from, to, ok := indexRange(start, stop, int64(l.Len()))
	if !ok {
		l.replace(nil)
	} else {
		for l.Len() > to+1 {
			l.PopBack()
		}
		for range from {
			l.PopFront()
		}
	}
	c.touch(v)
	c.notify(notifyList, "ltrim", args[1])
	c.removeIfEmpty(args[1], v)
	return resp.OK
}

func cmdLinsert(c *Ctx, args [][]byte) resp.Reply {
	var after bool
	switch {
	case bytes.EqualFold(args[2], []byte("after")):
		after = true
	case bytes.EqualFold(args[2], []byte("before")):
	default:
		return resp.Err(msgSyntax)
	}
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	l := v.list()
	for i := 0; i < l.Len(); i++ {
		if bytes.Equal(l.Index(i), args[3]) {
			if after {
				i++
			}
			switch i {
			case 0:
				l.PushFront(args[4])
			case l.Len():
				l.PushBack(args[4])
			default:
				l.insert(i, args[4])
			}
			c.touch(v)
			c.notify(notifyList, "linsert", args[1])
			return resp.IntReply(int64(l.Len()))
		}
	}
	return resp.IntReply(-1)
}

// cmdLpos follows Redis's LPOS to the letter, including its arithmetic: a
// RANK of -2^63 stays negative when negated, so it means "from the tail,
// every match".
func cmdLpos(c *Ctx, args [][]byte) resp.Reply {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		opt, more := args[j], j+1 < len(args)
		switch {
		case more && bytes.EqualFold(opt, []byte("rank")):
			j++
			n, ok := parseInt64(args[j])
			if !ok {
				return resp.Err(msgNotInt)
			}
			if n == 0 {
				return resp.Err(msgLposRank)
			}
			rank = n
		case more && bytes.EqualFold(opt, []byte("count")):
			j++
			n, ok := parseInt64(args[j])
			if !ok || n < 0 {
				return resp.Err(msgLposCount)
			}
			count = n
		case more && bytes.EqualFold(opt, []byte("maxlen")):
			j++
			n, ok := parseInt64(args[j])
			if !ok || n < 0 {
				return resp.Err(msgLposMaxlen)
			}
			maxlen = n
		default:
			return resp.Err(msgSyntax)
		}
	}
	fromTail := false
	if rank < 0 {
		rank = -rank
		fromTail = true
	}
	v, ok := c.lookupKind(args[1], KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		if count != -1 {
			return resp.EmptyArr
		}
		return resp.NilReply
	}
	l := v.list()
	n := int64(l.Len())
	var out []resp.Reply
	matches := int64(0)
	for index := int64(0); index < n && (maxlen == 0 || index < maxlen); index++ {
		pos := index
		if fromTail {
			pos = n - 1 - index
		}
		if !bytes.Equal(l.Index(int(pos)), args[2]) {
			continue
		}
		matches++
		if matches < rank {
			continue
		}
		if count == -1 {
			return resp.IntReply(pos)
		}
		out = append(out, resp.IntReply(pos))
		if count != 0 && matches-rank+1 >= count {
			break
		}
	}
	if count == -1 {
		return resp.NilReply
	}
	return resp.ArrayReply(out...)
}

// listEnd parses LEFT or RIGHT; front is true for LEFT.
func listEnd(b []byte) (front, ok bool) {
	switch {
	case bytes.EqualFold(b, []byte("left")):
		return true, true
	case bytes.EqualFold(b, []byte("right")):
		return false, true
	}
	return false, false
}

func cmdLmove(c *Ctx, args [][]byte) resp.Reply {
	from, ok := listEnd(args[3])
	if !ok {
		return resp.Err(msgSyntax)
	}
	to, ok := listEnd(args[4])
	if !ok {
		return resp.Err(msgSyntax)
	}
	return moveGeneric(c, args[1], args[2], from, to)
}

func cmdRpoplpush(c *Ctx, args [][]byte) resp.Reply {
	return moveGeneric(c, args[1], args[2], false, true)
}

// moveGeneric pops from one end of src and pushes onto one end of dst
// (which may be src itself). dst's kind is only checked once src is known
// to hold something, as in Redis.
func moveGeneric(c *Ctx, srcKey, dstKey []byte, from, to bool) resp.Reply {
	src, ok := c.lookupKind(srcKey, KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if src == nil {
		return resp.NilReply
	}
	dst, ok := c.lookupKind(dstKey, KindList)
	if !ok {
		return resp.Err(msgWrongType)
	}
	e := listPop(src.list(), from)
	isNew := dst == nil
	if isNew {
		dst = &Value{Kind: KindList, agg: NewList()}
	}
	if to {
		dst.list().PushFront(e)
	} else {
		dst.list().PushBack(e)
	}
	saveValue(c, dstKey, dst, isNew)
	c.notify(notifyList, pushEvent(to), dstKey)
	if src != dst {
		c.touch(src)
	}
	c.notify(notifyList, popEvent(from), srcKey)
	if src != dst {
		c.removeIfEmpty(srcKey, src)
	}
	return resp.BulkReply(e)
}
