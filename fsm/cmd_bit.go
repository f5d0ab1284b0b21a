package fsm

import (
	"encoding/binary"
	"math"
	"math/bits"
	"weak"

	"github.com/deadbolt/deadbolt/resp"
)

// Bitmap commands: strings seen as arrays of bits, bit 0 being the most
// significant bit of the first byte, as Redis 7.0 has them (bitops.c).
//
// Argument errors come in Redis's order, which differs between commands:
// SETBIT, GETBIT, BITOP and BITFIELD check their arguments before the key,
// BITCOUNT and BITPOS look the key up first (a missing key answers 0, or
// BITPOS's -1/0, whatever the other arguments are).
func init() {
	register(
		Spec{Name: "setbit", Arity: 4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdSetBit},
		Spec{Name: "getbit", Arity: 3, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdGetBit},
		Spec{Name: "bitcount", Arity: -2, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdBitCount},
		Spec{Name: "bitpos", Arity: -3, Flags: Read, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdBitPos},
		Spec{Name: "bitop", Arity: -4, Flags: Write, FirstKey: 2, LastKey: -1, Step: 1, fn: cmdBitOp},
		Spec{Name: "bitfield", Arity: -2, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdBitField},
		Spec{Name: "bitfield_ro", Arity: -2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdBitField},
	)
}

const (
	msgBitOffset     = "ERR bit offset is not an integer or out of range"
	msgBitValue      = "ERR bit is not an integer or out of range"
	msgBitArg        = "ERR The bit argument must be 1 or 0."
	msgBitOpNot      = "ERR BITOP NOT must be called with a single source key."
	msgBitFieldType  = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	msgBitFieldOver  = "ERR Invalid OVERFLOW type specified"
	msgBitFieldWrite = "ERR BITFIELD_RO only supports the GET subcommand"
)

// Changing bits in place.
//
// Stored strings are never changed in place (cmd_string.go): a reply may
// hold a string's bytes until the connection has written them, after the
// command that made it. Copying a bitmap for every SETBIT would make it
// O(size), so the bit commands keep one exception. A buffer they made
// themselves is theirs for as long as only bit commands on that same value
// run: bitOwner names the value and the number of the command (f.calls,
// counted by every command, applied, read or called from a script) that
// last ran on it. A bit command finding the previous command's number
// there may write in place; any other command in between means the buffer
// may have been handed out, and the next write copies it first. The bit
// commands never reply with a string's bytes, so they cannot hand it out
// themselves. This is a cache: which buffer holds the bytes changes no
// reply and no snapshot. It holds the value weakly, so that a bitmap
// deleted since is not kept alive by it.
type bitOwner struct {
	v    weak.Pointer[Value]
	call uint64
}

// claimBits records that v's buffer was just made by a bit command.
func (c *Ctx) claimBits(v *Value) {
	v.setEnc(encRaw) // changed in place, as Redis's dbUnshareStringValue leaves it
	c.f.bitOwner = bitOwner{v: weak.Make(v), call: c.f.calls}
}

// ownsBits reports whether v's buffer may be changed in place (the bit
// commands made it, and this command or the one before was a bit command
// on v), and keeps it so for the next command if it may.
func (c *Ctx) ownsBits(v *Value) bool {
	o := &c.f.bitOwner
	if o.call != c.f.calls && o.call+1 != c.f.calls || o.v.Value() != v {
		return false
	}
	o.call = c.f.calls
	return true
}

// keepBits is ownsBits for a command that only reads v.
func (c *Ctx) keepBits(v *Value) { c.ownsBits(v) }

// writableBits makes v's buffer one the bit commands may change, at least
// n bytes long (zero bytes added at the end), and reports whether it grew.
// The caller touches the key.
func (c *Ctx) writableBits(v *Value, n int) (grew bool) {
	old := v.Str
	grew = n > len(old)
	n = max(n, len(old))
	if c.ownsBits(v) && n <= cap(old) {
		v.Str = old[:n]
		clear(v.Str[len(old):])
		return grew
	}
	// A copy: the buffer is not ours, or it has no room left. A growing
	// one gets room as sdsMakeRoomFor leaves it: double, or 1 MiB more
	// past 1 MiB.
	room := n
	if grew {
		room = min(2*n, n+1<<20)
	}
	buf := make([]byte, n, room)
	copy(buf, old)
	v.Str = buf
	c.claimBits(v)
	return grew
}

// newBits stores a new string of n zero bytes under key, owned by the bit
// commands.
func (c *Ctx) newBits(key []byte, n int) *Value {
	v := &Value{Kind: KindString, Str: make([]byte, n)}
	c.put(key, v)
	c.claimBits(v)
	return v
}

