package fsm

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// scanOracle is SCAN without an index: hash every key, sort, cut after
// count keys (keeping equal hashes together); expired keys are examined
// but not returned.
func scanOracle(ks *keyspace, now int64, cursor uint64, count int) (uint64, []string) {
	var all []scanEntry
	for k := range ks.keys.all() {
		if h := scanHash(k); h >= cursor {
			all = append(all, scanEntry{h, k})
		}
	}
	slices.SortFunc(all, compareScan)
	next := uint64(0)
	if len(all) > count {
		n := count
		for n < len(all) && all[n].hash == all[n-1].hash {
			n++
		}
		if n < len(all) {
			next = all[n].hash
		}
		all = all[:n]
	}
	out := []string{}
	for _, e := range all {
		if !ks.keys.get(e.key).expired(now) {
			out = append(out, e.key)
		}
	}
	return next, out
}

// TestScanIndexAgainstOracle: under random creations, overwrites,
// deletions, expiries, flushes and bursts of churn with no SCAN (which
// fold the index, or drop it), every SCAN answers what the index-free
// algorithm answers for the same keys.
func TestScanIndexAgainstOracle(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		f := New(Options{})
		now := int64(1_000_000)
		apply := func(args ...string) Result {
			now += int64(r.Intn(3))
			return f.Apply(now, Command{Args: toArgs(args)})
		}
		key := func(space int) string { return "k" + strconv.Itoa(r.Intn(space)) }
		space := 300
		cursor := uint64(0)
		var folds, drops, scans int
		indexed, flushed := false, false
		for step := 0; step < 3000; step++ {
			switch p := r.Intn(100); {
			case p < 30:
				apply("SET", key(space), "v")
			case p < 40:
				apply("SET", key(space), "v", "PX", strconv.Itoa(1+r.Intn(20)))
			case p < 60:
				apply("DEL", key(space))
			case p < 61:
				apply("FLUSHDB")
				flushed = true
			case p < 63:
				// A burst: enough changes to fold; or, with no SCAN, so
				// many new keys (each deleted again) that the index is
				// dropped.
				base := r.Intn(1 << 20)
				if f.dbs[0].scan != nil && r.Intn(3) == 0 {
					for i := 0; i <= scanDropAdded; i++ {
						apply("SET", "d"+strconv.Itoa(base+i), "v")
						apply("DEL", "d"+strconv.Itoa(base+i))
					}
				}
				n := 300 + r.Intn(1500)
				for i := 0; i < n; i++ {
					if r.Intn(4) == 0 {
						apply("DEL", key(space))
					} else {
						apply("SET", "b"+strconv.Itoa(base+i), "v")
					}
				}
			default:
				before := f.dbs[0].scan
				if indexed && !flushed && before == nil {
					drops++
				}
				pending := before != nil && (len(before.added) > 0 || before.removed > 0)
				switch r.Intn(4) {
				case 0:
					cursor = 0
				case 1:
					cursor = uint64(r.Int63())
				}
				count := 1 + r.Intn(40)
				now += int64(r.Intn(3))
				wantNext, want := scanOracle(f.dbs[0], now, cursor, count)
				res := f.Apply(now, Command{Args: toArgs([]string{"SCAN", strconv.FormatUint(cursor, 10), "COUNT", strconv.Itoa(count)})})
				if len(res.Reply.Elems) != 2 {
					t.Fatalf("seed %d step %d: SCAN reply %q", seed, step, res.Reply.Append(nil))
				}
				gotNext, _ := strconv.ParseUint(string(res.Reply.Elems[0].Str), 10, 64)
				got := []string{}
				for _, e := range res.Reply.Elems[1].Elems {
					got = append(got, string(e.Str))
				}
				if gotNext != wantNext || !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: SCAN %d COUNT %d = %d %v, want %d %v", seed, step, cursor, count, gotNext, got, wantNext, want)
				}
				cursor = gotNext
				scans++
				if x := f.dbs[0].scan; x == before && pending && len(x.added) == 0 && x.removed == 0 {
					folds++
				}
				indexed, flushed = true, false
			}
		}
		f.Close()
		if scans < 300 || folds == 0 || drops == 0 {
			t.Fatalf("seed %d: the walk did not exercise the index: %d scans, %d folds, %d drops", seed, scans, folds, drops)
		}
		t.Logf("seed %d: %d scans, %d folds, %d drops", seed, scans, folds, drops)
	}
}
