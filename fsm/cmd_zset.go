package fsm

import (
	"bytes"
	"math"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	register(
		Spec{Name: "zadd", Arity: -4, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZadd},
		Spec{Name: "zincrby", Arity: 4, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZincrby},
		Spec{Name: "zrem", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrem},
		Spec{Name: "zscore", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZscore},
		Spec{Name: "zmscore", Arity: -3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZmscore},
		Spec{Name: "zcard", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZcard},
		Spec{Name: "zcount", Arity: 4, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZcount},
		Spec{Name: "zlexcount", Arity: 4, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZlexcount},
		Spec{Name: "zrank", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrank},
		Spec{Name: "zrevrank", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrevrank},
		Spec{Name: "zrange", Arity: -4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrange},
		Spec{Name: "zrevrange", Arity: -4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrevrange},
		Spec{Name: "zrangebyscore", Arity: -4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrangebyscore},
		Spec{Name: "zrevrangebyscore", Arity: -4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrevrangebyscore},
		Spec{Name: "zrangebylex", Arity: -4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrangebylex},
		Spec{Name: "zrevrangebylex", Arity: -4, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZrevrangebylex},
		Spec{Name: "zremrangebyscore", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZremrangebyscore},
		Spec{Name: "zremrangebyrank", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZremrangebyrank},
		Spec{Name: "zremrangebylex", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZremrangebylex},
		Spec{Name: "zpopmin", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZpopmin},
		Spec{Name: "zpopmax", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZpopmax},
		Spec{Name: "zscan", Arity: -3, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdZscan},
	)
}

// Error replies of the sorted-set commands (Redis 7.0 t_zset.c).
const (
	msgZaddXXNX        = "ERR XX and NX options at the same time are not compatible"
	msgZaddGTLTNX      = "ERR GT, LT, and/or NX options at the same time are not compatible"
	msgZaddIncrPair    = "ERR INCR option supports a single increment-element pair"
	msgZrangeLimit     = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	msgZrangeLexScores = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	msgLexRange        = "ERR min or max not valid string range item"
)

func optIs(arg []byte, name string) bool { return bytes.EqualFold(arg, []byte(name)) }

// storedScore is the score a zset keeps: Redis's small (listpack) sorted
// sets store scores as text, where -0 reads back as 0.
func storedScore(s float64) float64 {
	if s == 0 {
		return 0
	}
	return s
}

// scoreReply is a score as Redis's addReplyDouble sends it: a double in
// RESP3, its text in a bulk in RESP2. Only a score just computed can be
// -0 (see storedScore); Redis prints it as "-0".
func scoreReply(s float64) resp.Reply {
	if s == 0 && math.Signbit(s) {
		return resp.DoubleReply([]byte("-0"))
	}
	return resp.DoubleReply(formatScore(s))
}

func cmdZadd(c *Ctx, args [][]byte) resp.Reply    { return zaddGeneric(c, args, false) }
func cmdZincrby(c *Ctx, args [][]byte) resp.Reply { return zaddGeneric(c, args, true) }

