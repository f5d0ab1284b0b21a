package fsm

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// SORT and SORT_RO, as Redis 7.0 sorts: numbers by default (every weight
// must read as a double, else an error), bytes with ALPHA; BY and GET
// patterns read other keys ("*" is the element, "->" a hash field); ties
// between equal weights go by the elements' bytes, so the order is total
// and the same on every node.

func init() {
	register(
		Spec{Name: "sort", Arity: -2, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSort},
		Spec{Name: "sort_ro", Arity: -2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSort},
	)
}

const msgSortNotDouble = "ERR One or more scores can't be converted into double"

type sortItem struct {
	elem   []byte
	weight []byte // BY's value (nil: missing)
	score  float64
}

func cmdSort(c *Ctx, args [][]byte) resp.Reply {
	ro := optEq(args[0], "sort_ro")
	var (
		by            []byte
		hasBy, noSort bool
		gets          [][]byte
		desc, alpha   bool
		limit         bool
		offset, count int64
		store         []byte
	)
	for i := 2; i < len(args); i++ {
		left := len(args) - i - 1
		switch {
		case optEq(args[i], "asc"):
			desc = false
		case optEq(args[i], "desc"):
			desc = true
		case optEq(args[i], "alpha"):
			alpha = true
		case optEq(args[i], "limit") && left >= 2:
			o, ok1 := parseInt64(args[i+1])
			n, ok2 := parseInt64(args[i+2])
			if !ok1 || !ok2 {
				return resp.Err(msgNotInt)
			}
			limit, offset, count = true, o, n
			i += 2
		case optEq(args[i], "store") && left >= 1 && !ro:
			store = args[i+1]
			i++
		case optEq(args[i], "by") && left >= 1:
			by, hasBy = args[i+1], true
			noSort = !bytes.Contains(by, []byte("*"))
			if !noSort && !c.readsAnyKey(args) {
				return resp.Err("ERR BY option of SORT denied due to insufficient ACL permissions.")
			}
			i++
		case optEq(args[i], "get") && left >= 1:
			if !c.readsAnyKey(args) {
				return resp.Err("ERR GET option of SORT denied due to insufficient ACL permissions.")
			}
			gets = append(gets, args[i+1])
			i++
		default:
			return resp.Err(msgSyntax)
		}
	}
	v := c.lookup(args[1])
	if v != nil && v.Kind != KindList && v.Kind != KindSet && v.Kind != KindZSet {
		return resp.Err(msgWrongType)
	}
	var elems [][]byte
	if v != nil {
		switch v.Kind {
		case KindList:
			for i := 0; i < v.list().Len(); i++ {
				elems = append(elems, v.list().Index(i))
			}
		case KindSet:
			v.set().Each(func(m string) bool { elems = append(elems, []byte(m)); return true })
			if noSort {
				if store != nil || c.script.active {
					// Redis sorts by bytes then, for a result that
					// does not depend on the set's layout.
					alpha, noSort, hasBy = true, false, false
				} else {
					// The set's own order, which Redis keeps for the
					// reply: numeric for a small set of integers (an
					// intset), and deadbolt's byte order for the rest
					// (Redis's hash order, which nothing may rely on).
					setOrder(elems)
					desc = false
				}
			}
		case KindZSet:
			v.zset().Each(func(m string, _ float64) bool { elems = append(elems, []byte(m)); return true })
		}
	}
	items := make([]sortItem, len(elems))
	for i, e := range elems {
		items[i].elem = e
	}
	if !noSort {
		for i := range items {
			w := items[i].elem
			if hasBy {
				w = c.sortLookup(by, items[i].elem)
			}
			items[i].weight = w
			if alpha {
				continue
			}
			if w != nil {
				f, ok := parseSortScore(w)
				if !ok {
					return resp.Err(msgSortNotDouble)
				}
				items[i].score = f
			}
		}
		slices.SortStableFunc(items, func(a, b sortItem) int {
			var r int
			if alpha {
				switch {
				case a.weight == nil && b.weight == nil:
				case a.weight == nil:
					r = -1
				case b.weight == nil:
					r = 1
				default:
					r = bytes.Compare(a.weight, b.weight)
				}
			} else {
				switch {
				case a.score < b.score:
					r = -1
				case a.score > b.score:
					r = 1
				}
			}
			if r == 0 {
				r = bytes.Compare(a.elem, b.elem)
			}
			if desc {
				r = -r
			}
			return r
		})
	} else if desc {
		slices.Reverse(items)
	}
	start, end := 0, len(items)
	if limit {
		start = int(max(offset, 0))
		if start > len(items) {
			start = len(items)
		}
		if count >= 0 {
			end = min(len(items), start+int(min(count, int64(len(items)))))
		}
	}
	items = items[start:end]
	var out []resp.Reply
	for _, it := range items {
		if len(gets) == 0 {
			out = append(out, resp.BulkReply(it.elem))
			continue
		}
		for _, g := range gets {
			val := c.sortLookup(g, it.elem)
			if val == nil {
				out = append(out, resp.NilReply)
			} else {
				out = append(out, resp.BulkReply(val))
			}
		}
	}
	if store == nil {
		return resp.ArrayReply(out...)
	}
	c.mustWrite()
	if len(out) == 0 {
		if c.del(store) {
			c.notify(notifyGeneric, "del", store)
		}
		return resp.Zero
	}
	l := NewList()
	for _, r := range out {
		l.PushBack(append([]byte{}, r.Str...))
	}
	c.del(store)
	c.put(store, &Value{Kind: KindList, agg: l})
	c.notify(notifyList, "sortstore", store)
	return resp.IntReply(int64(len(out)))
}

