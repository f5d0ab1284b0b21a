package fsm

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// MEMORY USAGE (fsm/DESIGN.md, "MEMORY USAGE").
//
// deadbolt's values are Go maps and slices, so what they take here says
// nothing a Redis user could compare. The estimate is instead what Redis
// 7.0 on jemalloc would take for the same value in the encoding OBJECT
// ENCODING reports: the structures' sizes on a 64-bit build, listpacks and
// intsets byte by byte, every allocation rounded up to jemalloc's size
// class, and, as Redis's objectComputeSize does, the per-element cost of a
// hashtable, skiplist or quicklist averaged over the first SAMPLES
// elements (5 by default, 0 for all) and multiplied by their number. It is
// deterministic: the same value answers the same on every node. It is
// not byte-identical to Redis's (allocations with spare room, a dictionary
// not yet shrunk, skiplist levels drawn at random), but it is within a few
// percent for the common cases and of the same order for the others.

// MemoryUsageCommand is the state machine's command behind MEMORY USAGE
// (the server's MEMORY container sends it, with MEMORY USAGE's arguments
// after the subcommand).
const MemoryUsageCommand = "__memoryusage"

func init() {
	register(Spec{Name: MemoryUsageCommand, Arity: -2, Flags: Read | Internal, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdMemoryUsage})
}

// MemoryUsageArgs turns MEMORY USAGE's arguments (key [SAMPLES n]) into
// the command for the state machine.
func MemoryUsageArgs(args [][]byte) [][]byte {
	return append([][]byte{[]byte(MemoryUsageCommand)}, args...)
}

// Sizes of Redis 7.0's structures on a 64-bit build.
const (
	sizeRobj          = 16
	sizeDict          = 56
	sizeDictEntry     = 24
	sizeQuicklist     = 40
	sizeQuicklistNode = 40
	sizeZset          = 16
	sizeZskiplist     = 32
	sizeZslHeader     = 24 + 32*16 // a node with ZSKIPLIST_MAXLEVEL levels
	sizeZslNode       = 24 + 16    // a node of one level (the most likely)
	quicklistNodeMax  = 8192       // list-max-listpack-size -2
	defaultSamples    = 5
)

func cmdMemoryUsage(c *Ctx, args [][]byte) resp.Reply {
	samples := int64(defaultSamples)
	for j := 2; j < len(args); j++ {
		if !optEq(args[j], "samples") || j+1 >= len(args) {
			return resp.Err(msgSyntax)
		}
		n, ok := parseInt64(args[j+1])
		if !ok {
			return resp.Err(msgNotInt)
		}
		if n < 0 {
			return resp.Err(msgSyntax)
		}
		if n == 0 {
			n = math.MaxInt64
		}
		samples = n
		j++
	}
	v := c.lookup(args[1])
	if v == nil {
		return resp.NilReply
	}
	return resp.IntReply(memoryUsage(v, len(args[1]), samples))
}

// memoryUsage estimates what Redis would report for a key of keyLen bytes
// holding v.
func memoryUsage(v *Value, keyLen int, samples int64) int64 {
	return objectSize(v, samples) + sdsAlloc(keyLen) + sizeDictEntry
}

func objectSize(v *Value, samples int64) int64 {
	switch v.Kind {
	case KindString:
		switch stringEncoding(v) {
		case "int":
			return sizeRobj
		case "embstr":
			return jemallocSize(sizeRobj + 3 + int64(len(v.Str)) + 1)
		}
		return sizeRobj + sdsAlloc(len(v.Str))
	case KindHash:
		if v.enc() != encBig {
			lp := newListpack()
			v.hash().peekEach(func(f, val []byte) bool {
				lp.add(f)
				lp.add(val)
				return true
			})
			return sizeRobj + jemallocSize(lp.bytes)
		}
		var n, sum int64
		v.hash().peekEach(func(f, val []byte) bool {
			sum += sdsAlloc(len(f)) + sdsAlloc(len(val)) + sizeDictEntry
			n++
			return n < samples
		})
		return sizeRobj + dictSize(v.hash().Len()) + average(sum, n, v.hash().Len())
	case KindList:
		var nodes []int64 // each node's listpack size
		lp := newListpack()
		v.list().Each(func(e []byte) bool {
			if lp.count > 0 && lp.bytes+lpEntrySize(e) > quicklistNodeMax {
				nodes = append(nodes, lp.bytes)
				lp = newListpack()
			}
			lp.add(e)
			return true
		})
		if lp.count > 0 {
			nodes = append(nodes, lp.bytes)
		}
		var n, sum int64
		for _, b := range nodes {
			if n >= samples {
				break
			}
			sum += sizeQuicklistNode + jemallocSize(b)
			n++
		}
		return sizeRobj + sizeQuicklist + average(sum, n, len(nodes))
	case KindSet:
		if v.enc() != encBig {
			width := int64(2)
			v.set().Each(func(m string) bool {
				x, _ := parseInt64([]byte(m))
				switch {
				case x < math.MinInt32 || x > math.MaxInt32:
					width = 8
				case (x < math.MinInt16 || x > math.MaxInt16) && width < 4:
					width = 4
				}
				return true
			})
			return sizeRobj + jemallocSize(8+width*int64(v.set().Len()))
		}
		var n, sum int64
		v.set().Each(func(m string) bool {
			sum += sdsAlloc(len(m)) + sizeDictEntry
			n++
			return n < samples
		})
		return sizeRobj + dictSize(v.set().Len()) + average(sum, n, v.set().Len())
	case KindZSet:
		if v.enc() != encBig {
			lp := newListpack()
			v.zset().Each(func(m string, score float64) bool {
				lp.add([]byte(m))
				lp.add(scoreText(score))
				return true
			})
			return sizeRobj + jemallocSize(lp.bytes)
		}
		var n, sum int64
		v.zset().Each(func(m string, _ float64) bool {
			sum += sdsAlloc(len(m)) + sizeDictEntry + jemallocSize(sizeZslNode)
			n++
			return n < samples
		})
		return sizeRobj + sizeZset + sizeZskiplist + dictSize(v.zset().Len()) + jemallocSize(sizeZslHeader) + average(sum, n, v.zset().Len())
	}
	return sizeRobj
}