// zaddGeneric is ZADD, and ZINCRBY as ZADD INCR. As in Redis, ZINCRBY
// goes through the same option parser, so "ZINCRBY key nx m" is a syntax
// error.
func zaddGeneric(c *Ctx, args [][]byte, incr bool) resp.Reply {
	var nx, xx, gt, lt, ch bool
	i := 2
options:
	for ; i < len(args); i++ {
		switch o := args[i]; {
		case optIs(o, "nx"):
			nx = true
		case optIs(o, "xx"):
			xx = true
		case optIs(o, "ch"):
			ch = true
		case optIs(o, "incr"):
			incr = true
		case optIs(o, "gt"):
			gt = true
		case optIs(o, "lt"):
			lt = true
		default:
			break options
		}
	}
	elems := len(args) - i
	if elems == 0 || elems%2 != 0 {
		return resp.Err(msgSyntax)
	}
	if nx && xx {
		return resp.Err(msgZaddXXNX)
	}
	if gt && nx || lt && nx || gt && lt {
		return resp.Err(msgZaddGTLTNX)
	}
	pairs := elems / 2
	if incr && pairs > 1 {
		return resp.Err(msgZaddIncrPair)
	}
	scores := make([]float64, pairs)
	for j := range scores {
		s, ok := parseFloat(args[i+2*j])
		if !ok {
			return resp.Err(msgNotFloat)
		}
		scores[j] = s
	}
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	isNew := v == nil
	if isNew && xx {
		if incr {
			return resp.NilReply
		}
		return resp.Zero
	}
	if isNew {
		v = &Value{Kind: KindZSet, agg: NewZSet()}
	}
	z := v.zset()
	added, updated, processed := 0, 0, 0
	var score float64
	for j, s := range scores {
		m := args[i+1+2*j]
		cur, exists := z.Score(m)
		switch {
		case exists:
			if nx {
				continue
			}
			if incr {
				s += cur
				if math.IsNaN(s) {
					return resp.Err(msgNaN)
				}
			}
			if lt && s >= cur || gt && s <= cur {
				continue
			}
			processed++
			score = s
			if s != cur {
				z.Add(m, storedScore(s))
				updated++
			}
		case !xx:
			z.Add(m, storedScore(s))
			c.zsetAdded(v, m)
			added++
			processed++
			score = s
		}
	}
	if added+updated > 0 {
		saveValue(c, args[1], v, isNew)
		if incr {
			c.notify(notifyZSet, "zincr", args[1])
		} else {
			c.notify(notifyZSet, "zadd", args[1])
		}
	}
	if incr {
		if processed == 0 {
			return resp.NilReply
		}
		return scoreReply(score)
	}
	if ch {
		return resp.IntReply(int64(added + updated))
	}
	return resp.IntReply(int64(added))
}

func cmdZrem(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	n := 0
	for _, m := range args[2:] {
		if v.zset().Remove(m) {
			n++
		}
	}
	if n > 0 {
		c.touch(v)
		c.notify(notifyZSet, "zrem", args[1])
		c.removeIfEmpty(args[1], v)
	}
	return resp.IntReply(int64(n))
}

func cmdZscore(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.NilReply
	}
	if s, ok := v.zset().Score(args[2]); ok {
		return scoreReply(s)
	}
	return resp.NilReply
}

func cmdZmscore(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	out := make([]resp.Reply, 0, len(args)-2)
	for _, m := range args[2:] {
		r := resp.NilReply
		if v != nil {
			if s, ok := v.zset().Score(m); ok {
				r = scoreReply(s)
			}
		}
		out = append(out, r)
	}
	return resp.ArrayReply(out...)
}

func cmdZcard(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	return resp.IntReply(int64(v.zset().Len()))
}

func cmdZrank(c *Ctx, args [][]byte) resp.Reply    { return zrankGeneric(c, args, false) }
func cmdZrevrank(c *Ctx, args [][]byte) resp.Reply { return zrankGeneric(c, args, true) }

func zrankGeneric(c *Ctx, args [][]byte, reverse bool) resp.Reply {
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.NilReply
	}
	s, ok := v.zset().Score(args[2])
	if !ok {
		return resp.NilReply
	}
	r := v.zset().order.rank(s, string(args[2]))
	if reverse {
		return resp.IntReply(int64(v.zset().Len() - r))
	}
	return resp.IntReply(int64(r - 1))
}

// scoreRange is a ZRANGEBYSCORE-style interval; "(" makes an end
// exclusive.
type scoreRange struct {
	min, max     float64
	minex, maxex bool
}

