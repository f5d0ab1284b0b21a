package luaexec

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's next() visits a table's array part and then its hash nodes in
// node order, which depends on the hash of each key, the node array size
// and the history of collisions and rehashes. gopher-lua keeps insertion
// order instead. Scripts see the difference in pairs(), next(),
// cjson.encode and map replies, so the order Lua 5.1 would use is computed
// here: the table's keys are inserted, in the order gopher-lua remembers
// them, into a model of Lua 5.1's table (luaH_set, newkey, rehash,
// computesizes, resize). Tables built by a constructor start from the
// constructor's size hint, as in Lua. Keys that are tables or functions
// hash by the same made-up address that tostring shows, so the order is
// deterministic (in Redis it depends on memory addresses).
//
// The model is exact for tables filled without deletions; gopher-lua does
// not remember deletions or how integer keys were interleaved with others,
// so for such tables the order is a deterministic approximation.

const (
	maxBits  = 26
	maxASize = 1 << maxBits
)

type simNode struct {
	key  lua.LValue // nil: free
	dead bool       // the key's value was set to nil
	next int        // -1: none
}

// simOp is one step of a table's history: a key set, or set to nil.
type simOp struct {
	key lua.LValue
	del bool
}

type simTable struct {
	e        *Engine
	array    []bool // presence of t[1..len(array)]
	nodes    []simNode
	dummy    bool // node part is Lua's shared dummy node
	lastFree int
}

// tableHint is the size a table was created with (OP_NEWTABLE).
type tableHint struct{ narray, nhash int }

func ceilLog2(x int) int {
	l := 0
	x--
	for x > 0 {
		x >>= 1
		l++
	}
	return l
}

// int2fb and fb2int are Lua's "floating point byte" for constructor sizes.
func int2fb(x int) int {
	e := 0
	for x >= 16 {
		x = (x + 1) >> 1
		e++
	}
	if x < 8 {
		return x
	}
	return ((e + 1) << 3) | (x - 8)
}

func fb2int(x int) int {
	e := (x >> 3) & 31
	if e == 0 {
		return x
	}
	return ((x & 7) + 8) << (e - 1)
}

func (s *simTable) setNodeVector(size int) {
	if size == 0 {
		s.nodes = []simNode{{next: -1}}
		s.dummy = true
		s.lastFree = 0
		return
	}
	size = 1 << ceilLog2(size)
	s.nodes = make([]simNode, size)
	for i := range s.nodes {
		s.nodes[i].next = -1
	}
	s.dummy = false
	s.lastFree = size
}

func luaStringHash(str string) uint32 {
	l := len(str)
	h := uint32(l)
	step := (l >> 5) + 1
	for l1 := l; l1 >= step; l1 -= step {
		h = h ^ ((h << 5) + (h >> 2) + uint32(str[l1-1]))
	}
	return h
}

func (s *simTable) hashmod(n uint32) int {
	return int(n % uint32((len(s.nodes)-1)|1))
}

func (s *simTable) mainPosition(k lua.LValue) int {
	switch x := k.(type) {
	case lua.LString:
		return int(luaStringHash(string(x)) & uint32(len(s.nodes)-1))
	case lua.LNumber:
		if x == 0 {
			return 0
		}
		b := math.Float64bits(float64(x))
		return s.hashmod(uint32(b) + uint32(b>>32))
	case lua.LBool:
		if x {
			return 1 & (len(s.nodes) - 1)
		}
		return 0
	}
	return s.hashmod(uint32(s.e.objectAddress(k)))
}

// arrayIndex returns k as an index of the array part, or 0.
func arrayIndex(k lua.LValue) int {
	if n, ok := k.(lua.LNumber); ok {
		f := float64(n)
		if f >= 1 && f <= maxASize && f == math.Floor(f) {
			return int(f)
		}
	}
	return 0
}

func (s *simTable) findNode(k lua.LValue) int {
	if s.dummy {
		return -1
	}
	for n := s.mainPosition(k); n >= 0; n = s.nodes[n].next {
		if s.nodes[n].key == k {
			return n
		}
	}
	return -1
}