// average is sum/n per element times count, as objectComputeSize
// extrapolates from its samples.
func average(sum, n int64, count int) int64 {
	if n == 0 {
		return 0
	}
	return int64(float64(sum) / float64(n) * float64(count))
}

// dictSize is a dictionary of n entries without them: the struct and its
// table of 4 or the next power of two slots.
func dictSize(n int) int64 {
	slots := int64(4)
	for slots < int64(n) {
		slots <<= 1
	}
	return sizeDict + 8*slots
}

// sdsAlloc is what an sds string of n bytes takes: its header (by
// length, as sdsReqType chooses it), the bytes and the terminator.
func sdsAlloc(n int) int64 {
	var hdr int64
	switch {
	case n == 0:
		hdr = 3 // never type 5 when empty
	case n < 1<<5:
		hdr = 1
	case n < 1<<8:
		hdr = 3
	case n < 1<<16:
		hdr = 5
	case int64(n) < 1<<32:
		hdr = 9
	default:
		hdr = 17
	}
	return jemallocSize(hdr + int64(n) + 1)
}

// jemallocSize rounds n up to jemalloc's size class: 8, then multiples of
// 16 up to 128, then four classes per doubling.
func jemallocSize(n int64) int64 {
	switch {
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) &^ 15
	}
	step := int64(1) << (bits.Len64(uint64(n-1)) - 3) // a quarter of the power of two below
	return (n + step - 1) / step * step
}

// listpack counts the bytes of a listpack as Redis 7.0 encodes it.
type listpack struct {
	bytes int64
	count int
}

func newListpack() listpack { return listpack{bytes: 6 + 1} } // header and end mark

func (lp *listpack) add(e []byte) {
	lp.bytes += lpEntrySize(e)
	lp.count++
}

// lpEntrySize is one entry: an integer in the smallest encoding that
// holds it, or a string with a 1, 2 or 5 byte header; then the entry's
// length backwards in 1 to 5 bytes.
func lpEntrySize(e []byte) int64 {
	var n int64
	if x, ok := parseInt64(e); ok {
		switch {
		case x >= 0 && x <= 127:
			n = 1
		case x >= -4096 && x <= 4095:
			n = 2
		case x >= math.MinInt16 && x <= math.MaxInt16:
			n = 3
		case x >= -1<<23 && x < 1<<23:
			n = 4
		case x >= math.MinInt32 && x <= math.MaxInt32:
			n = 5
		default:
			n = 9
		}
	} else {
		switch l := int64(len(e)); {
		case l < 64:
			n = 1 + l
		case l < 4096:
			n = 2 + l
		default:
			n = 5 + l
		}
	}
	switch {
	case n <= 127:
		return n + 1
	case n < 16383:
		return n + 2
	case n < 2097151:
		return n + 3
	case n < 268435455:
		return n + 4
	}
	return n + 5
}

// scoreText is a score as a listpack holds it (d2string: an integer when
// it is one).
func scoreText(s float64) []byte {
	if s == math.Trunc(s) && math.Abs(s) < 1<<53 {
		return strconv.AppendInt(nil, int64(s), 10)
	}
	return strconv.AppendFloat(nil, s, 'g', 17, 64)
}