// parseBitOffset parses a bit offset as Redis's getBitOffsetFromArgument
// does: a string2ll integer, or for BITFIELD (width > 0) "#N", N fields of
// that width (the product wraps as Redis's does); within 0 and
// 8*proto-max-bulk-len-1.
func parseBitOffset(arg []byte, width int) (int64, bool) {
	hash := width > 0 && len(arg) > 0 && arg[0] == '#'
	if hash {
		arg = arg[1:]
	}
	n, ok := parseInt64(arg)
	if !ok {
		return 0, false
	}
	if hash {
		n *= int64(width)
	}
	if n < 0 || n>>3 >= maxStringLen {
		return 0, false
	}
	return n, true
}

// bitAt returns bit i of s (0 past its end).
func bitAt(s []byte, i int64) byte {
	if i>>3 >= int64(len(s)) {
		return 0
	}
	return s[i>>3] >> (7 - i&7) & 1
}

// cmdSetBit sets or clears one bit, growing the string with zero bytes to
// reach it, and replies with the bit's old value. The key keeps its
// expiry; a bit set to what it was changes nothing (no event, no WATCH
// abort), as in Redis 7.0.
func cmdSetBit(c *Ctx, args [][]byte) resp.Reply {
	off, ok := parseBitOffset(args[2], 0)
	if !ok {
		return resp.Err(msgBitOffset)
	}
	on, ok := parseInt64(args[3])
	if !ok || on&^1 != 0 {
		return resp.Err(msgBitValue)
	}
	key := args[1]
	v, ok := c.lookupKind(key, KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	idx := int(off >> 3)
	mask := byte(1) << (7 - off&7)
	var old byte
	if v != nil && idx < len(v.Str) {
		old = v.Str[idx] & mask
	}
	switch {
	case v == nil:
		v = c.newBits(key, idx+1)
	case idx < len(v.Str) && (old != 0) == (on == 1):
		// Nothing changes: Redis neither signals nor notifies.
		c.keepBits(v)
		return resp.IntReply(on)
	default:
		c.writableBits(v, idx+1)
		c.touch(v)
	}
	if on == 1 {
		v.Str[idx] |= mask
	} else {
		v.Str[idx] &^= mask
	}
	c.notify(notifyString, "setbit", key)
	if old != 0 {
		return resp.One
	}
	return resp.Zero
}

func cmdGetBit(c *Ctx, args [][]byte) resp.Reply {
	off, ok := parseBitOffset(args[2], 0)
	if !ok {
		return resp.Err(msgBitOffset)
	}
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	c.keepBits(v)
	return resp.IntReply(int64(bitAt(v.Str, off)))
}

// resolveBitRange turns the start and end of BITCOUNT and BITPOS (in
// bytes, or in bits when isBit) into bit positions lo..hi, both
// inclusive, within a string of n bytes; empty when lo > hi. Redis's
// rules: negative positions count from the end, both are clamped to the
// string, a byte range runs from its first byte's first bit to its last
// byte's last bit.
func resolveBitRange(start, end int64, isBit bool, n int64) (lo, hi int64) {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= total {
		end = total - 1
	}
	if isBit {
		return start, end
	}
	if start > end {
		return 1, 0
	}
	return start << 3, end<<3 + 7
}

// parseBitUnit reads BYTE or BIT.
func parseBitUnit(arg []byte) (isBit, ok bool) {
	switch {
	case optEq(arg, "bit"):
		return true, true
	case optEq(arg, "byte"):
		return false, true
	}
	return false, false
}

func cmdBitCount(c *Ctx, args [][]byte) resp.Reply {
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		return resp.Zero
	}
	c.keepBits(v)
	s := v.Str
	var lo, hi int64
	switch len(args) {
	case 2:
		lo, hi = 0, int64(len(s))<<3-1
	case 4, 5:
		start, ok := parseInt64(args[2])
		if !ok {
			return resp.Err(msgNotInt)
		}
		end, ok := parseInt64(args[3])
		if !ok {
			return resp.Err(msgNotInt)
		}
		if start < 0 && end < 0 && start > end {
			return resp.Zero
		}
		isBit := false
		if len(args) == 5 {
			if isBit, ok = parseBitUnit(args[4]); !ok {
				return resp.Err(msgSyntax)
			}
		}
		lo, hi = resolveBitRange(start, end, isBit, int64(len(s)))
	default:
		return resp.Err(msgSyntax)
	}
	if lo > hi {
		return resp.Zero
	}
	return resp.IntReply(popcount(s, lo, hi))
}

