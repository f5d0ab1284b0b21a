package fsm

import (
	"strconv"
	"strings"
	"testing"
)

// TestHashPackedModel checks a hash against a plain model from empty,
// packed, through the change to a *Hash (by field count and by size),
// with updates and deletes: lengths, values and insertion order.
func TestHashPackedModel(t *testing.T) {
	for _, peek := range []bool{false, true} {
		t.Run("peek="+strconv.FormatBool(peek), func(t *testing.T) { hashPackedModel(t, peek) })
	}
}

// hashPackedModel is TestHashPackedModel; with peek it reads the hash
// back only through peek and peekEach, which leave the bytes the hash's
// own, so that Set and Del change them in place.
func hashPackedModel(t *testing.T, peek bool) {
	for _, long := range []int{1, 70} { // 70: a few fields pass packMaxBytes
		v := newHashValue()
		h := v.hash()
		var order []string
		model := map[string]string{}
		wasPacked, owned := 0, 0
		each, get := h.Each, h.Get
		if peek {
			each, get = h.peekEach, h.peek
		}
		for i := range 400 {
			f := "f" + strconv.Itoa(i*7%23)
			if i%3 == 0 { // a lock owner's field: its UUID is interned
				f = lockOwnerUUID(i%4) + ":" + f
			}
			switch i % 5 {
			case 3:
				_, had := model[f]
				if got := h.Del([]byte(f)); got != had {
					t.Fatalf("long %d step %d: Del(%s) = %v, want %v", long, i, f, got, had)
				}
				if had {
					delete(model, f)
					for j, o := range order {
						if o == f {
							order = append(order[:j], order[j+1:]...)
							break
						}
					}
				}
			default:
				val := strings.Repeat(strconv.Itoa(i), long)
				_, had := model[f]
				if got := h.Set([]byte(f), []byte(val)); got == had {
					t.Fatalf("long %d step %d: Set(%s) = %v, had %v", long, i, f, got, had)
				}
				if !had {
					order = append(order, f)
				}
				model[f] = val
			}
			if v.bigHash() == nil {
				wasPacked++
			}
			if h.Len() != len(model) {
				t.Fatalf("long %d step %d: Len %d, want %d", long, i, h.Len(), len(model))
			}
			var got []string
			each(func(f, val []byte) bool {
				if model[string(f)] != string(val) {
					t.Fatalf("long %d step %d: %s = %q, want %q", long, i, f, val, model[string(f)])
				}
				got = append(got, string(f))
				return true
			})
			if strings.Join(got, ",") != strings.Join(order, ",") {
				t.Fatalf("long %d step %d: order %v, want %v", long, i, got, order)
			}
			for f, want := range model {
				if val, ok := get([]byte(f)); !ok || string(val) != want {
					t.Fatalf("long %d step %d: Get(%s) = %q %v, want %q", long, i, f, val, ok, want)
				}
			}
			if h.owned() {
				owned++
			}
		}
		if wasPacked == 0 || v.bigHash() == nil {
			t.Errorf("long %d: packed for %d steps, big at the end: %v; want both forms", long, wasPacked, v.bigHash() != nil)
		}
		// Read back through peek, every packed step keeps the bytes the
		// hash's own (so the in-place paths ran); through Get, none does.
		if peek && owned != wasPacked || !peek && owned != 0 {
			t.Errorf("long %d, peek %v: owned after %d of %d packed steps", long, peek, owned, wasPacked)
		}
	}
}

// TestHashPackedCopyOnWrite: a value handed out by Get (as HGET's reply
// holds it until it is written) is not changed by later writes.
func TestHashPackedCopyOnWrite(t *testing.T) {
	v := newHashValue()
	h := v.hash()
	h.Set([]byte("owner:1"), []byte("1"))
	h.Set([]byte("other"), []byte("abc"))
	got, _ := h.Get([]byte("owner:1"))
	other, _ := h.Get([]byte("other"))
	h.Set([]byte("owner:1"), []byte("2"))
	h.Del([]byte("other"))
	h.Set([]byte("x"), []byte("zzz"))
	if string(got) != "1" || string(other) != "abc" {
		t.Errorf("held values changed to %q and %q", got, other)
	}
	if v.bigHash() != nil {
		t.Error("a three-field hash is not packed")
	}
}

