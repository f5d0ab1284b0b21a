package fsm

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestKeyTableModel checks the key table against a Go map through
// growth, splits and deletions (which shift entries back): every key
// found, no other, the count right, iteration complete.
func TestKeyTableModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newKeyTable()
	model := map[string]*Value{}
	check := func(step int) {
		if tab.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, tab.len(), len(model))
		}
		seen := 0
		for k, v := range tab.all() {
			if model[k] != v || v.name != k {
				t.Fatalf("step %d: iteration gave %q -> %p, model %p", step, k, v, model[k])
			}
			seen++
		}
		if seen != len(model) {
			t.Fatalf("step %d: iteration gave %d keys, want %d", step, seen, len(model))
		}
		names := 0
		for k := range model {
			names += len(k)
		}
		if tab.names != names {
			t.Fatalf("step %d: names %d bytes, want %d", step, tab.names, names)
		}
	}
	const space = 60000
	for step := range 400000 {
		k := "key:" + strconv.Itoa(rng.IntN(space))
		switch op := rng.IntN(10); {
		case op < 6 && step < 250000 || op < 3:
			v := &Value{name: k}
			tab.set(v)
			model[k] = v
		case op < 9:
			_, had := model[k]
			if got := tab.del(k); got != had {
				t.Fatalf("step %d: del(%s) = %v, want %v", step, k, got, had)
			}
			delete(model, k)
		default:
			if got, want := tab.get(k), model[k]; got != want {
				t.Fatalf("step %d: get(%s) = %p, want %p", step, k, got, want)
			}
			if got, want := tab.getBytes([]byte(k)), model[k]; got != want {
				t.Fatalf("step %d: getBytes(%s) = %p, want %p", step, k, got, want)
			}
		}
		if step%50000 == 0 {
			check(step)
		}
	}
	check(-1)
	for k, v := range model {
		if tab.get(k) != v {
			t.Fatalf("get(%s) lost", k)
		}
	}
	if tab.depth == 0 {
		t.Errorf("the table never split (depth 0 with up to %d keys)", space)
	}
}

// BenchmarkKeyTableGet: a hit and a miss among 1,000,000 keys.
func BenchmarkKeyTableGet(b *testing.B) {
	tab := newKeyTable()
	const n = 1000000
	keys := make([]string, n)
	for i := range n {
		keys[i] = "lock:entity:" + strconv.Itoa(i)
		tab.set(&Value{name: keys[i]})
	}
	i := 0
	for b.Loop() {
		if tab.get(keys[i%n]) == nil || tab.getBytes([]byte("absent:"+keys[i%n][5:])) != nil {
			b.Fatal("wrong answer")
		}
		i += 7919
	}
}

// TestKeyTableReserve: a reserved table holds its keys without growing
// and finds them all, and keeps growing past the reservation.
func TestKeyTableReserve(t *testing.T) {
	for _, n := range []int{3, 100, 2560, 2561, 50000} {
		tab := newKeyTable()
		tab.reserve(n)
		parts, depth := len(tab.dir), tab.depth
		for i := range n {
			tab.set(&Value{name: strconv.Itoa(i)})
		}
		if len(tab.dir) != parts || tab.depth != depth {
			t.Errorf("%d keys: the directory grew from %d to %d parts", n, parts, len(tab.dir))
		}
		for i := range 2 * n {
			tab.set(&Value{name: strconv.Itoa(i)})
		}
		for i := range 2 * n {
			if v := tab.get(strconv.Itoa(i)); v == nil {
				t.Fatalf("%d keys: %d lost", n, i)
			}
		}
		if tab.len() != 2*n {
			t.Errorf("%d keys: len %d", n, tab.len())
		}
	}
}

// TestKeyTableChunks: a walk's chunks (keyTable.chunk) yield every key
// present throughout exactly once, however the table changes between
// chunks: keys added (parts double and split, the directory doubles) and
// removed (entries shift back), as between a walk's steps. Walk after
// walk, the table grows through rounds of splits, so that some chunks
// meet parts that span several directory entries.
func TestKeyTableChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	tb := newKeyTable()
	stable := make([]string, 12000)
	for i := range stable {
		stable[i] = "stable:" + strconv.Itoa(i)
		tb.set(&Value{name: stable[i]})
	}
	var churn []string
	spanned := 0
	for walk := 0; walk < 120; walk++ {
		seen := make(map[string]int, tb.len())
		pos, done := uint64(0), false
		for steps := 0; !done; steps++ {
			if steps > 100000 {
				t.Fatal("the chunks never ended")
			}
			if tb.depth > 0 && tb.dir[pos>>(64-tb.depth)].depth < tb.depth {
				spanned++
			}
			pos, done = tb.chunk(pos, 1, func(k string, _ *Value) { seen[k]++ })
			for range 40 { // churn between chunks
				if len(churn) > 0 && r.IntN(4) == 0 {
					i := r.IntN(len(churn))
					tb.del(churn[i])
					churn[i] = churn[len(churn)-1]
					churn = churn[:len(churn)-1]
					continue
				}
				k := "churn:" + strconv.FormatUint(r.Uint64(), 10)
				tb.set(&Value{name: k})
				churn = append(churn, k)
			}
		}
		for _, k := range stable {
			if seen[k] != 1 {
				t.Fatalf("walk %d: %s yielded %d times", walk, k, seen[k])
			}
		}
	}
	if spanned == 0 {
		t.Fatal("no chunk began at a part spanning several directory entries: the test proves little")
	}
	t.Logf("%d keys, depth %d; %d chunks began at a part spanning several entries", tb.len(), tb.depth, spanned)
}
