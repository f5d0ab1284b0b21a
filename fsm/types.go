package fsm

import (
	"math"
	"math/bits"
)

// The aggregate value types: Hash, List, Set and ZSet. Each keeps its
// elements in an order that depends only on the commands applied to it,
// never on Go's map iteration, so replies and snapshots are the same on
// every node.

// Hash is a hash value. Fields keep insertion order (as Redis's small
// listpack-encoded hashes do), which makes HGETALL deterministic. A deleted
// field leaves a hole in the slice; holes are squeezed out once they make
// up half of it, so HDEL is O(1) amortised.
type Hash struct {
	index  map[string]int // field -> position in fields; nil while the hash is small
	fields []hashField    // insertion order, with holes
	holes  int
}

type hashField struct {
	name, value []byte
	dead        bool
}

// hashScanMax is how many slots (fields and holes) a hash scans before
// it builds an index: a small hash, like a lock's, needs no map.
const hashScanMax = 8

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{} }

// newHashValue returns a Value holding an empty hash, packed until it
// grows (hashpack.go).
func newHashValue() *Value {
	return &Value{Kind: KindHash}
}

// Len is the number of fields.
func (h *Hash) Len() int { return len(h.fields) - h.holes }

// find returns a field's position.
func (h *Hash) find(field []byte) (int, bool) {
	if h.index != nil {
		i, ok := h.index[string(field)]
		return i, ok
	}
	for i := range h.fields {
		if f := &h.fields[i]; !f.dead && string(f.name) == string(field) {
			return i, true
		}
	}
	return 0, false
}

// Get returns a field's value.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	i, ok := h.find(field)
	if !ok {
		return nil, false
	}
	return h.fields[i].value, true
}

// Set sets a field and reports whether it is new. A new field goes last.
func (h *Hash) Set(field, value []byte) bool {
	if i, ok := h.find(field); ok {
		h.fields[i].value = append([]byte(nil), value...)
		return false
	}
	h.fields = append(h.fields, newHashField(field, value))
	switch {
	case h.index != nil:
		h.index[string(h.fields[len(h.fields)-1].name)] = len(h.fields) - 1
	case len(h.fields) > hashScanMax:
		h.reindex()
	}
	return true
}

// reindex builds the index of the live fields.
func (h *Hash) reindex() {
	h.index = make(map[string]int, len(h.fields)-h.holes)
	for i, f := range h.fields {
		if !f.dead {
			h.index[string(f.name)] = i
		}
	}
}

// newHashField copies a field's name and value into one allocation (an
// empty one stays nil, as a copy by append leaves it).
func newHashField(name, value []byte) hashField {
	b := make([]byte, len(name)+len(value))
	n := copy(b, name)
	copy(b[n:], value)
	var f hashField
	if n > 0 {
		f.name = b[:n:n]
	}
	if len(value) > 0 {
		f.value = b[n:]
	}
	return f
}

// Del removes a field and reports whether it was there; the order of the
// others is kept.
func (h *Hash) Del(field []byte) bool {
	i, ok := h.find(field)
	if !ok {
		return false
	}
	if h.index != nil {
		delete(h.index, string(field))
	}
	h.fields[i] = hashField{dead: true}
	h.holes++
	switch {
	case h.holes == len(h.fields):
		h.fields = h.fields[:0]
		h.holes = 0
	case h.holes >= 32 && 2*h.holes >= len(h.fields):
		h.compact()
	}
	return true
}

// compact removes the holes and renumbers the index.
func (h *Hash) compact() {
	live := make([]hashField, 0, h.Len())
	for _, f := range h.fields {
		if !f.dead {
			if h.index != nil {
				h.index[string(f.name)] = len(live)
			}
			live = append(live, f)
		}
	}
	h.fields = live
	h.holes = 0
}

// Each calls fn for every field in order until fn returns false.
func (h *Hash) Each(fn func(field, value []byte) bool) {
	for _, f := range h.fields {
		if f.dead {
			continue
		}
		if !fn(f.name, f.value) {
			return
		}
	}
}

// Clone returns a deep copy.
func (h *Hash) Clone() *Hash {
	n := &Hash{fields: make([]hashField, 0, h.Len())}
	h.Each(func(f, v []byte) bool {
		n.Set(f, v)
		return true
	})
	return n
}

// List is a list value: a ring-buffer deque, so that pushes and pops at
// either end are O(1) amortised and LINDEX and LSET are O(1). Elements are
// copied in and never changed in place, so a reply may refer to them.
type List struct {
	buf  [][]byte // len(buf) is 0 or a power of two
	head int      // position of element 0 in buf
	n    int
}

const minListCap = 8

// NewList returns an empty list.
func NewList() *List { return &List{} }

// Len is the number of elements.
func (l *List) Len() int { return l.n }

