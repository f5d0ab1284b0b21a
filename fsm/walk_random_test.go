package fsm

import (
	"bytes"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// Run (with Encoded) while writes of many kinds come at every yield until
// the walk finishes; the answer must be a one-step KEYS at the walk's
// time, read as the walk finishes.
var excl = os.Getenv("EXCL")

func TestWalkRunRandomWrites(t *testing.T) {
	smallWalks(t)
	piece := walkPiece
	walkPiece = 200
	t.Cleanup(func() { walkPiece = piece })
	old := walkYield
	t.Cleanup(func() { walkYield = old })
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		f := New(Options{})
		now := int64(1_000_000)
		apply := func(args ...string) { f.Apply(now, Command{Args: toArgs(args)}) }
		key := func() string { return "k" + strconv.Itoa(r.Intn(300)) }
		for i := 0; i < 250; i++ {
			if r.Intn(4) == 0 {
				apply("SET", key(), "v", "PX", strconv.Itoa(1+r.Intn(30)))
			} else {
				apply("SET", key(), "v")
			}
		}
		now += 10
		wnow := now
		pattern := []string{"*", "k1*", "k?5"}[r.Intn(3)]
		cmd := Command{Args: toArgs([]string{"KEYS", pattern}), Encoded: true}
		var mu sync.Mutex
		var w *Walk
		var want []byte
		var oracle func() []byte
		ops := []string{"set", "del", "setpx", "expire", "persist", "rename", "copy", "move", "mset", "getset", "incr", "append", "pexpireat"}
		if excl != "" {
			ops = slices.DeleteFunc(ops, func(o string) bool { return o == excl })
		}
		walkYield = func() {
			mu.Lock()
			defer mu.Unlock()
			if w == nil || want != nil {
				return
			}
			if !slices.Contains(f.dbs[0].walks, w) {
				want = oracle()
				return
			}
			now++
			for n := r.Intn(3); n > 0; n-- {
				k := key()
				switch ops[r.Intn(len(ops))] {
				case "set":
					apply("SET", k, "v")
				case "del":
					apply("DEL", k)
				case "setpx":
					apply("SET", k, "v", "PX", strconv.Itoa(1+r.Intn(20)))
				case "expire":
					apply("PEXPIRE", k, strconv.Itoa(1+r.Intn(20)))
				case "persist":
					apply("PERSIST", k)
				case "rename":
					apply("RENAME", k, key())
				case "copy":
					apply("COPY", k, key(), "REPLACE")
				case "move":
					apply("MOVE", k, "1")
				case "mset":
					apply("MSET", k, "m")
				case "getset":
					apply("GETSET", k, "g")
				case "incr":
					apply("INCR", "n"+k)
				case "append":
					apply("APPEND", k, "a")
				case "pexpireat":
					apply("PEXPIREAT", k, strconv.FormatInt(wnow-5, 10))
				}
			}
		}
		oracle = func() []byte {
			var ks []resp.Reply
			for k, v := range f.dbs[0].keys.all() {
				if !v.expired(wnow) && (pattern == "*" || stringMatch([]byte(pattern), []byte(k), false)) {
					ks = append(ks, resp.BulkString(k))
				}
			}
			slices.SortFunc(ks, func(a, b resp.Reply) int { return bytes.Compare(a.Str, b.Str) })
			return resp.ArrayReply(ks...).AppendProto(nil, 2)
		}
		mu.Lock()
		w = f.BeginWalk(wnow, cmd)
		mu.Unlock()
		if w == nil {
			t.Fatal("not a walk")
		}
		got := w.Run(&mu)
		if want == nil {
			want = oracle()
		}
		if got.Reply.Type != resp.Encoded {
			// the database was replaced: one step
			continue
		}
		if g := got.Reply.AppendProto(nil, 2); !bytes.Equal(g, want) {
			gr, _, _ := resp.Parse(g)
			wr, _, _ := resp.Parse(want)
			var gs, ws []string
			for _, e := range gr.Elems {
				gs = append(gs, string(e.Str))
			}
			for _, e := range wr.Elems {
				ws = append(ws, string(e.Str))
			}
			for _, k := range gs {
				if !slices.Contains(ws, k) {
					v := f.dbs[0].keys.get(k)
					_, tch := w.touched[k]
					dl := int64(-1)
					if v != nil {
						dl = v.Deadline
					}
					t.Errorf("seed %d KEYS %s: extra %s: touched %v inTable %v deadline %d wnow %d add %v drop %v", seed, pattern, k, tch, v != nil, dl, wnow, slices.Contains(w.add, k), slices.Contains(w.drop, k))
				}
			}
			for _, k := range ws {
				if !slices.Contains(gs, k) {
					_, tch := w.touched[k]
					t.Errorf("seed %d KEYS %s: missing %s touched %v", seed, pattern, k, tch)
				}
			}
		}
	}
}
