package fsm

import (
	"bufio"
	"bytes"
	"github.com/deadbolt/deadbolt/internal/glob"
	"math"
	"sort"
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// Generic key commands: existence, type, expiry, renaming, enumeration.
func init() {
	register(
		Spec{Name: "del", Arity: -2, Flags: Write, FirstKey: 1, LastKey: -1, Step: 1, fn: cmdDel},
		Spec{Name: "unlink", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: -1, Step: 1, fn: cmdDel},
		Spec{Name: "exists", Arity: -2, Flags: Read | Fast, FirstKey: 1, LastKey: -1, Step: 1, fn: cmdExists},
		Spec{Name: "touch", Arity: -2, Flags: Read | Fast, FirstKey: 1, LastKey: -1, Step: 1, fn: cmdExists},
		Spec{Name: "type", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdType},
		Spec{Name: "expire", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdExpire},
		Spec{Name: "pexpire", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdExpire},
		Spec{Name: "expireat", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdExpire},
		Spec{Name: "pexpireat", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdExpire},
		Spec{Name: "ttl", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdTTL},
		Spec{Name: "pttl", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdTTL},
		Spec{Name: "expiretime", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdTTL},
		Spec{Name: "pexpiretime", Arity: 2, Flags: Read | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdTTL},
		Spec{Name: "persist", Arity: 2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdPersist},
		Spec{Name: "keys", Arity: 2, Flags: Read, fn: cmdKeys},
		Spec{Name: "scan", Arity: -2, Flags: Read, fn: cmdScan},
		Spec{Name: "randomkey", Arity: 1, Flags: Read, fn: cmdRandomKey},
		Spec{Name: "dbsize", Arity: 1, Flags: Read | Fast, fn: cmdDBSize},
		Spec{Name: "rename", Arity: 3, Flags: Write, FirstKey: 1, LastKey: 2, Step: 1, fn: cmdRename},
		Spec{Name: "renamenx", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 2, Step: 1, fn: cmdRename},
		Spec{Name: "copy", Arity: -3, Flags: Write, FirstKey: 1, LastKey: 2, Step: 1, fn: cmdCopy},
		Spec{Name: "move", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdMove},
		Spec{Name: "flushdb", Arity: -1, Flags: Write, fn: cmdFlush},
		Spec{Name: "flushall", Arity: -1, Flags: Write, fn: cmdFlush},
		Spec{Name: "object", Arity: -2, Flags: Read, fn: cmdObject},
	)
}

const (
	msgInvalidCursor  = "ERR invalid cursor"
	msgSameObject     = "ERR source and destination objects are the same"
	msgExpireNXMix    = "ERR NX and XX, GT or LT options at the same time are not compatible"
	msgExpireGTLT     = "ERR GT and LT options at the same time are not compatible"
	msgUnsupportedOpt = "ERR Unsupported option "
)

// cstr is b up to its first NUL byte: Redis compares options and prints
// them as C strings.
func cstr(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// optEq reports whether the argument is the option name (lower case),
// compared as Redis's strcasecmp does.
func optEq(arg []byte, name string) bool {
	a := cstr(arg)
	if len(a) != len(name) {
		return false
	}
	for i := range a {
		c := a[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// errInvalidExpire is "invalid expire time in '<cmd>' command" with the
// command's registered (lower-case) name.
func errInvalidExpire(args [][]byte) resp.Reply {
	name := "?"
	if s, ok := Lookup(args[0]); ok {
		name = s.Name
	}
	return resp.Err("ERR invalid expire time in '" + name + "' command")
}

func cmdDel(c *Ctx, args [][]byte) resp.Reply {
	n := int64(0)
	for _, k := range args[1:] {
		if c.del(k) {
			c.notify(notifyGeneric, "del", k)
			n++
		}
	}
	return resp.IntReply(n)
}

// cmdExists serves EXISTS and TOUCH: the number of arguments naming a live
// key (a key named twice counts twice).
func cmdExists(c *Ctx, args [][]byte) resp.Reply {
	n := int64(0)
	for _, k := range args[1:] {
		if v := c.lookup(k); v != nil {
			n++
			if v.lock != 0 && c.script.active && !c.readOnly {
				c.lockExistsRead(v)
			}
		}
	}
	return resp.IntReply(n)
}

func cmdType(c *Ctx, args [][]byte) resp.Reply {
	v := c.lookup(args[1])
	if v == nil {
		return resp.StatusReply("none")
	}
	return resp.StatusReply(v.Kind.String())
}

// cmdExpire serves EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with NX, XX,
// GT and LT. A deadline at or before now deletes the key (and replies 1),
// as Redis does on a master.
func cmdExpire(c *Ctx, args [][]byte) resp.Reply {
	var nameBuf [32]byte
	lname, _ := LowerName(&nameBuf, args[0])
	name := string(lname) // compared only: no allocation
	seconds := name == "expire" || name == "expireat"
	relative := name == "expire" || name == "pexpire"

	var nx, xx, gt, lt bool
	for _, o := range args[3:] {
		switch {
		case optEq(o, "nx"):
			nx = true
		case optEq(o, "xx"):
			xx = true
		case optEq(o, "gt"):
			gt = true
		case optEq(o, "lt"):
			lt = true
		default:
			return resp.Err(sanitize(msgUnsupportedOpt + string(cstr(o))))
		}
	}
	if nx && (xx || gt || lt) {
		return resp.Err(msgExpireNXMix)
	}
	if gt && lt {
		return resp.Err(msgExpireGTLT)
	}

	when, ok := parseInt64(args[2])
	if !ok {
		return resp.Err(msgNotInt)
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return errInvalidExpire(args)
		}
		when *= 1000
	}
	var base int64
	if relative {
		base = c.now
	}
	if when > math.MaxInt64-base {
		return errInvalidExpire(args)
	}
	when += base

	v := c.lookup(args[1])
	if v == nil {
		return resp.Zero
	}
	cur := v.Deadline // 0: none
	switch {
	case nx && cur != 0,
		xx && cur == 0,
		gt && (cur == 0 || when <= cur),
		lt && cur != 0 && when >= cur:
		return resp.Zero
	}
	if when <= c.now {
		c.del(args[1])
		c.notify(notifyGeneric, "del", args[1])
		return resp.One
	}
	c.setDeadline(args[1], v, when)
	c.touch(v)
	c.notify(notifyGeneric, "expire", args[1])
	return resp.One
}

// cmdTTL serves TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a missing
// key, -1 for a key without expiry.
func cmdTTL(c *Ctx, args [][]byte) resp.Reply {
	v := c.lookup(args[1])
	if v == nil {
		return resp.IntReply(-2)
	}
	if v.lock != 0 && !c.readOnly {
		c.lockLeaseRead(v)
	}
	if v.Deadline == 0 {
		return resp.IntReply(-1)
	}
	var nameBuf [32]byte
	lname, _ := LowerName(&nameBuf, args[0])
	name := string(lname) // compared only: no allocation
	t := v.Deadline
	if name == "ttl" || name == "pttl" {
		t -= c.now
	}
	t = max(t, 0)
	if name == "ttl" || name == "expiretime" {
		// Rounded to seconds without overflowing: a deadline near
		// INT64_MAX ms (PEXPIREAT k 9223372036854775807) reads as Redis
		// prints it, 9223372036854776.
		t = int64((uint64(t) + 500) / 1000)
	}
	return resp.IntReply(t)
}

func cmdPersist(c *Ctx, args [][]byte) resp.Reply {
	v := c.lookup(args[1])
	if v == nil || v.Deadline == 0 {
		return resp.Zero
	}
	c.setDeadline(args[1], v, 0)
	c.touch(v)
	c.notify(notifyGeneric, "persist", args[1])
	return resp.One
}

// liveKeys returns the names of the live keys of the current database in
// byte order.
func (c *Ctx) liveKeys() []string {
	out := make([]string, 0, c.db.keys.len())
	for k, v := range c.db.keys.all() {
		if !v.expired(c.now) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// cmdKeys replies with the live keys matching the glob pattern. Redis's
// order is unspecified (hash-table order); deadbolt's is byte order, the
// same on every node.
func cmdKeys(c *Ctx, args [][]byte) resp.Reply {
	pat := args[1]
	all := len(pat) == 1 && pat[0] == '*'
	out := []resp.Reply{}
	for _, k := range c.liveKeys() {
		if all || stringMatch(pat, []byte(k), false) {
			out = append(out, resp.BulkString(k))
		}
	}
	return resp.ArrayReply(out...)
}

// SCAN's cursor is a position in a fixed order of all possible key names:
// the 63-bit FNV-1a hash of the name (keys with equal hashes together, in
// byte order). A call returns the keys at or after the cursor, and the
// next cursor is just past the last hash returned, so a key present for
// the whole iteration is returned exactly once however other keys come
// and go, as Redis guarantees (at least once). Keys that share a hash are
// never split between calls. Cursor 0 starts and ends an iteration; a
// cursor never exceeds 2^63-1, so clients that parse it as a signed or
// unsigned 64-bit number both work.
//
// COUNT is the number of keys examined (expired and filtered ones
// included), like the number of hash buckets Redis examines; so a call
// may return fewer keys than COUNT, or none, with a non-zero cursor. The
// reply depends on nothing but the keys that exist; scanIndex makes a
// call cost O(log N + COUNT).

// scanHash is a key's position in SCAN's order: its FNV-1a hash, 63 bits.
func scanHash(key string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a, 64-bit, without hash/fnv's allocations
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h >> 1
}

// parseCursor parses a SCAN cursor as Redis's strtoul-based parser does:
// no leading space, an optional sign ("-1" is 2^64-1), decimal digits,
// nothing after; the empty string is 0.
func parseCursor(b []byte) (uint64, bool) {
	if len(b) > 0 && isCSpace(b[0]) {
		return 0, false
	}
	s := cstr(b) // strtoul stops at a NUL, and Redis only checks for one
	if len(s) == 0 {
		return 0, true
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	v, ok := resp.ParseDigits(s) // false also on ERANGE
	if !ok {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

func cmdScan(c *Ctx, args [][]byte) resp.Reply {
	cursor, ok := parseCursor(args[1])
	if !ok {
		return resp.Err(msgInvalidCursor)
	}
	count := int64(10)
	var pat, typ []byte
	for i := 2; i < len(args); i += 2 {
		more := i+1 < len(args)
		switch {
		case optEq(args[i], "count") && more:
			n, ok := parseInt64(args[i+1])
			if !ok {
				return resp.Err(msgNotInt)
			}
			if n < 1 {
				return resp.Err(msgSyntax)
			}
			count = n
		case optEq(args[i], "match") && more:
			pat = args[i+1]
			if len(pat) == 1 && pat[0] == '*' {
				pat = nil
			}
		case optEq(args[i], "type") && more:
			typ = args[i+1]
		default:
			return resp.Err(msgSyntax)
		}
	}

	if c.db.scan == nil {
		c.db.scan = buildScanIndex(c.db)
	}
	c.db.scan.fresh(c.db)
	// Sized up front: a full SCAN is a thousand calls or more, and their
	// growing slices were most of what it allocated (the garbage collector
	// then ran through it, stealing the loop's processor).
	batch := make([]scanEntry, 0, min(count, 4096)+1)
	next := uint64(0)
	it := c.db.scan.iter(c.db, cursor)
	for e, ok := it.next(); ok; e, ok = it.next() {
		// Keys that share a hash are never split between calls.
		if int64(len(batch)) >= count && e.hash != batch[len(batch)-1].hash {
			next = e.hash
			break
		}
		batch = append(batch, e)
	}

	keys := batch[:0] // the keys answered, in place
	for _, e := range batch {
		if pat != nil && !stringMatch(pat, []byte(e.key), false) {
			continue
		}
		v := c.db.keys.get(e.key)
		if v.expired(c.now) {
			continue
		}
		if typ != nil && !optEq(typ, v.Kind.String()) {
			continue
		}
		keys = append(keys, e)
	}
	cur := strconv.FormatUint(next, 10)
	if c.encoded {
		// Encoded at once (Command.Encoded), the same bytes as below in
		// every protocol: a full SCAN is a thousand calls or more, and a
		// reply value and a copy per key were most of what it allocated.
		size := 32 + len(cur)
		for _, e := range keys {
			size += len(e.key) + 24
		}
		b := make([]byte, 0, size)
		b = append(strconv.AppendInt(append(b, "*2\r\n$"...), int64(len(cur)), 10), '\r', '\n')
		b = append(append(b, cur...), "\r\n*"...)
		b = append(strconv.AppendInt(b, int64(len(keys)), 10), '\r', '\n')
		for _, e := range keys {
			b = append(strconv.AppendInt(append(b, '$'), int64(len(e.key)), 10), '\r', '\n')
			b = append(append(b, e.key...), '\r', '\n')
		}
		return resp.NewEncoded([][]byte{b})
	}
	out := make([]resp.Reply, len(keys))
	for i, e := range keys {
		out[i] = resp.BulkString(e.key)
	}
	return resp.ArrayReply(resp.BulkString(cur), resp.ArrayReply(out...))
}

// cmdRandomKey picks a live key deterministically: the one whose FNV-1a
// hash, mixed with the command's time, is least. Every node picks the same
// key for the same state and time, and the choice moves as time does.
func cmdRandomKey(c *Ctx, args [][]byte) resp.Reply {
	seed := mix64(uint64(c.now))
	var best string
	var bestScore uint64
	found := false
	for k, v := range c.db.keys.all() {
		if v.expired(c.now) {
			continue
		}
		s := mix64(scanHash(k) ^ seed)
		if !found || s < bestScore || s == bestScore && k < best {
			best, bestScore, found = k, s, true
		}
	}
	if !found {
		return resp.NilReply
	}
	return resp.BulkString(best)
}

// mix64 is the SplitMix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// cmdDBSize counts the live keys of the database. Redis counts keys that
// are past their deadline but not yet reclaimed; deadbolt does not, so the
// answer does not depend on when active expiry last ran.
func cmdDBSize(c *Ctx, args [][]byte) resp.Reply {
	return resp.IntReply(int64(c.db.keys.len() - c.expiredInDB()))
}

// expiredInDB counts keys of the current database that are past their
// deadline but still stored. It visits only the part of the expiry heap
// with deadlines at or before now (a heap's children are never earlier
// than their parent), so it costs O(expired entries), not O(keys).
func (c *Ctx) expiredInDB() int {
	h := c.f.expires.h[c.dbIndex]
	var seen map[string]bool
	n := 0
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(h) || h[i].deadline > c.now {
			continue
		}
		stack = append(stack, 2*i+1, 2*i+2)
		e := h[i]
		v := c.db.keys.get(e.key)
		if v == nil || v.Deadline != e.deadline || !v.expired(c.now) {
			continue
		}
		if seen == nil {
			seen = make(map[string]bool)
		}
		if !seen[e.key] {
			seen[e.key] = true
			n++
		}
	}
	return n
}

// cmdRename serves RENAME and RENAMENX. The value keeps its expiry.
func cmdRename(c *Ctx, args [][]byte) resp.Reply {
	nx := optEq(args[0], "renamenx")
	src, dst := args[1], args[2]
	v := c.lookup(src)
	if v == nil {
		return resp.Err(msgNoSuchKey)
	}
	if bytes.Equal(src, dst) {
		if nx {
			return resp.Zero
		}
		return resp.OK
	}
	if c.lookup(dst) != nil && nx {
		return resp.Zero
	}
	c.remove(string(src))
	c.put(dst, v)
	c.notify(notifyGeneric, "rename_from", src)
	c.notify(notifyGeneric, "rename_to", dst)
	if nx {
		return resp.One
	}
	return resp.OK
}

// cmdCopy serves COPY source destination [DB db] [REPLACE]. The copy keeps
// the source's expiry.
func cmdCopy(c *Ctx, args [][]byte) resp.Reply {
	replace := false
	db := c.dbIndex
	for i := 3; i < len(args); i++ {
		switch {
		case optEq(args[i], "replace"):
			replace = true
		case optEq(args[i], "db") && i+1 < len(args):
			n, msg := parseIntArg(args[i+1])
			if msg != "" {
				return resp.Err(msg)
			}
			if n < 0 || n >= NumDBs {
				return resp.Err(msgDBIndex)
			}
			db = n
			i++
		default:
			return resp.Err(msgSyntax)
		}
	}
	src, dst := args[1], args[2]
	if db == c.dbIndex && bytes.Equal(src, dst) {
		return resp.Err(msgSameObject)
	}
	v := c.lookup(src)
	if v == nil {
		return resp.Zero
	}
	saved := c.dbIndex
	defer c.selectDB(saved)
	c.selectDB(db)
	if c.lookup(dst) != nil && !replace {
		return resp.Zero
	}
	nv := cloneValue(v)
	nv.Deadline = v.Deadline
	c.put(dst, nv)
	c.notify(notifyGeneric, "copy_to", dst)
	return resp.One
}

// cmdMove serves MOVE key db. The value keeps its expiry.
func cmdMove(c *Ctx, args [][]byte) resp.Reply {
	db, msg := parseIntArg(args[2])
	if msg != "" {
		return resp.Err(msg)
	}
	if db < 0 || db >= NumDBs {
		return resp.Err(msgDBIndex)
	}
	if db == c.dbIndex {
		return resp.Err(msgSameObject)
	}
	key := args[1]
	v := c.lookup(key)
	if v == nil {
		return resp.Zero
	}
	saved := c.dbIndex
	c.selectDB(db)
	if c.lookup(key) != nil {
		c.selectDB(saved)
		return resp.Zero
	}
	c.put(key, v)
	c.selectDB(saved)
	c.remove(string(key))
	c.notify(notifyGeneric, "move_from", key)
	c.selectDB(db)
	c.notify(notifyGeneric, "move_to", key)
	c.selectDB(saved)
	return resp.One
}

// cloneValue returns a deep copy of v's payload (without deadline or
// version), through the snapshot encoding so that it stays correct for
// every kind.
func cloneValue(v *Value) *Value {
	if v.Kind == KindString {
		nv := &Value{Kind: KindString, Str: append([]byte(nil), v.Str...)}
		nv.setEnc(v.enc())
		return nv
	}
	var buf bytes.Buffer
	e := &encoder{w: bufio.NewWriter(&buf)}
	v.encode(e)
	if err := e.w.Flush(); err != nil {
		panic("fsm: clone: " + err.Error())
	}
	d := &decoder{r: bufio.NewReader(&buf)}
	nv := decodeValue(d, v.Kind)
	if d.err != nil {
		panic("fsm: clone: " + d.err.Error())
	}
	nv.setEnc(v.enc()) // COPY keeps the encoding, as Redis's dup functions do
	return nv
}

// cmdFlush serves FLUSHDB and FLUSHALL, with an optional SYNC or ASYNC
// (both mean the same here).
func cmdFlush(c *Ctx, args [][]byte) resp.Reply {
	if len(args) > 2 || len(args) == 2 && !optEq(args[1], "sync") && !optEq(args[1], "async") {
		return resp.Err(msgSyntax)
	}
	if optEq(args[0], "flushall") {
		c.flush(-1)
	} else {
		c.flush(c.dbIndex)
	}
	return resp.OK
}

// cmdObject serves OBJECT ENCODING, REFCOUNT, IDLETIME, FREQ and HELP.
// Encodings are the ones Redis 7.0 would have chosen for the same commands
// (encoding.go); access times are not tracked, so IDLETIME is always 0 and
// FREQ reports the LFU-policy error as Redis does under its default LRU
// policy.
func cmdObject(c *Ctx, args [][]byte) resp.Reply {
	sub := args[1]
	if optEq(sub, "help") && len(args) == 2 {
		lines := []string{
			"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ENCODING <key>",
			"    Return the kind of internal representation used in order to store the value",
			"    associated with a <key>.",
			"FREQ <key>",
			"    Return the access frequency index of the <key>. The returned integer is",
			"    proportional to the logarithm of the recent access frequency of the key.",
			"IDLETIME <key>",
			"    Return the idle time of the <key>, that is the approximated number of",
			"    seconds elapsed since the last access to the key.",
			"REFCOUNT <key>",
			"    Return the number of references of the value associated with the specified",
			"    <key>.",
			"HELP",
			"    Prints this help.",
		}
		out := make([]resp.Reply, len(lines))
		for i, l := range lines {
			out[i] = resp.StatusReply(l)
		}
		return resp.ArrayReply(out...)
	}
	help := optEq(sub, "help")
	known := help || optEq(sub, "encoding") || optEq(sub, "refcount") || optEq(sub, "idletime") || optEq(sub, "freq")
	if !known || help || len(args) != 3 {
		if known {
			return resp.Err("ERR wrong number of arguments for 'object|" + string(bytes.ToLower(cstr(sub))) + "' command")
		}
		return resp.Err(sanitize("ERR unknown subcommand '" + truncate(string(cstr(sub)), 128) + "'. Try OBJECT HELP."))
	}
	v := c.lookup(args[2])
	if v == nil {
		return resp.NilReply
	}
	switch {
	case optEq(sub, "encoding"):
		return resp.BulkString(c.objectEncoding(v))
	case optEq(sub, "refcount"):
		if sharedInt(v) {
			return resp.IntReply(math.MaxInt32) // a shared integer
		}
		return resp.One
	case optEq(sub, "idletime"):
		return resp.Zero
	}
	return resp.Err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// stringMatch reports whether s matches the glob pattern as Redis's
// stringmatchlen does (see internal/glob).
func stringMatch(pattern, s []byte, nocase bool) bool {
	if nocase {
		return glob.MatchFold(pattern, s)
	}
	return glob.Match(pattern, s)
}
