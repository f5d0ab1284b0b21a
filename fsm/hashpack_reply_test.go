package fsm

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/deadbolt/deadbolt/resp"
)

// TestHashRepliesKeepTheirBytes: a reply is encoded when its connection
// writes it, which may be after later commands ran, and packed hashes
// change in place (hashpack.go). Random hash writes (many of the same
// length, so that they are made in place) between every command that can
// answer with a hash's bytes (HGET, HMGET, HGETALL, HKEYS, HVALS,
// HRANDFIELD, HSCAN, SORT ... GET, scripts, COPY, RENAME): every reply
// must encode afterwards as it did when it was made. It fails if one of
// them hands out the bytes without taking the hash's mark off.
func TestHashRepliesKeepTheirBytes(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	rng := rand.New(rand.NewPCG(19, 27))
	fields := []string{"a", "bb", "mode", lockOwnerUUID(1) + ":1", lockOwnerUUID(2) + ":7", "f5", "f6", "f7", "f8", "f9"}
	keys := []string{"h1", "h2", "h3"}
	field := func() string { return fields[rng.IntN(len(fields))] }
	key := func() string { return keys[rng.IntN(len(keys))] }
	value := func() string {
		switch rng.IntN(4) {
		case 0:
			return strconv.Itoa(rng.IntN(3)) // "0".."2": HINCRBY keeps the length
		case 1:
			return string(rune('a' + rng.IntN(26)))
		case 2:
			return strconv.Itoa(rng.IntN(1000))
		}
		return "v" + strconv.Itoa(rng.IntN(100000))
	}
	applyArgs(f, 1, "RPUSH", "list", "1", "2", "3")
	type held struct {
		cmd  []string
		r    resp.Reply
		want []byte
	}
	var replies []held
	check := func(step int, from int) {
		for _, h := range replies[from:] {
			if got := h.r.Append(nil); !bytes.Equal(got, h.want) {
				t.Fatalf("step %d: the reply to %q was %q and is now %q", step, h.cmd, h.want, got)
			}
		}
	}
	reads := 0
	for step := range 3000 {
		var cmd []string
		switch k := key(); rng.IntN(20) {
		case 0, 1, 2:
			cmd = []string{"HSET", k, field(), value()}
		case 3, 4:
			cmd = []string{"HINCRBY", k, field(), strconv.Itoa(rng.IntN(3) - 1)}
		case 5:
			cmd = []string{"HDEL", k, field()}
		case 6:
			cmd = []string{"HSETNX", k, field(), value()}
		case 7:
			cmd = []string{"HGET", k, field()}
		case 8:
			cmd = []string{"HMGET", k, field(), field()}
		case 9:
			cmd = []string{"HGETALL", k}
		case 10:
			cmd = []string{[]string{"HKEYS", "HVALS"}[rng.IntN(2)], k}
		case 11:
			cmd = []string{"HRANDFIELD", k, strconv.Itoa(rng.IntN(7) - 3), "WITHVALUES"}
		case 12:
			cmd = []string{"HSCAN", k, "0"}
		case 13:
			cmd = []string{"SORT", "list", "BY", "nosort", "GET", "h*->" + field()}
		case 14:
			cmd = []string{"EVAL", "return {redis.call('hget', KEYS[1], ARGV[1]), redis.call('hgetall', KEYS[1])}", "1", k, field()}
		case 15:
			cmd = []string{"EVAL", "redis.call('hincrby', KEYS[1], ARGV[1], 1) return redis.call('hget', KEYS[1], ARGV[1])", "1", k, field()}
		case 16:
			cmd = []string{"COPY", k, key(), "REPLACE"}
		case 17:
			if rng.IntN(10) == 0 {
				cmd = []string{"RENAME", k, key()}
			} else {
				cmd = []string{"HRANDFIELD", k}
			}
		case 18:
			cmd = []string{"HINCRBYFLOAT", k, field(), "1"}
		default:
			cmd = []string{"HSTRLEN", k, field()}
		}
		r := applyArgs(f, int64(step+2), cmd...)
		replies = append(replies, held{cmd, r, r.Append(nil)})
		if r.Type == resp.Array || r.Type == resp.Map || r.Type == resp.Bulk {
			reads++
		}
		check(step, max(0, len(replies)-64))
	}
	check(3000, 0)
	if reads < 500 {
		t.Errorf("only %d replies held bytes", reads)
	}
}

// TestNewHashLeavesScratch: a new hash packs its fields in the state
// machine's scratch until put moves them in with its name (hashForWrite,
// takeName). Every hash a command created must have left the scratch, or
// the next new hash would overwrite it; the values are checked after many
// more were created.
func TestNewHashLeavesScratch(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	want := map[string][]string{}
	long := strings.Repeat("L", 70) // past sharedNameMax: no longer fits the scratch
	for i := range 200 {
		k := "k" + strconv.Itoa(i)
		var cmd []string
		switch i % 7 {
		case 0:
			cmd, want[k] = []string{"HSET", k, "f", "v" + strconv.Itoa(i)}, []string{"f", "v" + strconv.Itoa(i)}
		case 1:
			cmd, want[k] = []string{"HINCRBY", k, lockOwnerUUID(i%3) + ":1", "1"}, []string{lockOwnerUUID(i%3) + ":1", "1"}
		case 2:
			cmd, want[k] = []string{"HSETNX", k, "a", "b"}, []string{"a", "b"}
		case 3:
			cmd, want[k] = []string{"HINCRBYFLOAT", k, "x", "1.5"}, []string{"x", "1.5"}
		case 4:
			cmd, want[k] = []string{"HSET", k, "a", "1", "b", long}, []string{"a", "1", "b", long}
		case 5:
			cmd = []string{"HSET", k}
			for j := range 10 { // past packMaxFields: a *Hash
				cmd = append(cmd, "f"+strconv.Itoa(j), strconv.Itoa(j))
				want[k] = append(want[k], "f"+strconv.Itoa(j), strconv.Itoa(j))
			}
		default:
			cmd, want[k] = []string{"EVAL", "redis.call('hset', KEYS[1], 'g', ARGV[1]) return redis.call('hset', KEYS[2], 'h', ARGV[1])", "2", k, k + "b", "s"}, []string{"g", "s"}
			want[k+"b"] = []string{"h", "s"}
		}
		if r := applyArgs(f, 1, cmd...); r.Type == resp.Error {
			t.Fatalf("%q: %s", cmd, r.Str)
		}
	}
	scratch := uintptr(unsafe.Pointer(&f.newHash[0]))
	for k, fields := range want {
		var got []string
		for _, r := range applyArgs(f, 1, "HGETALL", k).Elems {
			got = append(got, string(r.Str))
		}
		if strings.Join(got, ",") != strings.Join(fields, ",") {
			t.Errorf("%s: %q, want %q", k, got, fields)
		}
		v := f.dbs[0].keys.get(k)
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(v.Str))); len(v.Str) > 0 && p >= scratch && p < scratch+uintptr(len(f.newHash)) {
			t.Errorf("%s's packed bytes are in the scratch", k)
		}
	}
}