// sortLookup reads what a BY or GET pattern names for elem: "#" is elem
// itself; the first "*" is replaced by elem; "->field" reads a hash field.
// A missing key, field or a value of another type is nil.
func (c *Ctx) sortLookup(pattern, elem []byte) []byte {
	if string(pattern) == "#" {
		return elem
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil
	}
	var field []byte
	keyPat := pattern
	if arrow := bytes.LastIndex(pattern, []byte("->")); arrow > star && arrow+2 < len(pattern) {
		keyPat, field = pattern[:arrow], pattern[arrow+2:]
	}
	key := make([]byte, 0, len(keyPat)+len(elem))
	key = append(key, keyPat[:star]...)
	key = append(key, elem...)
	key = append(key, keyPat[star+1:]...)
	v := c.lookup(key)
	if v == nil {
		return nil
	}
	if field != nil {
		if v.Kind != KindHash {
			return nil
		}
		b, ok := v.hash().Get(field)
		if !ok {
			return nil
		}
		return b
	}
	if v.Kind != KindString {
		return nil
	}
	return v.Str
}

// parseSortScore reads a weight as SORT does: C's strtod over the whole
// string (leading white space allowed, an empty string is 0), no NaN, no
// overflow or underflow.
func parseSortScore(b []byte) (float64, bool) {
	if f, ok := plainDecimal(b); ok {
		return f, true
	}
	x, n := scanStrtod(b)
	if n < len(b) && b[n] != 0 || x.kind == cfNaN {
		return 0, false
	}
	f, rangeErr := x.float64()
	if rangeErr {
		return 0, false
	}
	return f, true
}

// maxIntsetEntries is Redis's set-max-intset-entries default.
const maxIntsetEntries = 512

// setOrder puts a set's members in the order Redis lists an unsorted
// set: an intset's (ascending numbers) when every member is an integer
// and there are few enough, else byte order.
func setOrder(elems [][]byte) {
	type num struct {
		n int64
		b []byte
	}
	nums := make([]num, 0, len(elems))
	for _, e := range elems {
		n, ok := parseInt64(e)
		if !ok || len(elems) > maxIntsetEntries || string(strconv.AppendInt(nil, n, 10)) != string(e) {
			slices.SortFunc(elems, bytes.Compare)
			return
		}
		nums = append(nums, num{n, e})
	}
	slices.SortFunc(nums, func(a, b num) int { return cmpInt64(a.n, b.n) })
	for i, x := range nums {
		elems[i] = x.b
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
