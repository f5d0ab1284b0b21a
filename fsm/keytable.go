package fsm

import (
	"hash/maphash"
	"iter"
)

// keyTable is a database's keys: a hash table of *Value found by the
// value's own name (Value.name), so that a key costs a pointer and a
// 16-bit tag in a slot array, where map[string]*Value kept a 16-byte
// string header and the pointer in slots of 25 bytes (issue 19: with
// 500,000 keys, about 50 bytes a key, the largest cost after the Value
// itself).
//
// It is extendible hashing over small open-addressing parts: the top bits
// of a key's hash pick a part through a directory, and a part is a
// power-of-two array of slots probed linearly from the hash's low bits,
// each slot with a tag (tagOf: the hash's low bits and three more) that is
// compared before the value is looked at, and that gives an entry's home
// when entries move (a deletion, a part doubling) without hashing again.
// A part doubles while it is smaller than partMax and splits in two by
// the next hash bit after that, so growing never rehashes more than one
// part (partMax slots) at a time: no pause that grows with the table, as
// Go's own maps avoid one. Deletion shifts the following entries back
// (no tombstones).
//
// Iteration order depends on the process's hash seed, as a Go map's does:
// nothing may depend on it (replies and snapshots sort, as before).
type keyTable struct {
	seed  maphash.Seed
	dir   []*keyPart // 1<<depth entries; a part appears 1<<(depth-part.depth) times
	depth uint
	n     int
	names int // bytes of the keys' names, for a walk's estimate (walk.go)
}

type keyPart struct {
	depth uint // how many top hash bits its keys share
	tags  []uint16
	vals  []*Value
	n     int
}

const (
	partMin = 8
	partMax = 4096
)

func newKeyTable() *keyTable {
	return &keyTable{seed: maphash.MakeSeed(), dir: []*keyPart{newKeyPart(0, partMin)}}
}

// reserve makes an empty table ready for about n keys, so that filling it
// (a restore) does not grow its parts one doubling at a time.
func (t *keyTable) reserve(n int) {
	if t.n != 0 || n <= partMin {
		return
	}
	const fill = partMax * 5 / 8 // keys a part starts with, room to spare
	if n <= fill {
		size := partMin
		for size*5/8 < n {
			size *= 2
		}
		t.dir = []*keyPart{newKeyPart(0, size)}
		return
	}
	depth := uint(0)
	for n>>depth > fill {
		depth++
	}
	t.depth = depth
	t.dir = make([]*keyPart, 1<<depth)
	for i := range t.dir {
		t.dir[i] = newKeyPart(depth, partMax)
	}
}

func newKeyPart(depth uint, size int) *keyPart {
	return &keyPart{depth: depth, tags: make([]uint16, size), vals: make([]*Value, size)}
}

func (t *keyTable) hash(key string) uint64 { return maphash.String(t.seed, key) }

func (t *keyTable) part(h uint64) *keyPart {
	if t.depth == 0 {
		return t.dir[0]
	}
	return t.dir[h>>(64-t.depth)]
}

// tagOf is what a slot keeps of a key's hash: its low 12 bits (the key's
// home slot in a part of any size up to partMax, so that moving entries
// never hashes their keys again), three more bits, and the top bit set
// on a used slot.
func tagOf(h uint64) uint16 { return uint16(h)&(partMax-1) | uint16(h>>32)&0x7000 | 0x8000 }

// home is a used slot's home in a part of size mask+1.
func home(tag uint16, mask int) int { return int(tag) & mask }

// len is the number of keys.
func (t *keyTable) len() int { return t.n }

// get returns the value stored under key, or nil.
func (t *keyTable) get(key string) *Value {
	h := t.hash(key)
	p := t.part(h)
	tag := tagOf(h)
	mask := len(p.tags) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch p.tags[i] {
		case 0:
			return nil
		case tag:
			if v := p.vals[i]; v.name == key {
				return v
			}
		}
	}
}

// getBytes is get for a key given as bytes (no string is made).
func (t *keyTable) getBytes(key []byte) *Value {
	h := maphash.Bytes(t.seed, key)
	p := t.part(h)
	tag := tagOf(h)
	mask := len(p.tags) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch p.tags[i] {
		case 0:
			return nil
		case tag:
			if v := p.vals[i]; v.name == string(key) {
				return v
			}
		}
	}
}

// set stores v under its name (v.name), replacing the value there.
func (t *keyTable) set(v *Value) {
	h := t.hash(v.name)
	p := t.part(h)
	tag := tagOf(h)
	mask := len(p.tags) - 1
	i := int(h) & mask
	for ; p.tags[i] != 0; i = (i + 1) & mask {
		if p.tags[i] == tag && p.vals[i].name == v.name {
			p.vals[i] = v
			return
		}
	}
	p.tags[i], p.vals[i] = tag, v
	p.n++
	t.n++
	t.names += len(v.name)
	if p.n*8 > len(p.tags)*7 { // more than 7/8 full
		t.grow(p, h)
	}
}

