package fsm

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// A small hash is kept packed: its fields and values in insertion order in
// one byte slice stored in the value's Str (Value.bigHash() is nil then). A
// Redisson lock's hash (one "<client uuid>:<thread id>" field set to a
// count) so takes no allocation of its own: its packed bytes follow its
// name's (put), where a *Hash with its field slice took three (240 bytes
// in all). Past
// packMaxFields fields or packMaxBytes bytes the hash becomes a *Hash and
// stays one.
//
// Each entry is a header, the field and the value:
//
//	uvarint(len(field)<<1 | interned)
//	[uvarint(prefix id)]  if interned: the field's first 36 bytes
//	field bytes           (after the prefix if interned)
//	uvarint(len(value)) value bytes
//
// A field that starts with a UUID and ':' (Redisson's and node-redisson's
// lock owners) stores the UUID as a number in a table of prefixes shared
// by the process (ownerPrefixes): a client's locks all carry its UUID, so
// the table stays small while each lock saves 35 bytes. The table only
// grows, up to maxPrefixes; later UUIDs are stored inline.
//
// Packed bytes are changed in place only while nothing can hold a slice of
// them: a reply (HGET, HGETALL, ...) may hold a value sliced from them
// until its connection has written it, after later commands ran. So a
// change writes a new slice, and marks it as the packing's own (packOwned
// in Value.agg); Get and Each, which hand out slices of the bytes, take
// the mark off. While the mark is on, Set and Del change the bytes in
// place when the result fits in their capacity: a Redisson lock's HINCRBY
// (1 to 0, or to 2) allocates nothing. Callers that only look at the bytes
// during the call and keep nothing (HEXISTS, HINCRBY's old value, sizes)
// use peek and peekEach, which leave the mark. A field whose prefix is
// interned is put together when it is handed out (HGETALL, HKEYS,
// snapshots); lookups compare it in place.
//
// Which form a hash is in, and which prefixes are interned, is not state:
// replies, snapshots (fields in insertion order either way), OBJECT
// ENCODING (Value.enc) and MEMORY USAGE (memusage.go, from the fields) do
// not depend on it.

const (
	packMaxFields = hashScanMax // a *Hash scans this many before it indexes
	packMaxBytes  = 512
	uuidLen       = 36
	maxPrefixes   = 1 << 16
)

// ownerPrefixes is the table of interned UUIDs: append-only, read without
// a lock through list (a slice header that is replaced when one is added;
// what it covers is never changed), so that state machines in other
// goroutines can share it.
var ownerPrefixes struct {
	mu   sync.Mutex
	ids  map[string]uint32
	list atomic.Pointer[[]string]
}

// prefixID returns the id of a UUID-shaped prefix, interning it if there
// is room; false if it is not interned.
func prefixID(p []byte) (uint32, bool) {
	t := &ownerPrefixes
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[string(p)]; ok {
		return id, true
	}
	var list []string
	if l := t.list.Load(); l != nil {
		list = *l
	}
	if len(list) >= maxPrefixes {
		return 0, false
	}
	if t.ids == nil {
		t.ids = make(map[string]uint32)
	}
	s := string(p)
	id := uint32(len(list))
	t.ids[s] = id
	// Readers only read below the length they loaded, so the new name may
	// go into the array's spare room: amortised growth, where copying the
	// whole list for each name made filling the table quadratic.
	list = append(list, s)
	t.list.Store(&list)
	return id, true
}

// prefixByID returns an interned prefix.
func prefixByID(id uint32) string { return (*ownerPrefixes.list.Load())[id] }

