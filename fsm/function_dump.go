package fsm

import (
	"encoding/binary"
	"hash/crc64"

	"github.com/deadbolt/deadbolt/resp"
)

// FUNCTION DUMP and RESTORE payloads, in Redis 7.0's format so that
// libraries move between Redis and deadbolt: for each library the RDB
// opcode FUNCTION2 (245) and its code as an RDB string, then the RDB
// version (2 bytes, little-endian) and a CRC-64 (Jones, as Redis computes
// it) of everything before, little-endian. deadbolt writes the code
// uncompressed; it reads LZF-compressed strings too, as Redis writes them.

const (
	rdbOpcodeFunction2 = 245
	rdbOpcodeFunction  = 246 // before 7.0 GA
	rdbVersion         = 10
)

var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// redisCRC64 is Redis's crc64: the Jones polynomial, reflected, with no
// inversion before or after (Go's crc64 inverts both: undo it).
func redisCRC64(b []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, b) }

func dumpLibraries(libs []*library) []byte {
	var out []byte
	for _, lib := range libs {
		out = append(out, rdbOpcodeFunction2)
		out = appendRDBLen(out, uint64(len(lib.code)))
		out = append(out, lib.code...)
	}
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, redisCRC64(out))
}

func appendRDBLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

const msgBadPayload = "ERR DUMP payload version or checksum are wrong"

// parseFunctionPayload returns the libraries' codes of a payload.
func parseFunctionPayload(p []byte) ([][]byte, string) {
	if len(p) < 10 {
		return nil, msgBadPayload
	}
	body, footer := p[:len(p)-10], p[len(p)-10:]
	if v := binary.LittleEndian.Uint16(footer); v > rdbVersion || redisCRC64(p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return nil, msgBadPayload
	}
	var codes [][]byte
	for len(body) > 0 {
		op := body[0]
		body = body[1:]
		switch op {
		case rdbOpcodeFunction2:
		case rdbOpcodeFunction:
			return nil, "ERR Pre-GA function format not supported"
		default:
			return nil, "ERR given type is not a function"
		}
		code, rest, ok := readRDBString(body)
		if !ok {
			return nil, "ERR Failed loading library payload"
		}
		codes, body = append(codes, code), rest
	}
	return codes, ""
}

// readRDBLen reads an RDB length; special is set for an encoded string
// (the low 6 bits then say which).
func readRDBLen(b []byte) (n uint64, special bool, rest []byte, ok bool) {
	if len(b) == 0 {
		return 0, false, nil, false
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), false, b[1:], true
	case 1:
		if len(b) < 2 {
			return 0, false, nil, false
		}
		return uint64(b[0]&0x3f)<<8 | uint64(b[1]), false, b[2:], true
	case 2:
		switch {
		case b[0] == 0x80 && len(b) >= 5:
			return uint64(binary.BigEndian.Uint32(b[1:])), false, b[5:], true
		case b[0] == 0x81 && len(b) >= 9:
			return binary.BigEndian.Uint64(b[1:]), false, b[9:], true
		}
		return 0, false, nil, false
	}
	return uint64(b[0] & 0x3f), true, b[1:], true
}

// readRDBString reads an RDB string: raw, or LZF-compressed (integer
// encodings are no library's code).
func readRDBString(b []byte) ([]byte, []byte, bool) {
	n, special, rest, ok := readRDBLen(b)
	if !ok {
		return nil, nil, false
	}
	if !special {
		if uint64(len(rest)) < n {
			return nil, nil, false
		}
		return rest[:n], rest[n:], true
	}
	if n != 3 { // RDB_ENC_LZF
		return nil, nil, false
	}
	clen, _, rest, ok := readRDBLen(rest)
	if !ok {
		return nil, nil, false
	}
	ulen, _, rest, ok := readRDBLen(rest)
	if !ok || uint64(len(rest)) < clen || ulen > 512<<20 {
		return nil, nil, false
	}
	out, ok := lzfDecompress(rest[:clen], int(ulen))
	if !ok {
		return nil, nil, false
	}
	return out, rest[clen:], true
}

// lzfDecompress expands LZF data (liblzf's format, which Redis uses) into
// exactly n bytes.
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			l := ctrl + 1
			if i+l > len(in) || len(out)+l > n {
				return nil, false
			}
			out = append(out, in[i:i+l]...)
			i += l
			continue
		}
		l := ctrl >> 5
		if l == 7 {
			if i >= len(in) {
				return nil, false
			}
			l += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - ((ctrl&0x1f)<<8 | int(in[i])) - 1
		i++
		l += 2
		if ref < 0 || len(out)+l > n {
			return nil, false
		}
		for k := 0; k < l; k++ {
			out = append(out, out[ref+k])
		}
	}
	if len(out) != n {
		return nil, false
	}
	return out, true
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func functionRestore(c *Ctx, args [][]byte) resp.Reply {
	policy := "append"
	if len(args) == 2 {
		switch {
		case optEq(args[1], "flush"):
			policy = "flush"
		case optEq(args[1], "append"):
		case optEq(args[1], "replace"):
			policy = "replace"
		default:
			return resp.Err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
		}
	}
	codes, msg := parseFunctionPayload(args[0])
	if msg != "" {
		return resp.Err(msg)
	}
	// Load into a scratch state machine first: nothing changes unless
	// every library loads and none collides.
	scratch := &FSM{lua: c.f.lua}
	incoming := map[string]*library{}
	for _, code := range codes {
		name, r := scratch.loadLibrary(code, false, ruleOf(c.foldNames))
		if r.IsError() {
			c.f.reloadKept()
			return r
		}
		incoming[name] = scratch.libraries[name]
	}
	c.mustWrite()
	if policy == "flush" {
		c.f.clearLibraries()
	}
	for _, lib := range scratch.sortedLibraries() {
		if old := c.f.libraries[lib.name]; old != nil && policy == "append" {
			c.f.reloadKept()
			return resp.Err("ERR Library " + lib.name + " already exists")
		}
	}
	for _, lib := range scratch.sortedLibraries() {
		for _, fn := range lib.functions {
			if _, ok := c.f.functionHolder(fn.Name, c.foldNames, func(owner string) bool {
				return owner == lib.name || policy == "replace" && incoming[owner] != nil
			}); ok {
				c.f.reloadKept()
				return resp.Err("ERR Function " + fn.Name + " already exists")
			}
		}
	}
	if c.foldNames {
		// every replaced library goes first, so that none takes its names
		// from a library restored before it (the old rule's commands keep
		// the build before's order: dropLibrary)
		for _, lib := range scratch.sortedLibraries() {
			c.f.dropLibrary(lib.name)
		}
	}
	for _, lib := range scratch.sortedLibraries() {
		c.f.dropLibrary(lib.name)
		c.f.addLibrary(lib)
	}
	c.f.lua.DropLibrary("") // loaded again by the calls that need them
	return resp.OK
}

// reloadKept makes the engine forget what a failed RESTORE loaded: the
// libraries in force are loaded again when called.
func (f *FSM) reloadKept() { f.lua.DropLibrary("") }