// del removes key; it reports whether it was there.
func (t *keyTable) del(key string) bool {
	h := t.hash(key)
	p := t.part(h)
	tag := tagOf(h)
	mask := len(p.tags) - 1
	i := int(h) & mask
	for {
		switch p.tags[i] {
		case 0:
			return false
		case tag:
			if p.vals[i].name == key {
				p.remove(i)
				t.n--
				t.names -= len(key)
				return true
			}
		}
		i = (i + 1) & mask
	}
}

// remove empties slot i and shifts back the entries after it that would
// no longer be found past the gap.
func (p *keyPart) remove(i int) {
	mask := len(p.tags) - 1
	p.n--
	for j := (i + 1) & mask; p.tags[j] != 0; j = (j + 1) & mask {
		home := home(p.tags[j], mask)
		// j's entry may move to i if its home is not in (i, j]
		// (cyclically).
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			p.tags[i], p.vals[i] = p.tags[j], p.vals[j]
			i = j
		}
	}
	p.tags[i], p.vals[i] = 0, nil
}

// grow doubles part p, or past partMax splits it in two by the next bit
// of the hash (doubling the directory when p uses all its bits).
func (t *keyTable) grow(p *keyPart, h uint64) {
	if len(p.tags) < partMax {
		np := newKeyPart(p.depth, 2*len(p.tags))
		np.n = p.n
		for i, tag := range p.tags {
			if tag != 0 {
				np.insertTag(tag, p.vals[i])
			}
		}
		t.replace(p, np, np)
		return
	}
	if p.depth == t.depth {
		dir := make([]*keyPart, 2*len(t.dir))
		for i, q := range t.dir {
			dir[2*i], dir[2*i+1] = q, q
		}
		t.dir, t.depth = dir, t.depth+1
	}
	lo, hi := newKeyPart(p.depth+1, partMax), newKeyPart(p.depth+1, partMax)
	bit := uint64(1) << (63 - p.depth)
	p.each(func(v *Value) {
		vh := t.hash(v.name)
		if vh&bit == 0 {
			lo.insert(vh, v)
			lo.n++
		} else {
			hi.insert(vh, v)
			hi.n++
		}
	})
	t.replace(p, lo, hi)
}

// replace points the directory entries of p at lo (the half whose next
// hash bit is 0) and hi.
func (t *keyTable) replace(p, lo, hi *keyPart) {
	if t.depth == 0 {
		t.dir[0] = lo
		return
	}
	span := 1 << (t.depth - p.depth) // entries p had
	for i := 0; i < len(t.dir); i += span {
		if t.dir[i] != p {
			continue
		}
		for j := range span {
			if j < span/2 || lo == hi {
				t.dir[i+j] = lo
			} else {
				t.dir[i+j] = hi
			}
		}
		return
	}
}

// insert puts v in the first free slot from its hash (not counted).
func (p *keyPart) insert(h uint64, v *Value) { p.insertTag(tagOf(h), v) }

func (p *keyPart) insertTag(tag uint16, v *Value) {
	mask := len(p.tags) - 1
	i := home(tag, mask)
	for p.tags[i] != 0 {
		i = (i + 1) & mask
	}
	p.tags[i], p.vals[i] = tag, v
}

func (p *keyPart) each(fn func(v *Value)) {
	for i, tag := range p.tags {
		if tag != 0 {
			fn(p.vals[i])
		}
	}
}

// all yields every key and value. The table must not change during the
// iteration.
func (t *keyTable) all() iter.Seq2[string, *Value] {
	return func(yield func(string, *Value) bool) {
		for i, p := range t.dir {
			if i > 0 && t.dir[i-1] == p {
				continue // a part spans neighbouring directory entries
			}
			for j, tag := range p.tags {
				if tag != 0 && !yield(p.vals[j].name, p.vals[j]) {
					return
				}
			}
		}
	}
}

// chunk yields every key whose hash lies in the part that holds hash
// position from, and in the parts after it in hash order, whole parts at
// a time, until at least min keys are yielded; it returns the position
// to go on from, and done once the last part was yielded. A walk (walk.go)
// takes the table in such chunks with the lock free in between: the
// table may change between calls (a part doubles or splits, the directory
// doubles, a deletion shifts entries back) but a part's keys are taken
// at once and the position is a hash, not a slot, so a key present
// throughout is yielded exactly once.
func (t *keyTable) chunk(from uint64, min int, yield func(string, *Value)) (next uint64, done bool) {
	n := 0
	for {
		var (
			p   *keyPart
			end uint64 // the first hash after p's range; 0: the end of the table
		)
		if t.depth == 0 {
			p, end = t.dir[0], 0
		} else {
			i := from >> (64 - t.depth)
			p = t.dir[i]
			span := uint64(1) << (t.depth - p.depth)
			start := i &^ (span - 1)
			end = (start + span) << (64 - t.depth) // 0 when the range ends the table
		}
		for j, tag := range p.tags {
			if tag != 0 {
				yield(p.vals[j].name, p.vals[j])
				n++
			}
		}
		if end == 0 {
			return 0, true
		}
		from = end
		if n >= min {
			return from, false
		}
	}
}
