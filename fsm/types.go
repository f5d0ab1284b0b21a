package fsm

// Hash is a hash value. Fields keep insertion order (as Redis's small
// listpack-encoded hashes do), which makes HGETALL deterministic.
type Hash struct {
	index  map[string]int // field -> position in fields
	fields []hashField
}

type hashField struct {
	name, value []byte
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{index: make(map[string]int)} }

// Len is the number of fields.
func (h *Hash) Len() int { return len(h.fields) }

// Get returns a field's value.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	i, ok := h.index[string(field)]
	if !ok {
		return nil, false
	}
	return h.fields[i].value, true
}

// Set sets a field and reports whether it is new.
func (h *Hash) Set(field, value []byte) bool {
	if i, ok := h.index[string(field)]; ok {
		h.fields[i].value = append([]byte(nil), value...)
		return false
	}
	h.index[string(field)] = len(h.fields)
	h.fields = append(h.fields, hashField{append([]byte(nil), field...), append([]byte(nil), value...)})
	return true
}

// Del removes a field and reports whether it was there; the order of the
// others is kept.
func (h *Hash) Del(field []byte) bool {
	i, ok := h.index[string(field)]
	if !ok {
		return false
	}
	delete(h.index, string(field))
	copy(h.fields[i:], h.fields[i+1:])
	h.fields[len(h.fields)-1] = hashField{}
	h.fields = h.fields[:len(h.fields)-1]
	for j := i; j < len(h.fields); j++ {
		h.index[string(h.fields[j].name)] = j
	}
	return true
}

// Each calls fn for every field in order until fn returns false.
func (h *Hash) Each(fn func(field, value []byte) bool) {
	for _, f := range h.fields {
		if !fn(f.name, f.value) {
			return
		}
	}
}

// List, Set and ZSet: see their command files.
type List struct{ items [][]byte }

// Len is the number of elements.
func (l *List) Len() int { return len(l.items) }

// Set is a set value.
type Set struct{ members map[string]struct{} }

// Len is the number of members.
func (s *Set) Len() int { return len(s.members) }

// ZSet is a sorted set value.
type ZSet struct{ scores map[string]float64 }

// Len is the number of members.
func (z *ZSet) Len() int { return len(z.scores) }

func (l *List) encode(e *encoder) {
	e.uvarint(uint64(len(l.items)))
	for _, it := range l.items {
		e.bytes(it)
	}
}

func decodeList(d *decoder) *List {
	l := &List{}
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		l.items = append(l.items, d.bytes())
	}
	return l
}

func (s *Set) encode(e *encoder)  { panic("todo") }
func decodeSet(d *decoder) *Set   { panic("todo") }
func (z *ZSet) encode(e *encoder) { panic("todo") }
func decodeZSet(d *decoder) *ZSet { panic("todo") }