// set inserts k if it is not there yet.
func (s *simTable) set(k lua.LValue) {
	if i := arrayIndex(k); i > 0 && i <= len(s.array) {
		s.array[i-1] = true
		return
	}
	if n := s.findNode(k); n >= 0 {
		s.nodes[n].dead = false
		return
	}
	s.newKey(k)
}

// del sets k to nil: the key stays in its node, dead.
func (s *simTable) del(k lua.LValue) {
	if i := arrayIndex(k); i > 0 && i <= len(s.array) {
		s.array[i-1] = false
		return
	}
	if n := s.findNode(k); n >= 0 {
		s.nodes[n].dead = true
	}
}

func (s *simTable) live(n int) bool { return s.nodes[n].key != nil && !s.nodes[n].dead }

func (s *simTable) freePos() int {
	for s.lastFree > 0 {
		s.lastFree--
		if s.nodes[s.lastFree].key == nil {
			return s.lastFree
		}
	}
	return -1
}

func (s *simTable) newKey(k lua.LValue) {
	mp := s.mainPosition(k)
	if s.dummy || s.live(mp) {
		n := s.freePos()
		if s.dummy || n < 0 {
			s.rehash(k)
			s.set(k)
			return
		}
		other := s.mainPosition(s.nodes[mp].key)
		if other != mp {
			// the colliding node is out of its main position: move it
			for s.nodes[other].next != mp {
				other = s.nodes[other].next
			}
			s.nodes[other].next = n
			s.nodes[n] = s.nodes[mp]
			s.nodes[mp] = simNode{next: -1}
		} else {
			// the colliding node is in its own main position
			s.nodes[n].next = s.nodes[mp].next
			s.nodes[mp].next = n
			mp = n
		}
	}
	s.nodes[mp].key = k
	s.nodes[mp].dead = false
}

func countInt(k lua.LValue, nums *[maxBits + 1]int) int {
	if i := arrayIndex(k); i > 0 {
		nums[ceilLog2(i)]++
		return 1
	}
	return 0
}

func (s *simTable) rehash(extra lua.LValue) {
	var nums [maxBits + 1]int
	// keys in the array part, by slices (2^(lg-1), 2^lg]
	nasize := 0
	i := 1
	for lg, ttlg := 0, 1; lg <= maxBits; lg, ttlg = lg+1, ttlg*2 {
		lim := ttlg
		if lim > len(s.array) {
			lim = len(s.array)
			if i > lim {
				break
			}
		}
		lc := 0
		for ; i <= lim; i++ {
			if s.array[i-1] {
				lc++
			}
		}
		nums[lg] += lc
		nasize += lc
	}
	total := nasize
	if !s.dummy {
		for i, n := range s.nodes {
			if s.live(i) {
				total++
				nasize += countInt(n.key, &nums)
			}
		}
	}
	nasize += countInt(extra, &nums)
	total++
	// computesizes
	a, na, n := 0, 0, 0
	for i, twotoi := 0, 1; twotoi/2 < nasize; i, twotoi = i+1, twotoi*2 {
		if nums[i] > 0 {
			a += nums[i]
			if a > twotoi/2 {
				n = twotoi
				na = a
			}
		}
	}
	s.resize(n, total-na)
}

func (s *simTable) resize(nasize, nhsize int) {
	oldArray := s.array
	oldNodes, oldDummy := s.nodes, s.dummy
	if nasize > len(oldArray) {
		s.array = append(append([]bool(nil), oldArray...), make([]bool, nasize-len(oldArray))...)
	}
	s.setNodeVector(nhsize)
	if nasize < len(oldArray) {
		s.array = oldArray[:nasize:nasize]
		for i := nasize; i < len(oldArray); i++ {
			if oldArray[i] {
				s.set(lua.LNumber(i + 1))
			}
		}
	}
	if !oldDummy {
		for i := len(oldNodes) - 1; i >= 0; i-- {
			if oldNodes[i].key != nil && !oldNodes[i].dead {
				s.set(oldNodes[i].key)
			}
		}
	}
}