// parseScoreRange reads the bounds as Redis's zslParseRange does, with a
// bare strtod: " 1", "" (0) and "1e999" (inf) are all accepted.
func parseScoreRange(min, max []byte) (r scoreRange, ok bool) {
	bound := func(b []byte) (float64, bool, bool) {
		if len(b) > 0 && b[0] == '(' {
			f, ok := parseStrtod(b[1:])
			return f, true, ok
		}
		f, ok := parseStrtod(b)
		return f, false, ok
	}
	var okMin, okMax bool
	r.min, r.minex, okMin = bound(min)
	r.max, r.maxex, okMax = bound(max)
	return r, okMin && okMax
}

func (r *scoreRange) gteMin(s float64) bool {
	if r.minex {
		return s > r.min
	}
	return s >= r.min
}

func (r *scoreRange) lteMax(s float64) bool {
	if r.maxex {
		return s < r.max
	}
	return s <= r.max
}

func (r *scoreRange) empty() bool {
	return r.min > r.max || r.min == r.max && (r.minex || r.maxex)
}

// lexBound is one end of a ZRANGEBYLEX-style interval: "-", "+", or a
// value after "[" (inclusive) or "(" (exclusive).
type lexBound struct {
	inf  int // -1 for "-", +1 for "+", 0 for a value
	val  string
	excl bool
}

func parseLexBound(b []byte) (lexBound, bool) {
	if len(b) == 0 {
		return lexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 { // C string: a NUL ends it
			return lexBound{}, false
		}
		if b[0] == '+' {
			return lexBound{inf: 1, excl: true}, true
		}
		return lexBound{inf: -1, excl: true}, true
	case '(':
		return lexBound{val: string(b[1:]), excl: true}, true
	case '[':
		return lexBound{val: string(b[1:])}, true
	}
	return lexBound{}, false
}

// lexCmp orders bounds: "-" before every value, "+" after.
func lexCmp(a, b lexBound) int {
	switch {
	case a.inf == b.inf && a.inf != 0:
		return 0
	case a.inf == -1 || b.inf == 1:
		return -1
	case a.inf == 1 || b.inf == -1:
		return 1
	}
	return strings.Compare(a.val, b.val)
}

type lexRange struct{ min, max lexBound }

func parseLexRange(min, max []byte) (r lexRange, ok bool) {
	var okMin, okMax bool
	r.min, okMin = parseLexBound(min)
	r.max, okMax = parseLexBound(max)
	return r, okMin && okMax
}

func (r *lexRange) gteMin(m string) bool {
	c := lexCmp(lexBound{val: m}, r.min)
	return c > 0 || c == 0 && !r.min.excl
}

func (r *lexRange) lteMax(m string) bool {
	c := lexCmp(lexBound{val: m}, r.max)
	return c < 0 || c == 0 && !r.max.excl
}

func (r *lexRange) empty() bool {
	c := lexCmp(r.min, r.max)
	return c > 0 || c == 0 && (r.min.excl || r.max.excl)
}

// zrange is one of the three ways to select a slice of a sorted set. Each
// finds the first and last node in range and tests a node against either
// end; lex ranges assume equal scores, as Redis's do.
type zrange interface {
	empty() bool
	first(z *ZSet) *slNode
	last(z *ZSet) *slNode
	aboveMin(x *slNode) bool
	belowMax(x *slNode) bool
}

type byScore struct{ scoreRange }

func (r *byScore) first(z *ZSet) *slNode {
	return z.order.firstWhere(func(x *slNode) bool { return !r.gteMin(x.score) })
}
func (r *byScore) last(z *ZSet) *slNode {
	return z.order.lastWhere(func(x *slNode) bool { return r.lteMax(x.score) })
}
func (r *byScore) aboveMin(x *slNode) bool { return r.gteMin(x.score) }
func (r *byScore) belowMax(x *slNode) bool { return r.lteMax(x.score) }

type byLex struct{ lexRange }

