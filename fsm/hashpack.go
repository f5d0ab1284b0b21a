package fsm

import "encoding/binary"

// A small hash is kept packed: its fields and values in insertion order in
// one byte slice, each as a uvarint length then the bytes, stored in the
// value's Str (Value.Hash is nil then). A Redisson lock's hash (one
// "<uuid>:<thread>" field set to a count) so takes one allocation of about
// fifty bytes besides its Value, where a *Hash with its field slice took
// three (240 bytes in all). Past packMaxFields fields or packMaxBytes bytes
// the hash becomes a *Hash and stays one.
//
// Packed bytes are never changed in place: a reply may still hold a value
// sliced from them, so every change writes a new slice (a small hash is a
// few dozen bytes, and Redis's listpack is rewritten on a change too).
//
// Which form a hash is in is not state: replies, snapshots (fields in
// insertion order either way), OBJECT ENCODING (Value.enc) and MEMORY
// USAGE (memusage.go, from the fields) do not depend on it.

const (
	packMaxFields = hashScanMax // a *Hash scans this many before it indexes
	packMaxBytes  = 512
)

// hashRef is a hash value in either form, for the hash commands.
type hashRef struct{ v *Value }

// hash returns v's hash; v is of KindHash.
func (v *Value) hash() hashRef { return hashRef{v} }

// packNext splits the first field and value off packed bytes b.
func packNext(b []byte) (field, value, rest []byte) {
	n, k := binary.Uvarint(b)
	b = b[k:]
	field, b = b[:n:n], b[n:]
	n, k = binary.Uvarint(b)
	b = b[k:]
	return field, b[:n:n], b[n:]
}

// packAppend appends one field and value to packed bytes.
func packAppend(b, field, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(field)))
	b = append(b, field...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

func packEntrySize(field, value []byte) int {
	return uvarintLen(len(field)) + len(field) + uvarintLen(len(value)) + len(value)
}

func uvarintLen(n int) int {
	k := 1
	for n >= 0x80 {
		n >>= 7
		k++
	}
	return k
}

// Len is the number of fields.
func (h hashRef) Len() int {
	if h.v.Hash != nil {
		return h.v.Hash.Len()
	}
	n := 0
	for b := h.v.Str; len(b) > 0; n++ {
		_, _, b = packNext(b)
	}
	return n
}

// Get returns a field's value.
func (h hashRef) Get(field []byte) ([]byte, bool) {
	if h.v.Hash != nil {
		return h.v.Hash.Get(field)
	}
	for b := h.v.Str; len(b) > 0; {
		var f, val []byte
		f, val, b = packNext(b)
		if string(f) == string(field) {
			return val, true
		}
	}
	return nil, false
}

// Each calls fn for every field in insertion order until fn returns false.
func (h hashRef) Each(fn func(field, value []byte) bool) {
	if h.v.Hash != nil {
		h.v.Hash.Each(fn)
		return
	}
	for b := h.v.Str; len(b) > 0; {
		var f, val []byte
		f, val, b = packNext(b)
		if !fn(f, val) {
			return
		}
	}
}

// Set sets a field and reports whether it is new; a new field goes last.
func (h hashRef) Set(field, value []byte) bool {
	v := h.v
	if v.Hash != nil {
		return v.Hash.Set(field, value)
	}
	size, n, found := 0, 0, false
	for b := v.Str; len(b) > 0; n++ {
		var f, val []byte
		f, val, b = packNext(b)
		if string(f) == string(field) {
			found = true
			size += packEntrySize(f, value)
		} else {
			size += packEntrySize(f, val)
		}
	}
	if !found {
		size += packEntrySize(field, value)
		n++
	}
	if n > packMaxFields || size > packMaxBytes {
		big := &Hash{fields: make([]hashField, 0, n)}
		h.Each(func(f, val []byte) bool {
			big.Set(f, val)
			return true
		})
		v.Hash, v.Str = big, nil
		return big.Set(field, value)
	}
	out := make([]byte, 0, size)
	for b := v.Str; len(b) > 0; {
		var f, val []byte
		f, val, b = packNext(b)
		if string(f) == string(field) {
			val = value
		}
		out = packAppend(out, f, val)
	}
	if !found {
		out = packAppend(out, field, value)
	}
	v.Str = out
	return !found
}

// Del removes a field and reports whether it was there; the order of the
// others is kept.
func (h hashRef) Del(field []byte) bool {
	v := h.v
	if v.Hash != nil {
		return v.Hash.Del(field)
	}
	if _, ok := h.Get(field); !ok {
		return false
	}
	out := make([]byte, 0, len(v.Str))
	for b := v.Str; len(b) > 0; {
		var f, val []byte
		f, val, b = packNext(b)
		if string(f) != string(field) {
			out = packAppend(out, f, val)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	v.Str = out
	return true
}

// Clone returns a deep copy as a *Hash.
func (h hashRef) Clone() *Hash {
	n := &Hash{}
	h.Each(func(f, val []byte) bool {
		n.Set(f, val)
		return true
	})
	return n
}
