package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Bitmap and LCS tests. testdata/transcripts/bits.txt and lcs.txt check
// every option and error against redis-server over the wire; the tests
// here check what a transcript cannot see (buffers changed in place,
// determinism) and run random sequences against redis-server.

// bitTranscript was recorded from redis-server 7.0.15 (the differential
// test re-checks it): BITFIELD's overflow arithmetic at its edges, BITPOS
// ranges, and LCS ranges.
var bitTranscript = []ctStep{
	{"BITFIELD f SET i8 0 100 INCRBY i8 0 100", "*2[:0, :-56]"},
	{"BITFIELD f OVERFLOW SAT INCRBY i8 0 -100 OVERFLOW FAIL INCRBY i8 0 -1", "*2[:-128, $-1]"},
	{"BITFIELD f OVERFLOW SAT SET i8 0 -9223372036854775808 GET i8 0", "*2[:-128, :127]"},
	{"BITFIELD f OVERFLOW SAT SET u8 0 -1 GET u8 0", "*2[:127, :255]"},
	{"BITFIELD f OVERFLOW WRAP SET u8 0 258 GET u8 0", "*2[:255, :2]"},
	{"BITFIELD f SET i64 0 -9223372036854775808 INCRBY i64 0 -1", "*2[:144115188075855872, :9223372036854775807]"},
	{"BITFIELD f OVERFLOW SAT INCRBY i64 0 1 INCRBY u63 1 1", "*2[:9223372036854775807, :9223372036854775807]"},
	{"BITFIELD f GET u8 #1 GET i4 #3 GET u8 1000", "*3[:255, :-1, :0]"},
	{"SET p \"\\xff\\xf0\\x00\"", "+OK"},
	{"BITPOS p 0", ":12"},
	{"BITPOS p 1 2", ":-1"},
	{"BITPOS p 0 0 11 BIT", ":-1"},
	{"BITPOS p 1 3 11 BIT", ":3"},
	{"BITCOUNT p 5 14 BIT", ":7"},
	{"SET ones \"\\xff\\xff\"", "+OK"},
	{"BITPOS ones 0", ":16"},
	{"BITPOS ones 0 0 -1", ":-1"},
	{"MSET a ohmytext b mynewtext", "+OK"},
	{"LCS a b", `"mytext"`},
	{"LCS a b IDX MINMATCHLEN 2 WITHMATCHLEN", `*4["matches", *2[*3[*2[:4, :7], *2[:5, :8], :4], *3[*2[:2, :3], *2[:0, :1], :2]], "len", :6]`},
	{"MSET x ABCBDAB y BDCABA", "+OK"},
	{"LCS x y", `"BDAB"`},
	{"LCS y x", `"BCBA"`},
}

func TestBitTranscript(t *testing.T) { ctTranscript(t, bitTranscript) }

func TestBitTranscriptAgainstRedis(t *testing.T) { ctTranscriptAgainstRedis(t, bitTranscript) }

// TestBitsInPlace checks the buffer the bit commands change in place: a
// run of bit commands on one string reuses its buffer, and a reply that
// holds the string's bytes (any other command in between) keeps them.
func TestBitsInPlace(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	buf := func() *byte { return &f.dbs[0].keys.get("k").Str[0] }
	ctApply(t, f, 1000, "SETBIT k 8000 1")
	first := buf()
	for i := 0; i < 100; i++ {
		ctApply(t, f, 1000, "SETBIT k "+strconv.Itoa(i)+" 1")
		ctRead(t, f, 1000, "GETBIT k 3")
		ctApply(t, f, 1000, "BITFIELD k INCRBY u8 #20 1")
		ctRead(t, f, 1000, "BITCOUNT k")
	}
	if buf() != first {
		t.Error("a run of bit commands copied the string")
	}

	held := ctApply(t, f, 1000, "GET k")
	ranged := ctRead(t, f, 1000, "GETRANGE k 0 3")
	ctApply(t, f, 1000, "SETBIT k 0 0")
	ctApply(t, f, 1000, "SETBIT k 1 0")
	ctApply(t, f, 1000, "BITFIELD k SET u8 #1 0 SET u8 #20 7")
	if held.Str[0] != 0xff || held.Str[1] != 0xff || held.Str[20] != 100 || string(ranged.Str) != "\xff\xff\xff\xff" {
		t.Errorf("a held reply changed: %x / %x", held.Str[:21], ranged.Str)
	}
	if buf() == &held.Str[0] {
		t.Error("the string was not copied after GET")
	}
	if got := ctFormat(ctApply(t, f, 1000, "GETRANGE k 0 1")); got != "\"?\x00\"" {
		t.Errorf("GETRANGE after the writes: %s", got)
	}

	// From a script: the reply of redis.call('get') is taken before the
	// next SETBIT.
	r := ctApply(t, f, 1000, `EVAL "local a = redis.call('getrange', KEYS[1], 0, 0); redis.call('setbit', KEYS[1], 0, 1); return {a, redis.call('getrange', KEYS[1], 0, 0)}" 1 k`)
	if got := ctFormat(r); got != "*2[\"?\", \"\xbf\"]" {
		t.Errorf("script: %s", got)
	}
	// In a transaction, every reply waits for EXEC.
	res := f.Apply(1000, Command{Tx: [][][]byte{
		ctSplit("SETBIT m 0 1"), ctSplit("GET m"), ctSplit("SETBIT m 1 1"), ctSplit("GET m"),
		ctSplit("SETBIT m 2 1"), ctSplit("SETBIT m 3 1"), ctSplit("MGET m"), ctSplit("SETBIT m 100 1"),
	}})
	if got := ctFormat(res.Reply); got != "*8[:0, \"\x80\", :0, \"\xc0\", :0, :0, *1[\"\xf0\"], :0]" {
		t.Errorf("EXEC: %s", got)
	}
}