// TestHashPackedInPlace: while nothing has handed out slices of a packed
// hash's bytes, a change that fits (a Redisson lock's HINCRBY, 1 to 0 or
// to 2) is made in place, without an allocation; once Get or Each handed
// a slice out, the next change copies, and what was handed out keeps its
// bytes.
func TestHashPackedInPlace(t *testing.T) {
	field := []byte("b4e7c0a2-1d2c-4b8e-9f3a-7c6d5e4f3a2b:57")
	v := newHashValue()
	h := v.hash()
	h.Set([]byte("mode"), []byte("write"))
	h.Set(field, []byte("1"))
	h.Set([]byte("z"), []byte("last"))
	if allocs := testing.AllocsPerRun(100, func() {
		if _, ok := h.peek(field); !ok {
			t.Fatal("field lost")
		}
		h.Set(field, []byte("2"))
		h.Set(field, []byte("1"))
	}); allocs != 0 {
		t.Errorf("a same-length change of a field takes %v allocations, want 0", allocs)
	}
	for _, hand := range []struct {
		name, want string
		out        func() []byte
	}{
		{"Get", "1", func() []byte { b, _ := h.Get(field); return b }},
		{"Each", "last", func() []byte {
			var b []byte
			h.Each(func(f, val []byte) bool {
				if string(f) == "z" {
					b = val
				}
				return true
			})
			return b
		}},
	} {
		want := hand.want
		allocs := testing.AllocsPerRun(10, func() {
			held := hand.out()
			if string(held) != want {
				t.Fatalf("%s handed out %q, want %q", hand.name, held, want)
			}
			if h.owned() {
				t.Fatalf("%s handed out a value and left the bytes marked as the hash's own", hand.name)
			}
			h.Set(field, []byte("7")) // copies: held may point into the bytes
			h.Set([]byte("z"), []byte("LAST"))
			h.Del([]byte("mode"))
			h.Set([]byte("mode"), []byte("write"))
			if string(held) != want {
				t.Fatalf("%s: a held value changed from %q to %q", hand.name, want, held)
			}
			h.Set([]byte("z"), []byte("last"))
			h.Set(field, []byte("1"))
		})
		if allocs < 1 {
			t.Errorf("%s: the changes after a hand-out took %v allocations: they wrote in place", hand.name, allocs)
		}
	}
	// Longer and shorter values, deletes and new fields, in place.
	h.Set(field, []byte("12345"))
	h.Set([]byte("z"), []byte("x"))
	h.Del([]byte("mode"))
	h.Set([]byte("n"), []byte("new"))
	var got []string
	h.peekEach(func(f, val []byte) bool {
		got = append(got, string(f)+"="+string(val))
		return true
	})
	if want := string(field) + "=12345,z=x,n=new"; strings.Join(got, ",") != want {
		t.Errorf("after changes in place: %s, want %s", strings.Join(got, ","), want)
	}
	if !h.owned() {
		t.Error("peek and peekEach took the bytes' mark off")
	}
}