func (r *byLex) first(z *ZSet) *slNode {
	return z.order.firstWhere(func(x *slNode) bool { return !r.gteMin(x.member) })
}
func (r *byLex) last(z *ZSet) *slNode {
	return z.order.lastWhere(func(x *slNode) bool { return r.lteMax(x.member) })
}
func (r *byLex) aboveMin(x *slNode) bool { return r.gteMin(x.member) }
func (r *byLex) belowMax(x *slNode) bool { return r.lteMax(x.member) }

// firstIn and lastIn return the lowest and highest node in range, or nil.
func firstIn(z *ZSet, r zrange) *slNode {
	if r.empty() {
		return nil
	}
	x := r.first(z)
	if x == nil || !r.belowMax(x) {
		return nil
	}
	return x
}

func lastIn(z *ZSet, r zrange) *slNode {
	if r.empty() {
		return nil
	}
	x := r.last(z)
	if x == nil || !r.aboveMin(x) {
		return nil
	}
	return x
}

// countIn counts the members in range.
func countIn(z *ZSet, r zrange) int {
	a := firstIn(z, r)
	if a == nil {
		return 0
	}
	b := lastIn(z, r)
	return max(0, z.order.rankOf(b)-z.order.rankOf(a)+1) // lex ranges over mixed scores can cross
}

func cmdZcount(c *Ctx, args [][]byte) resp.Reply {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		return resp.Err(msgMinMaxFloat)
	}
	return zcountGeneric(c, args[1], &byScore{r})
}

func cmdZlexcount(c *Ctx, args [][]byte) resp.Reply {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		return resp.Err(msgLexRange)
	}
	return zcountGeneric(c, args[1], &byLex{r})
}

func zcountGeneric(c *Ctx, key []byte, r zrange) resp.Reply {
	v, ok := c.lookupKind(key, KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	return resp.IntReply(int64(countIn(v.zset(), r)))
}

type zrangeKind uint8

const (
	zrAuto zrangeKind = iota
	zrRank
	zrScore
	zrLex
)

func cmdZrange(c *Ctx, args [][]byte) resp.Reply { return zrangeGeneric(c, args, zrAuto, 0) }
func cmdZrevrange(c *Ctx, args [][]byte) resp.Reply {
	return zrangeGeneric(c, args, zrRank, -1)
}
func cmdZrangebyscore(c *Ctx, args [][]byte) resp.Reply {
	return zrangeGeneric(c, args, zrScore, 1)
}
func cmdZrevrangebyscore(c *Ctx, args [][]byte) resp.Reply {
	return zrangeGeneric(c, args, zrScore, -1)
}
func cmdZrangebylex(c *Ctx, args [][]byte) resp.Reply { return zrangeGeneric(c, args, zrLex, 1) }
func cmdZrevrangebylex(c *Ctx, args [][]byte) resp.Reply {
	return zrangeGeneric(c, args, zrLex, -1)
}

// zrangeGeneric is ZRANGE with Redis 7.0's syntax (BYSCORE, BYLEX, REV,
// LIMIT, WITHSCORES) and the older commands it subsumes, which fix the
// kind and the direction (dir: 0 not fixed, 1 forward, -1 reverse).
// Options are checked in Redis's order: syntax, conflicts, then the
// bounds, and only then the key.
func zrangeGeneric(c *Ctx, args [][]byte, kind zrangeKind, dir int) resp.Reply {
	minArg, maxArg := args[2], args[3]
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := 4; j < len(args); j++ {
		a := args[j]
		switch {
		case optIs(a, "withscores"):
			withScores = true
		case optIs(a, "limit") && len(args)-j-1 >= 2:
			var ok bool
			if offset, limit, ok = parseIndexPair(args[j+1], args[j+2]); !ok {
				return resp.Err(msgNotInt)
			}
			j += 2
		case dir == 0 && optIs(a, "rev"):
			dir = -1
		case kind == zrAuto && optIs(a, "bylex"):
			kind = zrLex
		case kind == zrAuto && optIs(a, "byscore"):
			kind = zrScore
		default:
			return resp.Err(msgSyntax)
		}
	}
	if dir == 0 {
		dir = 1
	}
	if kind == zrAuto {
		kind = zrRank
	}
	if limit != -1 && kind == zrRank {
		return resp.Err(msgZrangeLimit)
	}
	if withScores && kind == zrLex {
		return resp.Err(msgZrangeLexScores)
	}
	reverse := dir < 0
	if reverse && kind != zrRank {
		minArg, maxArg = maxArg, minArg
	}
	var start, stop int64
	var r zrange
	switch kind {
	case zrRank:
		var ok bool
		if start, stop, ok = parseIndexPair(minArg, maxArg); !ok {
			return resp.Err(msgNotInt)
		}
	case zrScore:
		sr, ok := parseScoreRange(minArg, maxArg)
		if !ok {
			return resp.Err(msgMinMaxFloat)
		}
		r = &byScore{sr}
	case zrLex:
		lr, ok := parseLexRange(minArg, maxArg)
		if !ok {
			return resp.Err(msgLexRange)
		}
		r = &byLex{lr}
	}
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.EmptyArr
	}
	var nodes []*slNode
	if kind == zrRank {
		nodes = zrangeByRank(v.zset(), start, stop, reverse)
	} else {
		nodes = zrangeIn(v.zset(), r, offset, limit, reverse)
	}
	return nodesReply(nodes, withScores)
}