// TestBitsDeterministic applies one random log of bit commands to two
// state machines, one of them also serving reads between the writes (which
// changes which buffers are shared, not the state), and requires the same
// replies and byte-identical snapshots.
func TestBitsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	a, b := New(Options{}), New(Options{})
	defer a.Close()
	defer b.Close()
	g := newBitGen(rng)
	for i := 0; i < 4000; i++ {
		cmd := g.next()
		if rng.Intn(3) == 0 {
			ctRead(t, a, 1000, pickRead(rng))
		}
		ra, rb := ctApply(t, a, 1000, cmd), ctApply(t, b, 1000, cmd)
		if ctFormat(ra) != ctFormat(rb) {
			t.Fatalf("%s: %s vs %s", cmd, ctFormat(ra), ctFormat(rb))
		}
	}
	if !bytesEqualSnapshots(t, a, b) {
		t.Error("snapshots differ")
	}
}

func pickRead(rng *rand.Rand) string {
	k := "b" + strconv.Itoa(rng.Intn(3))
	return []string{"GET " + k, "GETRANGE " + k + " 0 3", "GETBIT " + k + " 5", "BITCOUNT " + k, "MGET b0 b1 b2"}[rng.Intn(5)]
}

// TestBitsRandomAgainstRedis runs random sequences of the bit commands and
// LCS, over a few short strings, on redis-server and on a state machine.
func TestBitsRandomAgainstRedis(t *testing.T) {
	rc := ctDialRedis(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	g := newBitGen(rand.New(rand.NewSource(seed)))
	for round := 0; round < 20; round++ {
		tr := []string{"HSET h f v"}
		for i := 0; i < 300; i++ {
			tr = append(tr, g.next())
		}
		ctDiff(t, rc, tr)
		if t.Failed() {
			return
		}
	}
}

// bitGen makes random commands over keys b0..b2 (strings of a few bytes),
// a hash h and a missing key, with arguments near the edges.
type bitGen struct{ rng *rand.Rand }

func newBitGen(rng *rand.Rand) *bitGen { return &bitGen{rng: rng} }

func (g *bitGen) pick(xs ...string) string { return xs[g.rng.Intn(len(xs))] }

func (g *bitGen) key() string {
	if g.rng.Intn(12) == 0 {
		return g.pick("h", "nosuch")
	}
	return "b" + strconv.Itoa(g.rng.Intn(3))
}

// index is a position or range bound in bytes or bits.
func (g *bitGen) index() string {
	if g.rng.Intn(4) == 0 {
		return g.pick("-1", "-2", "-8", "-9", "-100", "0", "100", "-9223372036854775808", "9223372036854775807")
	}
	return strconv.Itoa(g.rng.Intn(40) - 12)
}

func (g *bitGen) bytes() string {
	var b strings.Builder
	b.WriteByte('"')
	for n := g.rng.Intn(10); n > 0; n-- {
		switch g.rng.Intn(4) {
		case 0:
			b.WriteString(`\x00`)
		case 1:
			b.WriteString(`\xff`)
		default:
			fmt.Fprintf(&b, `\x%02x`, g.rng.Intn(256))
		}
	}
	b.WriteByte('"')
	return b.String()
}

// field is one BITFIELD subcommand (or OVERFLOW).
func (g *bitGen) field(writes bool) string {
	typ := g.pick("i", "u") + strconv.Itoa(1+g.rng.Intn(64))
	if g.rng.Intn(3) == 0 {
		typ = g.pick("i1", "u1", "i8", "u8", "i63", "u63", "i64", "u64", "i65", "x8")
	}
	off := strconv.Itoa(g.rng.Intn(90))
	if g.rng.Intn(4) == 0 {
		off = "#" + strconv.Itoa(g.rng.Intn(6))
	}
	val := g.pick("0", "1", "-1", "2", "7", "-8", "127", "128", "-128", "-129", "255", "256",
		"9223372036854775807", "-9223372036854775808", "4611686018427387904", "-4611686018427387905",
		strconv.FormatInt(g.rng.Int63()>>g.rng.Intn(63), 10), "-"+strconv.FormatInt(g.rng.Int63()>>g.rng.Intn(63), 10))
	ops := []string{"GET " + typ + " " + off, "OVERFLOW " + g.pick("WRAP", "SAT", "FAIL")}
	if writes {
		ops = append(ops, "SET "+typ+" "+off+" "+val, "INCRBY "+typ+" "+off+" "+val, "INCRBY "+typ+" "+off+" "+val)
	}
	return ops[g.rng.Intn(len(ops))]
}

func (g *bitGen) next() string {
	switch g.rng.Intn(16) {
	case 0:
		return "SET " + g.key() + " " + g.bytes()
	case 1:
		return "SETBIT " + g.key() + " " + strconv.Itoa(g.rng.Intn(100)) + " " + g.pick("0", "1")
	case 2:
		return "GETBIT " + g.key() + " " + strconv.Itoa(g.rng.Intn(100))
	case 3:
		return "BITCOUNT " + g.key() + g.pick("", " "+g.index()+" "+g.index(), " "+g.index()+" "+g.index()+" "+g.pick("BIT", "BYTE"))
	case 4, 5:
		return "BITPOS " + g.key() + " " + g.pick("0", "1") +
			g.pick("", " "+g.index(), " "+g.index()+" "+g.index(), " "+g.index()+" "+g.index()+" "+g.pick("BIT", "BYTE"))
	case 6:
		cmd := "BITOP " + g.pick("AND", "OR", "XOR", "NOT") + " " + g.key()
		for n := 1 + g.rng.Intn(3); n > 0; n-- {
			cmd += " " + g.key()
		}
		return cmd
	case 7, 8, 9:
		cmd := "BITFIELD " + g.key()
		for n := 1 + g.rng.Intn(4); n > 0; n-- {
			cmd += " " + g.field(true)
		}
		return cmd
	case 10:
		cmd := "BITFIELD_RO " + g.key()
		for n := g.rng.Intn(4); n > 0; n-- {
			cmd += " " + g.field(g.rng.Intn(8) == 0)
		}
		return cmd
	case 11:
		return "SET " + g.key() + " " + g.lcsString()
	case 12:
		return "LCS " + g.key() + " " + g.key() + g.pick("", " LEN", " IDX", " IDX WITHMATCHLEN",
			" IDX MINMATCHLEN "+strconv.Itoa(g.rng.Intn(4)), " IDX MINMATCHLEN 2 WITHMATCHLEN")
	case 13:
		return g.pick("GET ", "STRLEN ") + g.key()
	case 14:
		return "APPEND " + g.key() + " " + g.bytes()
	default:
		return "GETRANGE " + g.key() + " " + g.index() + " " + g.index()
	}
}

// lcsString is a short string over a small alphabet, so that common
// subsequences are long and ties many.
func (g *bitGen) lcsString() string {
	b := make([]byte, g.rng.Intn(14))
	for i := range b {
		b[i] = "abc"[g.rng.Intn(3)]
	}
	return `"` + string(b) + `"`
}

// BenchmarkSetBit1MiB sets bits in a 1 MiB bitmap: a run of SETBITs
// changes the string in place.
func BenchmarkSetBit1MiB(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	f.Apply(1000, Command{Args: ctSplit("SETBIT k 8388607 1")})
	args := [][]byte{[]byte("SETBIT"), []byte("k"), nil, []byte("1")}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args[2] = strconv.AppendInt(args[2][:0], int64(i*7919%8388608), 10)
		f.Apply(1000, Command{Args: args})
	}
}

// BenchmarkBitCount1MiB counts the bits of a 1 MiB bitmap.
func BenchmarkBitCount1MiB(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	f.Apply(1000, Command{Args: [][]byte{[]byte("SET"), []byte("k"), bytes.Repeat([]byte{0x5a}, 1<<20)}})
	args := ctSplit("BITCOUNT k")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Read(1000, Command{Args: args})
	}
}

// TestBitsOwnerWeak checks that the record of the buffer the bit commands
// own does not keep a deleted bitmap alive.
func TestBitsOwnerWeak(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	ctApply(t, f, 1000, "SETBIT big 8388607 1")
	if f.bitOwner.v.Value() == nil {
		t.Fatal("SETBIT did not record its buffer")
	}
	ctApply(t, f, 1000, "DEL big")
	runtime.GC()
	if f.bitOwner.v.Value() != nil {
		t.Error("a deleted bitmap is still reachable from bitOwner")
	}
}