// internable reports whether field starts with a UUID (8-4-4-4-12 hex
// digits) and ':'.
func internable(field []byte) bool {
	if len(field) <= uuidLen || field[uuidLen] != ':' {
		return false
	}
	for i, c := range field[:uuidLen] {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// packEntry is one field and value of packed bytes.
type packEntry struct {
	n        int    // the field's length
	interned bool   // the field's first uuidLen bytes are prefix id
	id       uint32 //
	tail     []byte // the field (after the prefix if interned)
	value    []byte
	raw      []byte // the whole entry as encoded
}

// packNext decodes the first entry of packed bytes b.
func packNext(b []byte) (e packEntry, rest []byte) {
	start := b
	h, k := binary.Uvarint(b)
	b = b[k:]
	e.n = int(h >> 1)
	tail := e.n
	if h&1 != 0 {
		id, k := binary.Uvarint(b)
		b = b[k:]
		e.interned, e.id = true, uint32(id)
		tail -= uuidLen
	}
	e.tail, b = b[:tail:tail], b[tail:]
	n, k := binary.Uvarint(b)
	b = b[k:]
	e.value, b = b[:n:n], b[n:]
	e.raw = start[: len(start)-len(b) : len(start)-len(b)]
	return e, b
}

// is reports whether the entry's field is field.
func (e *packEntry) is(field []byte) bool {
	if len(field) != e.n {
		return false
	}
	if !e.interned {
		return string(e.tail) == string(field)
	}
	return string(field[uuidLen:]) == string(e.tail) && string(field[:uuidLen]) == prefixByID(e.id)
}

// field returns the entry's field, put together if its prefix is interned.
func (e *packEntry) field() []byte {
	if !e.interned {
		return e.tail
	}
	f := make([]byte, e.n)
	copy(f[copy(f, prefixByID(e.id)):], e.tail)
	return f
}

// packEncode appends one field and value to packed bytes.
func packEncode(b, field, value []byte) []byte {
	if internable(field) {
		if id, ok := prefixID(field[:uuidLen]); ok {
			b = binary.AppendUvarint(b, uint64(len(field))<<1|1)
			b = binary.AppendUvarint(b, uint64(id))
			b = append(b, field[uuidLen:]...)
			return packValue(b, value)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(field))<<1)
	b = append(b, field...)
	return packValue(b, value)
}

func packValue(b, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// hashRef is a hash value in either form, for the hash commands.
type hashRef struct{ v *Value }

// hash returns v's hash; v is of KindHash.
func (v *Value) hash() hashRef { return hashRef{v} }

// Len is the number of fields.
func (h hashRef) Len() int {
	if h.v.bigHash() != nil {
		return h.v.bigHash().Len()
	}
	n := 0
	for b := h.v.Str; len(b) > 0; n++ {
		_, b = packNext(b)
	}
	return n
}

// packOwned, in a packed hash's Value.agg, marks its bytes as made by
// Set or Del and handed out by nothing since: they may change in place.
// It is a zero-size type, so storing it allocates nothing. Not state: a
// snapshot or a reply does not depend on it.
type packOwned struct{}

// owned reports whether h's packed bytes carry the packOwned mark.
func (h hashRef) owned() bool {
	_, ok := h.v.agg.(packOwned)
	return ok
}

// share takes the packOwned mark off: slices of the bytes are being
// handed out, so they must not change from now on.
func (h hashRef) share() {
	if h.owned() {
		h.v.agg = nil
	}
}

// Get returns a field's value. The caller may keep it (in a reply): the
// bytes will not change.
func (h hashRef) Get(field []byte) ([]byte, bool) {
	if h.v.bigHash() != nil {
		return h.v.bigHash().Get(field)
	}
	h.share()
	return h.peek(field)
}

// peek is Get for a caller that keeps neither the value nor a slice of it
// past its own use during the command: the bytes may change in place
// afterwards.
func (h hashRef) peek(field []byte) ([]byte, bool) {
	if h.v.bigHash() != nil {
		return h.v.bigHash().Get(field)
	}
	for b := h.v.Str; len(b) > 0; {
		var e packEntry
		e, b = packNext(b)
		if e.is(field) {
			return e.value, true
		}
	}
	return nil, false
}

// Each calls fn for every field in insertion order until fn returns false.
// fn may keep the fields and values (in a reply): the bytes will not
// change.
func (h hashRef) Each(fn func(field, value []byte) bool) {
	if h.v.bigHash() == nil {
		h.share()
	}
	h.peekEach(fn)
}

// peekEach is Each for a fn that keeps no field or value past its call
// (sizes, encodings, copies).
func (h hashRef) peekEach(fn func(field, value []byte) bool) {
	if h.v.bigHash() != nil {
		h.v.bigHash().Each(fn)
		return
	}
	for b := h.v.Str; len(b) > 0; {
		var e packEntry
		e, b = packNext(b)
		if !fn(e.field(), e.value) {
			return
		}
	}
}

// Set sets a field and reports whether it is new; a new field goes last.
// value is copied.
func (h hashRef) Set(field, value []byte) bool {
	v := h.v
	if v.bigHash() != nil {
		return v.bigHash().Set(field, value)
	}
	n, found, size := 0, false, len(v.Str)
	at, oldPart := 0, 0 // where the found field's value (its length first) is, and its bytes
	for b := v.Str; len(b) > 0; n++ {
		var e packEntry
		e, b = packNext(b)
		if e.is(field) {
			found = true
			oldPart = uvarintLen(len(e.value)) + len(e.value)
			at = len(v.Str) - len(b) - oldPart
			size += uvarintLen(len(value)) + len(value) - oldPart
		}
	}
	var scratch [96]byte
	entry := scratch[:0]
	if !found {
		n++
		entry = packEncode(entry, field, value)
		size += len(entry)
	}
	if n > packMaxFields || size > packMaxBytes {
		big := &Hash{fields: make([]hashField, 0, n)}
		h.peekEach(func(f, val []byte) bool {
			big.Set(f, val) // copies
			return true
		})
		v.agg, v.Str = big, nil
		return big.Set(field, value)
	}
	if h.owned() && size <= cap(v.Str) && keepsCap(size, cap(v.Str)) {
		// Nothing holds a slice of the bytes: change them in place.
		if !found {
			v.Str = append(v.Str, entry...)
			return true
		}
		b := v.Str[:size]
		newPart := uvarintLen(len(value)) + len(value)
		copy(b[at+newPart:], v.Str[at+oldPart:]) // the entries after it
		k := binary.PutUvarint(b[at:], uint64(len(value)))
		copy(b[at+k:], value)
		v.Str = b
		return false
	}
	out := make([]byte, 0, size)
	for b := v.Str; len(b) > 0; {
		var e packEntry
		e, b = packNext(b)
		if e.is(field) {
			out = packValue(append(out, e.raw[:len(e.raw)-len(e.value)-uvarintLen(len(e.value))]...), value)
		} else {
			out = append(out, e.raw...)
		}
	}
	out = append(out, entry...)
	v.Str, v.agg = out, packOwned{}
	return !found
}

// keepsCap reports whether packed bytes of size may stay in place in an
// allocation of capacity c: a hash that shrank to under half of it is
// copied out at its size instead, so that a lock's few bytes do not keep
// the room a larger hash once took (up to packMaxBytes a key, which the
// logical size does not see).
func keepsCap(size, c int) bool { return size*2 >= c }

func uvarintLen(n int) int {
	k := 1
	for n >= 0x80 {
		n >>= 7
		k++
	}
	return k
}

// Del removes a field and reports whether it was there; the order of the
// others is kept.
func (h hashRef) Del(field []byte) bool {
	v := h.v
	if v.bigHash() != nil {
		return v.bigHash().Del(field)
	}
	at, drop := 0, 0
	for b := v.Str; len(b) > 0; {
		var e packEntry
		e, b = packNext(b)
		if e.is(field) {
			at, drop = len(v.Str)-len(b)-len(e.raw), len(e.raw)
			break
		}
	}
	if drop == 0 {
		return false
	}
	if drop == len(v.Str) {
		v.Str, v.agg = nil, nil
		return true
	}
	if h.owned() && keepsCap(len(v.Str)-drop, cap(v.Str)) {
		// Nothing holds a slice of the bytes: close the gap in place.
		n := copy(v.Str[at:], v.Str[at+drop:])
		v.Str = v.Str[:at+n]
		return true
	}
	out := make([]byte, 0, len(v.Str)-drop)
	out = append(append(out, v.Str[:at]...), v.Str[at+drop:]...)
	v.Str, v.agg = out, packOwned{}
	return true
}

// Clone returns a deep copy as a *Hash.
func (h hashRef) Clone() *Hash {
	n := &Hash{}
	h.peekEach(func(f, val []byte) bool {
		n.Set(f, val) // copies
		return true
	})
	return n
}