func (l *List) slot(i int) int { return (l.head + i) & (len(l.buf) - 1) }

// Index returns element i, 0 <= i < Len().
func (l *List) Index(i int) []byte { return l.buf[l.slot(i)] }

// SetIndex replaces element i, 0 <= i < Len().
func (l *List) SetIndex(i int, v []byte) { l.buf[l.slot(i)] = append([]byte(nil), v...) }

// PushFront adds v before the first element.
func (l *List) PushFront(v []byte) {
	l.reserve(l.n + 1)
	l.head = (l.head - 1) & (len(l.buf) - 1)
	l.buf[l.head] = append([]byte(nil), v...)
	l.n++
}

// PushBack adds v after the last element.
func (l *List) PushBack(v []byte) {
	l.reserve(l.n + 1)
	l.buf[l.slot(l.n)] = append([]byte(nil), v...)
	l.n++
}

// PopFront removes and returns the first element; the list must not be
// empty.
func (l *List) PopFront() []byte {
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = (l.head + 1) & (len(l.buf) - 1)
	l.n--
	l.shrink()
	return v
}

// PopBack removes and returns the last element; the list must not be
// empty.
func (l *List) PopBack() []byte {
	i := l.slot(l.n - 1)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	l.shrink()
	return v
}

// Each calls fn for every element from the first until fn returns false.
func (l *List) Each(fn func(v []byte) bool) {
	for i := 0; i < l.n; i++ {
		if !fn(l.Index(i)) {
			return
		}
	}
}

// Range returns elements start..stop inclusive (0 <= start <= stop < Len()).
func (l *List) Range(start, stop int) [][]byte {
	out := make([][]byte, 0, stop-start+1)
	for i := start; i <= stop; i++ {
		out = append(out, l.Index(i))
	}
	return out
}

// replace makes items (not copied) the list's elements.
func (l *List) replace(items [][]byte) {
	c := 0
	if len(items) > 0 {
		c = max(minListCap, 1<<bits.Len(uint(len(items)-1)))
	}
	buf := make([][]byte, c)
	copy(buf, items)
	l.buf, l.head, l.n = buf, 0, len(items)
}

// insert puts v before element i (0 <= i <= Len()).
func (l *List) insert(i int, v []byte) {
	items := make([][]byte, 0, l.n+1)
	items = append(items, l.Range(0, i-1)...)
	items = append(items, append([]byte(nil), v...))
	if i < l.n {
		items = append(items, l.Range(i, l.n-1)...)
	}
	l.replace(items)
}

// reserve makes room for n elements.
func (l *List) reserve(n int) {
	if n <= len(l.buf) {
		return
	}
	l.resize(max(minListCap, 2*len(l.buf)))
}

// shrink halves the buffer when it is at most a quarter full.
func (l *List) shrink() {
	if len(l.buf) > minListCap && l.n <= len(l.buf)/4 {
		l.resize(len(l.buf) / 2)
	}
}

func (l *List) resize(c int) {
	buf := make([][]byte, c)
	for i := 0; i < l.n; i++ {
		buf[i] = l.Index(i)
	}
	l.buf, l.head = buf, 0
}

// Clone returns a copy (elements are immutable and shared).
func (l *List) Clone() *List {
	n := &List{}
	if l.n > 0 {
		n.replace(l.Range(0, l.n-1))
	}
	return n
}

// Set is a set value. Members are kept ordered: integers (as Redis's
// intset holds them) first in numeric order, then every other member in
// byte order. For the small integer sets that Redis keeps as intsets this
// is exactly Redis's SMEMBERS order; for the rest Redis's order is
// unspecified. Integers beyond ±2^53 compare by their nearest double, ties
// by bytes.
type Set struct {
	members map[string]struct{}
	order   *skiplist // scored by setScore
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{members: make(map[string]struct{}), order: newSkiplist()} }

// setScore places a member in a set's order.
func setScore(m string) float64 {
	if n, ok := parseInt64([]byte(m)); ok {
		return float64(n)
	}
	return math.Inf(1)
}

// Len is the number of members.
func (s *Set) Len() int { return len(s.members) }

// Has reports whether m is a member.
func (s *Set) Has(m []byte) bool {
	_, ok := s.members[string(m)]
	return ok
}

// Add adds m and reports whether it is new.
func (s *Set) Add(m []byte) bool {
	if s.Has(m) {
		return false
	}
	k := string(m)
	s.members[k] = struct{}{}
	s.order.insert(setScore(k), k)
	return true
}

// Remove removes m and reports whether it was a member.
func (s *Set) Remove(m []byte) bool {
	k := string(m)
	if _, ok := s.members[k]; !ok {
		return false
	}
	delete(s.members, k)
	s.order.delete(setScore(k), k)
	return true
}