// zrangeByRank returns the nodes at positions start..stop (negative from
// the end), counted from the highest score when reverse.
func zrangeByRank(z *ZSet, start, stop int64, reverse bool) []*slNode {
	n := z.Len()
	from, to, ok := indexRange(start, stop, int64(n))
	if !ok {
		return nil
	}
	out := make([]*slNode, 0, to-from+1)
	if reverse {
		for x := z.order.byRank(n - from); len(out) < cap(out); x = x.backward {
			out = append(out, x)
		}
	} else {
		for x := z.order.byRank(from + 1); len(out) < cap(out); x = x.next() {
			out = append(out, x)
		}
	}
	return out
}

// zrangeIn returns the nodes in range, skipping offset of them and
// returning at most limit (all if limit < 0), from the highest when
// reverse. A negative offset gives nothing, as in Redis.
func zrangeIn(z *ZSet, r zrange, offset, limit int64, reverse bool) []*slNode {
	if offset < 0 || offset > 0 && offset >= int64(z.Len()) || limit == 0 {
		return nil
	}
	var x *slNode
	if reverse {
		x = lastIn(z, r)
	} else {
		x = firstIn(z, r)
	}
	if x != nil && offset > 0 {
		rank := int64(z.order.rankOf(x))
		if reverse {
			rank -= offset
		} else {
			rank += offset
		}
		if rank < 1 || rank > int64(z.Len()) {
			return nil
		}
		x = z.order.byRank(int(rank))
	}
	var out []*slNode
	for ; x != nil && limit != 0; limit-- {
		if reverse && !r.aboveMin(x) || !reverse && !r.belowMax(x) {
			break
		}
		out = append(out, x)
		if reverse {
			x = x.backward
		} else {
			x = x.next()
		}
	}
	return out
}

func nodesReply(nodes []*slNode, withScores bool) resp.Reply {
	per := 1
	if withScores {
		per = 2
	}
	out := make([]resp.Reply, 0, per*len(nodes))
	for _, x := range nodes {
		out = append(out, resp.BulkString(x.member))
		if withScores {
			out = append(out, scoreReply(x.score))
		}
	}
	if withScores {
		return resp.PairsReply(out...)
	}
	return resp.ArrayReply(out...)
}

func cmdZremrangebyrank(c *Ctx, args [][]byte) resp.Reply {
	start, stop, ok := parseIndexPair(args[2], args[3])
	if !ok {
		return resp.Err(msgNotInt)
	}
	return zremGeneric(c, args[1], "zremrangebyrank", func(z *ZSet) []*slNode { return zrangeByRank(z, start, stop, false) })
}