// TestHashPackedShrinkGivesRoomBack: a packed hash that shrinks to under
// half of its allocation, by a delete or a shorter value, is copied out
// at its size instead of keeping the room (a lock's 4 bytes kept 412).
func TestHashPackedShrinkGivesRoomBack(t *testing.T) {
	big := []byte(strings.Repeat("v", 200))
	for _, shrink := range []struct {
		name string
		do   func(h hashRef)
	}{
		{"Del", func(h hashRef) { h.Del([]byte("a")); h.Del([]byte("b")) }},
		{"Set", func(h hashRef) { h.Set([]byte("a"), []byte("1")); h.Set([]byte("b"), []byte("2")) }},
	} {
		v := newHashValue()
		h := v.hash()
		h.Set([]byte("a"), big)
		h.Set([]byte("b"), big)
		h.Set([]byte("c"), []byte("1"))
		if !h.owned() {
			t.Fatal("the bytes Set made are not marked as the hash's own")
		}
		shrink.do(h)
		if len(v.Str)*2 < cap(v.Str) {
			t.Errorf("%s: %d bytes keep an allocation of %d", shrink.name, len(v.Str), cap(v.Str))
		}
		h.Set([]byte("c"), []byte("2"))
		if got, _ := h.peek([]byte("c")); string(got) != "2" {
			t.Errorf("%s: c = %q after the shrink, want 2", shrink.name, got)
		}
	}
}

var packSink *Value

// TestHashPackedLockSize: a Redisson lock's hash is one allocation of its
// packed bytes besides the Value.
func TestHashPackedLockSize(t *testing.T) {
	field := []byte("b4e7c0a2-1d2c-4b8e-9f3a-7c6d5e4f3a2b:57")
	allocs := testing.AllocsPerRun(100, func() {
		v := newHashValue()
		v.hash().Set(field, []byte("1"))
		packSink = v
	})
	if packed := len(packSink.Str); packed > 8 {
		t.Errorf("a lock's hash is %d bytes packed, want at most 8 (the UUID interned)", packed)
	}
	if allocs != 2 {
		t.Errorf("a one-field hash value takes %v allocations, want 2", allocs)
	}
}

func lockOwnerUUID(i int) string {
	return "b4e7c0a2-1d2c-4B8E-9f3a-7c6d5e4f3a" + strconv.Itoa(10+i)
}

// TestHashPackedInterned: fields that start with a UUID share it through
// the prefix table; a hash of such fields gives them back whole, and a
// field that differs from one in the UUID only is another field.
func TestHashPackedInterned(t *testing.T) {
	v := newHashValue()
	h := v.hash()
	for i := range 4 {
		h.Set([]byte(lockOwnerUUID(i)+":"+strconv.Itoa(i)), []byte(strconv.Itoa(i)))
	}
	h.Set([]byte("not-a-uuid-but-36-bytes-long-xxxxxxx:1"), []byte("x"))
	h.Set([]byte("b4e7c0a2-1d2c-4b8e-9f3a-7c6d5e4f3a10:0"), []byte("lower case, another field"))
	if len(v.Str) > 5*8+60+30 {
		t.Errorf("packed size %d: UUIDs not interned", len(v.Str))
	}
	var got []string
	h.Each(func(f, val []byte) bool {
		got = append(got, string(f)+"="+string(val))
		return true
	})
	want := []string{
		lockOwnerUUID(0) + ":0=0", lockOwnerUUID(1) + ":1=1", lockOwnerUUID(2) + ":2=2", lockOwnerUUID(3) + ":3=3",
		"not-a-uuid-but-36-bytes-long-xxxxxxx:1=x", "b4e7c0a2-1d2c-4b8e-9f3a-7c6d5e4f3a10:0=lower case, another field",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("fields\n%q\nwant\n%q", got, want)
	}
	if val, ok := h.Get([]byte(lockOwnerUUID(2) + ":2")); !ok || string(val) != "2" {
		t.Errorf("Get = %q %v", val, ok)
	}
	if _, ok := h.Get([]byte(lockOwnerUUID(2) + ":3")); ok {
		t.Error("Get found a field with another thread")
	}
	if _, ok := h.Get([]byte("c4e7c0a2-1d2c-4B8E-9f3a-7c6d5e4f3a12:2")); ok {
		t.Error("Get found a field with another UUID")
	}
}
