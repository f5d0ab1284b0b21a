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
	for _, long := range []int{1, 70} { // 70: a few fields pass packMaxBytes
		v := newHashValue()
		h := v.hash()
		var order []string
		model := map[string]string{}
		wasPacked := 0
		for i := range 400 {
			f := "f" + strconv.Itoa(i*7%23)
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
			if v.Hash == nil {
				wasPacked++
			}
			if h.Len() != len(model) {
				t.Fatalf("long %d step %d: Len %d, want %d", long, i, h.Len(), len(model))
			}
			var got []string
			h.Each(func(f, val []byte) bool {
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
				if val, ok := h.Get([]byte(f)); !ok || string(val) != want {
					t.Fatalf("long %d step %d: Get(%s) = %q %v, want %q", long, i, f, val, ok, want)
				}
			}
		}
		if wasPacked == 0 || v.Hash == nil {
			t.Errorf("long %d: packed for %d steps, big at the end: %v; want both forms", long, wasPacked, v.Hash != nil)
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
	if v.Hash != nil {
		t.Error("a three-field hash is not packed")
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
	if allocs != 2 {
		t.Errorf("a one-field hash value takes %v allocations, want 2", allocs)
	}
}