// luaOrder returns the keys of t in the order Lua 5.1's next visits them.
// It charges the work budget by the size of the table when L is not nil.
func (e *Engine) luaOrder(L *lua.LState, t *lua.LTable) []lua.LValue {
	var keys []lua.LValue
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		keys = append(keys, k)
	}
	if L != nil {
		e.charge(L, int64(len(keys))*costOrderKey)
	}
	if len(keys) < 2 {
		return keys
	}
	// a pure sequence 1..n is visited in order
	seq := true
	for i, k := range keys {
		if n, ok := k.(lua.LNumber); !ok || n != lua.LNumber(i+1) {
			seq = false
			break
		}
	}
	if seq {
		return keys
	}
	s := &simTable{e: e}
	b := e.run.builds[t]
	if b == nil && e.sb != nil {
		b = e.sb.builds[t]
	}
	var h tableHint
	if b != nil {
		h = b.hint
	} else {
		h = e.run.hints[t]
	}
	s.array = make([]bool, h.narray)
	s.setNodeVector(h.nhash)
	if b != nil {
		for _, op := range b.ops {
			if op.del {
				s.del(op.key)
			} else {
				s.set(op.key)
			}
		}
	}
	for _, k := range keys {
		s.set(k)
	}
	order := make([]lua.LValue, 0, len(keys))
	for i, ok := range s.array {
		if ok && rawGetInt(t, i+1) != lua.LNil {
			order = append(order, lua.LNumber(i+1))
		}
	}
	if !s.dummy {
		for i, n := range s.nodes {
			if s.live(i) && t.RawGet(n.key) != lua.LNil {
				order = append(order, n.key)
			}
		}
	}
	return order
}

// tableOrder caches the order of a table during a traversal with next.
type tableOrder struct {
	keys []lua.LValue
	pos  map[lua.LValue]int
}

// next is Lua 5.1's next in Lua's order.
func (e *Engine) next(L *lua.LState, t *lua.LTable, k lua.LValue) (lua.LValue, lua.LValue) {
	r := &e.run
	o := r.orders[t]
	if k == lua.LNil || o == nil {
		o = &tableOrder{keys: e.luaOrder(L, t)}
		if len(o.keys) > 1 {
			if r.orders == nil {
				r.orders = make(map[*lua.LTable]*tableOrder)
			}
			r.orders[t] = o
		}
	}
	i := 0
	if k != lua.LNil {
		if o.pos == nil {
			o.pos = make(map[lua.LValue]int, len(o.keys))
			for j, key := range o.keys {
				o.pos[key] = j
			}
		}
		j, ok := o.pos[k]
		if !ok {
			// not in this traversal: start over from a fresh order
			o = &tableOrder{keys: e.luaOrder(L, t)}
			r.orders[t] = o
			o.pos = make(map[lua.LValue]int, len(o.keys))
			for j, key := range o.keys {
				o.pos[key] = j
			}
			if j, ok = o.pos[k]; !ok {
				return lua.LNil, lua.LNil
			}
		}
		i = j + 1
	}
	for ; i < len(o.keys); i++ {
		if v := t.RawGet(o.keys[i]); v != lua.LNil {
			return o.keys[i], v
		}
	}
	return lua.LNil, lua.LNil
}

// objectAddress is the made-up address of a table, function, userdata or
// thread, as tostring shows it.
func (e *Engine) objectAddress(v lua.LValue) uint64 {
	r := &e.run
	if r.ids == nil {
		r.ids = make(map[lua.LValue]uint64)
	}
	id, ok := r.ids[v]
	if !ok {
		r.nextID++
		id = r.nextID
		r.ids[v] = id
	}
	return 0x10000000 + id*0x40
}

// rawGetInt reads t[i] wherever gopher-lua keeps it (integer keys from
// lua.MaxArrayIndex on live in the hash part, where LTable.RawGetInt does
// not look).
func rawGetInt(t *lua.LTable, i int) lua.LValue {
	if i >= 1 && i < lua.MaxArrayIndex {
		return t.RawGetInt(i)
	}
	return t.RawGetH(lua.LNumber(i))
}