func cmdZremrangebyscore(c *Ctx, args [][]byte) resp.Reply {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		return resp.Err(msgMinMaxFloat)
	}
	return zremGeneric(c, args[1], "zremrangebyscore", func(z *ZSet) []*slNode { return zrangeIn(z, &byScore{r}, 0, -1, false) })
}

func cmdZremrangebylex(c *Ctx, args [][]byte) resp.Reply {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		return resp.Err(msgLexRange)
	}
	return zremGeneric(c, args[1], "zremrangebylex", func(z *ZSet) []*slNode { return zrangeIn(z, &byLex{r}, 0, -1, false) })
}

// zremGeneric removes the nodes that pick selects and replies with their
// number; event names the command for keyspace notifications.
func zremGeneric(c *Ctx, key []byte, event string, pick func(*ZSet) []*slNode) resp.Reply {
	v, ok := c.lookupKind(key, KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	nodes := pick(v.zset())
	members := make([]string, len(nodes))
	for i, x := range nodes {
		members[i] = x.member
	}
	for _, m := range members {
		v.zset().Remove([]byte(m))
	}
	if len(members) > 0 {
		c.touch(v)
		c.notify(notifyZSet, event, key)
		c.removeIfEmpty(key, v)
	}
	return resp.IntReply(int64(len(members)))
}

func cmdZpopmin(c *Ctx, args [][]byte) resp.Reply { return zpopGeneric(c, args, false) }
func cmdZpopmax(c *Ctx, args [][]byte) resp.Reply { return zpopGeneric(c, args, true) }

// zpopGeneric is ZPOPMIN and ZPOPMAX: member, score pairs (RESP3: an array
// of pairs with a count, one flat pair without), empty when the key is
// missing.
func zpopGeneric(c *Ctx, args [][]byte, max bool) resp.Reply {
	if len(args) > 3 {
		return resp.Err(msgSyntax)
	}
	count := int64(1)
	if len(args) == 3 {
		n, ok := parseInt64(args[2])
		if !ok || n < 0 {
			return resp.Err(msgCountPositive)
		}
		count = n
	}
	v, ok := c.lookupKind(args[1], KindZSet)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil || count == 0 {
		return resp.EmptyArr
	}
	z := v.zset()
	n := int(min(count, int64(z.Len())))
	out := make([]resp.Reply, 0, 2*n)
	for range n {
		x := z.order.first()
		if max {
			x = z.order.tail
		}
		out = append(out, resp.BulkString(x.member), scoreReply(x.score))
		z.Remove([]byte(x.member))
	}
	c.touch(v)
	if n > 0 {
		if max {
			c.notify(notifyZSet, "zpopmax", args[1])
		} else {
			c.notify(notifyZSet, "zpopmin", args[1])
		}
	}
	c.removeIfEmpty(args[1], v)
	if len(args) == 3 {
		return resp.PairsReply(out...)
	}
	return resp.ArrayReply(out...)
}

// cmdZscan: a listpack-encoded sorted set (at most 128 members of at most
// 64 bytes) holds its scores as text, which ZSCAN returns as stored
// (d2string: 123456789012345680, not 1.2345678901234568e+17).
func cmdZscan(c *Ctx, args [][]byte) resp.Reply {
	return elemScan(c, args, KindZSet, func(v *Value) ([]scanElem, bool) {
		out := make([]scanElem, 0, v.zset().Len())
		compact := v.zset().Len() <= 128
		v.zset().Each(func(m string, _ float64) bool {
			compact = compact && len(m) <= 64
			return compact
		})
		v.zset().Each(func(m string, s float64) bool {
			score := resp.BulkReply(scoreReply(s).Str)
			if compact {
				score = resp.BulkReply(formatD2String(s))
			}
			out = append(out, scanElem{name: m, value: score, paired: true})
			return true
		})
		return out, compact
	})
}