// Each calls fn for every member in order until fn returns false.
func (s *Set) Each(fn func(m string) bool) {
	for x := s.order.first(); x != nil; x = x.next() {
		if !fn(x.member) {
			return
		}
	}
}

// nth returns member i in order, 0 <= i < Len().
func (s *Set) nth(i int) string { return s.order.byRank(i + 1).member }

// Clone returns a copy.
func (s *Set) Clone() *Set {
	n := NewSet()
	s.Each(func(m string) bool {
		n.Add([]byte(m))
		return true
	})
	return n
}

// ZSet is a sorted set value, ordered by (score, member bytes) as Redis
// orders it.
type ZSet struct {
	scores map[string]float64
	order  *skiplist
}

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet { return &ZSet{scores: make(map[string]float64), order: newSkiplist()} }

// Len is the number of members.
func (z *ZSet) Len() int { return len(z.scores) }

// Score returns a member's score.
func (z *ZSet) Score(m []byte) (float64, bool) {
	s, ok := z.scores[string(m)]
	return s, ok
}

// Add sets a member's score and reports whether the member is new. NaN is
// the caller's to refuse.
func (z *ZSet) Add(m []byte, score float64) bool {
	if cur, ok := z.scores[string(m)]; ok {
		if cur != score || math.Signbit(cur) != math.Signbit(score) {
			k := z.order.updateScore(cur, string(m), score)
			z.scores[k] = score
		}
		return false
	}
	k := string(m)
	z.scores[k] = score
	z.order.insert(score, k)
	return true
}

// Remove removes a member and reports whether it was there.
func (z *ZSet) Remove(m []byte) bool {
	k := string(m)
	cur, ok := z.scores[k]
	if !ok {
		return false
	}
	delete(z.scores, k)
	z.order.delete(cur, k)
	return true
}

// Each calls fn for every member, lowest score first, until fn returns
// false.
func (z *ZSet) Each(fn func(m string, score float64) bool) {
	for x := z.order.first(); x != nil; x = x.next() {
		if !fn(x.member, x.score) {
			return
		}
	}
}

// Clone returns a copy.
func (z *ZSet) Clone() *ZSet {
	n := NewZSet()
	z.Each(func(m string, s float64) bool {
		n.Add([]byte(m), s)
		return true
	})
	return n
}

// Snapshot payloads. Each writes its elements in the value's own order,
// which depends only on the logical content (lists and hashes: their
// order; sets and sorted sets: their sort order), never on the layout in
// memory.

func (l *List) encode(e *encoder) {
	e.uvarint(uint64(l.n))
	for i := 0; i < l.n; i++ {
		e.bytes(l.Index(i))
	}
}

func decodeList(d *decoder) *List {
	l := NewList()
	items := [][]byte(nil)
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		items = append(items, d.bytes())
	}
	l.replace(items)
	return l
}

func (s *Set) encode(e *encoder) {
	e.uvarint(uint64(s.Len()))
	s.Each(func(m string) bool {
		e.str(m)
		return true
	})
}

func decodeSet(d *decoder) *Set {
	s := NewSet()
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		s.Add(d.bytes())
	}
	return s
}

func (z *ZSet) encode(e *encoder) {
	e.uvarint(uint64(z.Len()))
	z.Each(func(m string, score float64) bool {
		e.str(m)
		e.float(score)
		return true
	})
}

func decodeZSet(d *decoder) *ZSet {
	z := NewZSet()
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		m := d.bytes()
		score := d.float()
		if math.IsNaN(score) {
			d.fail(ErrSnapshotFormat)
			break
		}
		z.Add(m, score)
	}
	return z
}

// skiplist is an indexable skip list ordered by (score, member), as
// Redis's zskiplist: every link records how many elements it spans, so
// ranks and positions are O(log n). Node heights come from a xorshift
// generator with a fixed seed, so the shape is a function of the inserts
// (not that anything observable depends on it).
type skiplist struct {
	header *slNode
	tail   *slNode
	length int
	level  int
	rng    uint64
}

type slNode struct {
	member   string
	score    float64
	backward *slNode
	level    []slLevel
}

type slLevel struct {
	forward *slNode
	span    int
}

const slMaxLevel = 32

func newSkiplist() *skiplist {
	return &skiplist{
		header: &slNode{level: make([]slLevel, slMaxLevel)},
		level:  1,
		rng:    0x9E3779B97F4A7C15,
	}
}

// randomLevel draws a height with P(level > k) = 4^-k.
func (sl *skiplist) randomLevel() int {
	sl.rng ^= sl.rng << 13
	sl.rng ^= sl.rng >> 7
	sl.rng ^= sl.rng << 17
	return min(1+bits.TrailingZeros64(sl.rng|1<<62)/2, slMaxLevel)
}

// before reports whether x sorts before (score, member).
func (x *slNode) before(score float64, member string) bool {
	return x.score < score || x.score == score && x.member < member
}