// popcount counts the set bits of s from bit lo to bit hi, inclusive
// (lo <= hi, both within s).
func popcount(s []byte, lo, hi int64) int64 {
	first, last := lo>>3, hi>>3
	headMask := byte(0xff) >> (lo & 7)
	tailMask := byte(0xff) << (7 - hi&7)
	if first == last {
		return int64(bits.OnesCount8(s[first] & headMask & tailMask))
	}
	n := int64(bits.OnesCount8(s[first]&headMask) + bits.OnesCount8(s[last]&tailMask))
	mid := s[first+1 : last]
	for len(mid) >= 8 {
		n += int64(bits.OnesCount64(binary.LittleEndian.Uint64(mid)))
		mid = mid[8:]
	}
	for _, b := range mid {
		n += int64(bits.OnesCount8(b))
	}
	return n
}

func cmdBitPos(c *Ctx, args [][]byte) resp.Reply {
	bit, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	if bit != 0 && bit != 1 {
		return resp.Err(msgBitArg)
	}
	v, ok := c.lookupKind(args[1], KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	if v == nil {
		// An infinite run of zero bits.
		if bit == 1 {
			return resp.IntReply(-1)
		}
		return resp.Zero
	}
	c.keepBits(v)
	s := v.Str
	n := int64(len(s))
	var lo, hi int64
	endGiven := false
	switch len(args) {
	case 3:
		lo, hi = 0, n<<3-1
	case 4, 5, 6:
		start, ok := parseInt64(args[3])
		if !ok {
			return resp.Err(msgNotInt)
		}
		isBit := false
		if len(args) == 6 {
			if isBit, ok = parseBitUnit(args[5]); !ok {
				return resp.Err(msgSyntax)
			}
		}
		end := n - 1
		if isBit {
			end = n<<3 - 1
		}
		if len(args) >= 5 {
			if end, ok = parseInt64(args[4]); !ok {
				return resp.Err(msgNotInt)
			}
			endGiven = true
		}
		lo, hi = resolveBitRange(start, end, isBit, n)
	default:
		return resp.Err(msgSyntax)
	}
	if lo > hi {
		return resp.IntReply(-1)
	}
	if pos := findBit(s, lo, hi, byte(bit)); pos >= 0 {
		return resp.IntReply(pos)
	}
	// Not found. Looking for a clear bit without an explicit end, the
	// string counts as followed by zero bits: the first one is past hi.
	if bit == 0 && !endGiven {
		return resp.IntReply(hi + 1)
	}
	return resp.IntReply(-1)
}

// findBit returns the position of the first bit equal to bit in s between
// bits lo and hi, inclusive, or -1.
func findBit(s []byte, lo, hi int64, bit byte) int64 {
	skip := byte(0) // a byte without the bit looked for
	if bit == 0 {
		skip = 0xff
	}
	i := lo
	for ; i <= hi && i&7 != 0; i++ {
		if bitAt(s, i) == bit {
			return i
		}
	}
	// Whole bytes to skip, eight at a time where possible.
	for i+7 <= hi {
		j := i >> 3
		if i+63 <= hi && binary.LittleEndian.Uint64(s[j:]) == uint64(skip)*0x0101010101010101 {
			i += 64
			continue
		}
		if s[j] != skip {
			break
		}
		i += 8
	}
	for ; i <= hi; i++ {
		if bitAt(s, i) == bit {
			return i
		}
	}
	return -1
}

// BITOP operations.
const (
	bitAnd = iota
	bitOr
	bitXor
	bitNot
)

func cmdBitOp(c *Ctx, args [][]byte) resp.Reply {
	var op int
	switch name := args[1]; {
	case optEq(name, "and"):
		op = bitAnd
	case optEq(name, "or"):
		op = bitOr
	case optEq(name, "xor"):
		op = bitXor
	case optEq(name, "not"):
		op = bitNot
	default:
		return resp.Err(msgSyntax)
	}
	if op == bitNot && len(args) != 4 {
		return resp.Err(msgBitOpNot)
	}
	dest := args[2]
	srcs := make([][]byte, len(args)-3)
	maxLen := 0
	for i, k := range args[3:] {
		v, ok := c.lookupKind(k, KindString)
		if !ok {
			return resp.Err(msgWrongType)
		}
		if v != nil {
			srcs[i] = v.Str
			maxLen = max(maxLen, len(v.Str))
		}
	}
	if maxLen == 0 {
		// Redis deletes the destination as it finds it, without
		// looking at its deadline.
		if c.db.keys.getBytes(dest) != nil {
			c.remove(string(dest))
			c.notify(notifyGeneric, "del", dest)
		}
		return resp.Zero
	}
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	switch op {
	case bitNot:
		for i := range res {
			res[i] = ^res[i]
		}
	case bitAnd:
		// A missing or shorter source counts as zero bytes.
		for _, s := range srcs[1:] {
			for i, b := range s {
				res[i] &= b
			}
			clear(res[len(s):])
		}
	default:
		for _, s := range srcs[1:] {
			for i, b := range s {
				if op == bitOr {
					res[i] |= b
				} else {
					res[i] ^= b
				}
			}
		}
	}
	c.lookup(dest) // a destination past its deadline expires first, as in setKey
	c.put(dest, &Value{Kind: KindString, createdHi: uint16(encRaw) << encShift, Str: res})
	c.notify(notifyString, "set", dest)
	return resp.IntReply(int64(maxLen))
}

// BITFIELD.

// Overflow behaviours.
const (
	overflowWrap = iota
	overflowSat
	overflowFail
)

// Subcommands.
const (
	fieldGet = iota
	fieldSet
	fieldIncrBy
)

type fieldOp struct {
	op       int
	overflow int
	signed   bool
	width    int
	offset   int64
	arg      int64
}

// parseFieldType reads i1..i64 or u1..u63, as Redis's
// getBitfieldTypeFromArgument does (up to a NUL byte, as C reads it).
func parseFieldType(arg []byte) (signed bool, width int, ok bool) {
	arg = cstr(arg)
	if len(arg) == 0 || arg[0] != 'i' && arg[0] != 'u' {
		return false, 0, false
	}
	signed = arg[0] == 'i'
	n, ok := parseInt64(arg[1:])
	if !ok || n < 1 || signed && n > 64 || !signed && n > 63 {
		return false, 0, false
	}
	return signed, int(n), true
}

// parseFieldOps parses BITFIELD's subcommands. writes reports whether any
// SET or INCRBY is among them, and end the last byte they may write.
func parseFieldOps(args [][]byte) (ops []fieldOp, writes bool, end int64, errReply resp.Reply) {
	overflow := overflowWrap
	for j := 2; j < len(args); j++ {
		rest := len(args) - j - 1
		var op int
		switch sub := args[j]; {
		case optEq(sub, "get") && rest >= 2:
			op = fieldGet
		case optEq(sub, "set") && rest >= 3:
			op = fieldSet
		case optEq(sub, "incrby") && rest >= 3:
			op = fieldIncrBy
		case optEq(sub, "overflow") && rest >= 1:
			j++
			switch t := args[j]; {
			case optEq(t, "wrap"):
				overflow = overflowWrap
			case optEq(t, "sat"):
				overflow = overflowSat
			case optEq(t, "fail"):
				overflow = overflowFail
			default:
				return nil, false, 0, resp.Err(msgBitFieldOver)
			}
			continue
		default:
			return nil, false, 0, resp.Err(msgSyntax)
		}
		signed, width, ok := parseFieldType(args[j+1])
		if !ok {
			return nil, false, 0, resp.Err(msgBitFieldType)
		}
		off, ok := parseBitOffset(args[j+2], width)
		if !ok {
			return nil, false, 0, resp.Err(msgBitOffset)
		}
		f := fieldOp{op: op, overflow: overflow, signed: signed, width: width, offset: off}
		if op != fieldGet {
			writes = true
			end = max(end, (off+int64(width)-1)>>3)
			if f.arg, ok = parseInt64(args[j+3]); !ok {
				return nil, false, 0, resp.Err(msgNotInt)
			}
			j++
		}
		ops = append(ops, f)
		j += 2
	}
	return ops, writes, end, resp.Reply{}
}

// getField reads a width-bit unsigned field at bit offset off (zero bits
// past the end of s).
func getField(s []byte, off int64, width int) uint64 {
	var v uint64
	for i := int64(0); i < int64(width); i++ {
		v = v<<1 | uint64(bitAt(s, off+i))
	}
	return v
}

// setField writes the low width bits of v at bit offset off (within s).
func setField(s []byte, off int64, width int, v uint64) {
	for i := int64(0); i < int64(width); i++ {
		p := off + i
		mask := byte(1) << (7 - p&7)
		if v>>(int64(width)-1-i)&1 != 0 {
			s[p>>3] |= mask
		} else {
			s[p>>3] &^= mask
		}
	}
}

// signExtend reads a width-bit field as two's complement.
func signExtend(u uint64, width int) int64 {
	if width < 64 && u&(1<<(width-1)) != 0 {
		u |= math.MaxUint64 << width
	}
	return int64(u)
}

// signedOverflow adds incr to value for a signed field of width bits, as
// Redis's checkSignedBitfieldOverflow decides, with its 64-bit wrapping
// arithmetic (which lets SET of a value far below the minimum count as an
// overflow upward). It returns the result under the overflow behaviour
// and whether the sum overflowed.
func signedOverflow(value, incr int64, width, overflow int) (int64, bool) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = 1<<(width-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	var limit int64
	switch {
	case value > maxv || width != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr:
		limit = maxv
	case value < minv || width != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr:
		limit = minv
	default:
		return value + incr, false
	}
	if overflow == overflowWrap {
		sum := uint64(value) + uint64(incr)
		if width < 64 {
			sum = uint64(signExtend(sum&(1<<width-1), width))
		}
		limit = int64(sum)
	}
	return limit, true
}

// unsignedOverflow is signedOverflow for an unsigned field
// (checkUnsignedBitfieldOverflow): a value above the maximum, such as a
// negative SET argument, overflows upward.
func unsignedOverflow(value uint64, incr int64, width, overflow int) (uint64, bool) {
	maxv := uint64(1)<<width - 1
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	var limit uint64
	switch {
	case value > maxv || incr > 0 && incr > maxIncr:
		limit = maxv
	case incr < 0 && incr < minIncr:
		limit = 0
	default:
		return value + uint64(incr), false
	}
	if overflow == overflowWrap {
		limit = (value + uint64(incr)) & maxv
	}
	return limit, true
}

// cmdBitField serves BITFIELD and BITFIELD_RO. Every subcommand is parsed
// before any runs; a SET or INCRBY first grows the string to the furthest
// byte any of them writes, even when all of them then fail (OVERFLOW
// FAIL), as Redis does. "setbit" is notified when a field changed (or the
// string was made or grown and a write went through).
func cmdBitField(c *Ctx, args [][]byte) resp.Reply {
	ops, writes, end, errReply := parseFieldOps(args)
	if errReply.Type == resp.Error {
		return errReply
	}
	if writes && optEq(args[0], "bitfield_ro") {
		return resp.Err(msgBitFieldWrite)
	}
	key := args[1]
	v, ok := c.lookupKind(key, KindString)
	if !ok {
		return resp.Err(msgWrongType)
	}
	// dirty: the string was made or grown, so that every write that goes
	// through counts as a change (Redis's rule for notifying).
	dirty := false
	if writes {
		switch {
		case v == nil:
			v = c.newBits(key, int(end)+1)
			dirty = true
		case int64(len(v.Str)) <= end:
			dirty = c.writableBits(v, int(end)+1)
			c.touch(v)
		}
		v.setEnc(encRaw) // Redis unshares the string before any write
	}
	writable := dirty
	if v != nil && !dirty {
		c.keepBits(v)
	}
	out := make([]resp.Reply, len(ops))
	changes := 0
	for i, f := range ops {
		var s []byte
		if v != nil {
			s = v.Str
		}
		old := getField(s, f.offset, f.width)
		if f.op == fieldGet {
			if f.signed {
				out[i] = resp.IntReply(signExtend(old, f.width))
			} else {
				out[i] = resp.IntReply(int64(old))
			}
			continue
		}
		var next, ret uint64
		var overflowed bool
		if f.signed {
			o := signExtend(old, f.width)
			var n int64
			if f.op == fieldIncrBy {
				n, overflowed = signedOverflow(o, f.arg, f.width, f.overflow)
				ret = uint64(n)
			} else {
				n, overflowed = signedOverflow(f.arg, 0, f.width, f.overflow)
				ret = uint64(o)
			}
			next = uint64(n) & (math.MaxUint64 >> (64 - f.width))
		} else {
			if f.op == fieldIncrBy {
				next, overflowed = unsignedOverflow(old, f.arg, f.width, f.overflow)
				ret = next
			} else {
				next, overflowed = unsignedOverflow(uint64(f.arg), 0, f.width, f.overflow)
				ret = old
			}
		}
		if overflowed && f.overflow == overflowFail {
			out[i] = resp.NilReply
			continue
		}
		out[i] = resp.IntReply(int64(ret))
		if next != old {
			if !writable {
				c.writableBits(v, len(v.Str))
				c.touch(v)
				writable = true
			}
			setField(v.Str, f.offset, f.width, next)
		}
		if dirty || next != old {
			changes++
		}
	}
	if changes > 0 {
		c.notify(notifyString, "setbit", key)
	}
	return resp.ArrayReply(out...)
}