func (x *slNode) next() *slNode { return x.level[0].forward }

func (sl *skiplist) first() *slNode { return sl.header.level[0].forward }

// insert adds (score, member), which must not be present.
func (sl *skiplist) insert(score float64, member string) *slNode {
	var update [slMaxLevel]*slNode
	var rank [slMaxLevel]int
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		if i < sl.level-1 {
			rank[i] = rank[i+1]
		}
		for f := x.level[i].forward; f != nil && f.before(score, member); f = x.level[i].forward {
			rank[i] += x.level[i].span
			x = f
		}
		update[i] = x
	}
	lvl := sl.randomLevel()
	if lvl > sl.level {
		for i := sl.level; i < lvl; i++ {
			rank[i] = 0
			update[i] = sl.header
			sl.header.level[i].span = sl.length
		}
		sl.level = lvl
	}
	n := &slNode{member: member, score: score, level: make([]slLevel, lvl)}
	for i := 0; i < lvl; i++ {
		n.level[i].forward = update[i].level[i].forward
		update[i].level[i].forward = n
		n.level[i].span = update[i].level[i].span - (rank[0] - rank[i])
		update[i].level[i].span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < sl.level; i++ {
		update[i].level[i].span++
	}
	if update[0] != sl.header {
		n.backward = update[0]
	}
	if n.level[0].forward != nil {
		n.level[0].forward.backward = n
	} else {
		sl.tail = n
	}
	sl.length++
	return n
}

// path fills update with the last node before (score, member) on every
// level and returns the node after it on level 0.
func (sl *skiplist) path(score float64, member string, update *[slMaxLevel]*slNode) *slNode {
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && f.before(score, member); f = x.level[i].forward {
			x = f
		}
		update[i] = x
	}
	return x.level[0].forward
}

// delete removes (score, member) and reports whether it was there.
func (sl *skiplist) delete(score float64, member string) bool {
	var update [slMaxLevel]*slNode
	x := sl.path(score, member, &update)
	if x == nil || x.score != score || x.member != member {
		return false
	}
	sl.unlink(x, &update)
	return true
}

func (sl *skiplist) unlink(x *slNode, update *[slMaxLevel]*slNode) {
	for i := 0; i < sl.level; i++ {
		if update[i].level[i].forward == x {
			update[i].level[i].span += x.level[i].span - 1
			update[i].level[i].forward = x.level[i].forward
		} else {
			update[i].level[i].span--
		}
	}
	if x.level[0].forward != nil {
		x.level[0].forward.backward = x.backward
	} else {
		sl.tail = x.backward
	}
	for sl.level > 1 && sl.header.level[sl.level-1].forward == nil {
		sl.level--
	}
	sl.length--
}

// updateScore moves member from score cur to score; it returns the
// member's string as stored (shared with the caller's map key).
func (sl *skiplist) updateScore(cur float64, member string, score float64) string {
	var update [slMaxLevel]*slNode
	x := sl.path(cur, member, &update)
	// Still in place between its neighbours: change the score alone.
	if (x.backward == nil || x.backward.before(score, member)) &&
		(x.level[0].forward == nil || !x.level[0].forward.before(score, member)) {
		x.score = score
		return x.member
	}
	sl.unlink(x, &update)
	return sl.insert(score, x.member).member
}

// rank returns the 1-based position of (score, member), 0 if absent.
func (sl *skiplist) rank(score float64, member string) int {
	r := 0
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && (f.before(score, member) || f.score == score && f.member == member); f = x.level[i].forward {
			r += x.level[i].span
			x = f
		}
		if x != sl.header && x.member == member && x.score == score {
			return r
		}
	}
	return 0
}

// byRank returns the node at 1-based position r, nil if out of range.
func (sl *skiplist) byRank(r int) *slNode {
	if r < 1 || r > sl.length {
		return nil
	}
	t := 0
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && t+x.level[i].span <= r {
			t += x.level[i].span
			x = x.level[i].forward
		}
		if t == r {
			return x
		}
	}
	return nil
}

// firstWhere returns the first node for which below is false, given that
// below holds for a prefix of the list.
func (sl *skiplist) firstWhere(below func(*slNode) bool) *slNode {
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && below(f); f = x.level[i].forward {
			x = f
		}
	}
	return x.level[0].forward
}

// lastWhere returns the last node for which within is true, given that
// within holds for a prefix of the list; nil if none.
func (sl *skiplist) lastWhere(within func(*slNode) bool) *slNode {
	x := sl.header
	for i := sl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && within(f); f = x.level[i].forward {
			x = f
		}
	}
	if x == sl.header {
		return nil
	}
	return x
}

// rankOf returns the 1-based position of node x.
func (sl *skiplist) rankOf(x *slNode) int { return sl.rank(x.score, x.member) }
