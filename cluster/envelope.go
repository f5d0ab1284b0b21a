package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/deadbolt/deadbolt/fsm"
)

// The log envelope: how one state machine command travels through the
// Raft log and between nodes. Small, versioned, hand-rolled:
//
//	version byte (1)
//	time     varint   leader's stamp, Unix ms
//	db       uvarint
//	nargs    uvarint, then each arg as uvarint length + bytes
//	ntx      uvarint, then each queued command as nargs + args
//	nwatch   uvarint, then each watch as db, key, version
//
// A single command has nargs > 0 and ntx = 0; a transaction has nargs = 0.
//
// A batch (version 2) is what a leader's group commit writes when several
// commands were waiting at once; it packs them into one log entry:
//
//	version byte (2)
//	n        uvarint  number of commands, at least 1
//	each     uvarint length + a version-1 envelope (its own time stamp)
//
// Batches do not nest. A lone command is still written as version 1.
//
// A command sent by an ACL user other than the default one (version 3) is
// a version-1 envelope followed by the user's name:
//
//	version byte (3), then the version-1 fields
//	user     uvarint length + bytes
//
// The state machine checks what that user's scripts call against the
// users it holds at that log index. A node that does not know version 3
// refuses the entry rather than run it without the check.
//
// A command whose outcome depends on a rule newer than version 1 (version
// 4) is a version-1 envelope followed by flags naming the rules:
//
//	version byte (4), then the version-1 fields
//	flags    uvarint, with bit 1 (bit 2 alone is version 3's meaning,
//	         written as version 3):
//	         1  function names compare without case (Redis 7.0's rule:
//	            fsm.Command.FoldFunctionNames)
//	         2  a user follows (as version 3)
//	user     uvarint length + bytes, not empty, when flags has 2
//
// A node that does not know version 4 refuses it by name
// (ErrNewerEnvelope), and so does a node that knows version 4 but not
// every bit set in flags: a rule it does not know would otherwise be
// applied as the old one. The leader writes version 4 only for the
// commands whose outcome the rule changes (fsm.NamesFunctions), and never
// with --preserve-downgrade (upgrade.go).
const (
	envelopeVersion = 1
	batchVersion    = 2
	userVersion     = 3
	flagsVersion    = 4
)

// Version 4's flags.
const (
	flagFoldNames = 1 << iota
	flagUser
	knownFlags = flagFoldNames | flagUser
)

// isCommand reports whether b starts as one command's envelope.
func isCommand(b []byte) bool {
	return len(b) > 0 && (b[0] == envelopeVersion || b[0] == userVersion || b[0] == flagsVersion)
}

// maxEnvelopeCount bounds counts read from an envelope before anything is
// allocated for them.
const maxEnvelopeCount = 1 << 30

// ErrBadEnvelope is returned for bytes that are not a valid envelope.
var ErrBadEnvelope = errors.New("cluster: malformed log envelope")

// Entry is a command with the time it is applied at.
type Entry struct {
	Time int64
	Cmd  fsm.Command
}

func appendUvarint(dst []byte, x uint64) []byte { return binary.AppendUvarint(dst, x) }

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendArgs(dst []byte, args [][]byte) []byte {
	dst = appendUvarint(dst, uint64(len(args)))
	for _, a := range args {
		dst = appendBytes(dst, a)
	}
	return dst
}

// AppendEntry appends the encoding of e to dst.
func AppendEntry(dst []byte, e Entry) []byte {
	dst = slices.Grow(dst, maxEntrySize(e)) // one allocation, not one per doubling
	var flags uint64
	switch {
	case e.Cmd.FoldFunctionNames:
		flags = flagFoldNames
		if e.Cmd.User != "" {
			flags |= flagUser
		}
		dst = append(dst, flagsVersion)
	case e.Cmd.User != "":
		dst = append(dst, userVersion)
	default:
		dst = append(dst, envelopeVersion)
	}
	dst = binary.AppendVarint(dst, e.Time)
	dst = appendUvarint(dst, uint64(e.Cmd.DB))
	dst = appendArgs(dst, e.Cmd.Args)
	dst = appendUvarint(dst, uint64(len(e.Cmd.Tx)))
	for _, args := range e.Cmd.Tx {
		dst = appendArgs(dst, args)
	}
	dst = appendUvarint(dst, uint64(len(e.Cmd.Watch)))
	for _, w := range e.Cmd.Watch {
		dst = appendUvarint(dst, uint64(w.DB))
		dst = appendBytes(dst, []byte(w.Key))
		dst = appendUvarint(dst, w.Version)
	}
	if flags != 0 {
		dst = appendUvarint(dst, flags)
	}
	if e.Cmd.User != "" {
		dst = appendBytes(dst, []byte(e.Cmd.User))
	}
	return dst
}

// maxEntrySize bounds the size of e's envelope.
func maxEntrySize(e Entry) int {
	n := 1 + 6*binary.MaxVarintLen64 + maxArgsSize(e.Cmd.Args) + len(e.Cmd.User)
	for _, args := range e.Cmd.Tx {
		n += maxArgsSize(args)
	}
	for _, w := range e.Cmd.Watch {
		n += 3*binary.MaxVarintLen64 + len(w.Key)
	}
	return n
}

func maxArgsSize(args [][]byte) int {
	n := binary.MaxVarintLen64
	for _, a := range args {
		n += binary.MaxVarintLen64 + len(a)
	}
	return n
}

type envReader struct {
	b   []byte
	err error
	// pool, when set, is where args takes its slices from: the commands
	// of one batch share a few allocations instead of one each.
	pool *[][]byte
}

// argPoolSize is how many arguments' slots a batch's pool takes at a
// time: about ten Redisson lock or unlock scripts' EVALSHAs.
const argPoolSize = 64

// argSlots returns an empty slice with room for n arguments, from the
// pool if there is one; its capacity ends at n, so an append to it cannot
// run into the next command's arguments.
func (r *envReader) argSlots(n int) [][]byte {
	if r.pool == nil {
		return make([][]byte, 0, n)
	}
	p := *r.pool
	if cap(p)-len(p) < n {
		p = make([][]byte, 0, max(n, argPoolSize))
	}
	*r.pool = p[:len(p)+n]
	return p[len(p) : len(p) : len(p)+n]
}

func (r *envReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = ErrBadEnvelope
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *envReader) count() int {
	n := r.uvarint()
	if n > maxEnvelopeCount || n > uint64(len(r.b)) {
		// Every element takes at least one byte.
		r.err = ErrBadEnvelope
		return 0
	}
	return int(n)
}

func (r *envReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = ErrBadEnvelope
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *envReader) args() [][]byte {
	n := r.count()
	if n == 0 {
		return nil
	}
	out := r.argSlots(n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.bytes())
	}
	return out
}

// AppendBatch appends a batch (version 2) of the given version-1
// envelopes to dst, in order.
func AppendBatch(dst []byte, envelopes ...[]byte) []byte {
	dst = append(dst, batchVersion)
	dst = appendUvarint(dst, uint64(len(envelopes)))
	for _, e := range envelopes {
		dst = appendBytes(dst, e)
	}
	return dst
}

// DecodeEntries decodes a log entry: one command (version 1, 3 or 4) or
// a batch (version 2), in order. The returned arguments
// alias b.
func DecodeEntries(b []byte) ([]Entry, error) {
	if isCommand(b) {
		e, err := DecodeEntry(b)
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}
	if len(b) == 0 || b[0] != batchVersion {
		return nil, unknownVersion(b)
	}
	r := &envReader{b: b[1:]}
	n := r.count()
	if r.err == nil && n == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrBadEnvelope)
	}
	out := make([]Entry, 0, n)
	var pool [][]byte // the commands' arguments, shared (argSlots)
	for i := 0; i < n && r.err == nil; i++ {
		sub := r.bytes()
		if r.err != nil {
			break
		}
		e, err := decodeEntry(sub, &pool)
		if err != nil {
			return nil, fmt.Errorf("batch command %d: %w", i, err)
		}
		out = append(out, e)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: trailing bytes", ErrBadEnvelope)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// DecodeEntry decodes one command's envelope, version 1, 3 or 4
// (forwarding carries 1 and 3). The returned arguments alias b.
func DecodeEntry(b []byte) (Entry, error) { return decodeEntry(b, nil) }

// decodeEntry is DecodeEntry, the arguments' slices taken from pool if it
// is not nil (envReader.argSlots).
func decodeEntry(b []byte, pool *[][]byte) (Entry, error) {
	if !isCommand(b) {
		return Entry{}, unknownVersion(b)
	}
	r := &envReader{b: b[1:], pool: pool}
	var e Entry
	t, n := binary.Varint(r.b)
	if n <= 0 {
		return Entry{}, ErrBadEnvelope
	}
	r.b = r.b[n:]
	e.Time = t
	db := r.uvarint()
	if db >= fsm.NumDBs {
		r.err = ErrBadEnvelope
	}
	e.Cmd.DB = int(db)
	e.Cmd.Args = r.args()
	ntx := r.count()
	if ntx > 0 {
		e.Cmd.Tx = make([][][]byte, 0, ntx)
		for i := 0; i < ntx && r.err == nil; i++ {
			args := r.args()
			if len(args) == 0 {
				r.err = ErrBadEnvelope
			}
			e.Cmd.Tx = append(e.Cmd.Tx, args)
		}
	}
	nw := r.count()
	for i := 0; i < nw && r.err == nil; i++ {
		wdb := r.uvarint()
		key := r.bytes()
		ver := r.uvarint()
		if wdb >= fsm.NumDBs {
			r.err = ErrBadEnvelope
		}
		e.Cmd.Watch = append(e.Cmd.Watch, fsm.Watch{DB: int(wdb), Key: string(key), Version: ver})
	}
	hasUser := b[0] == userVersion
	if b[0] == flagsVersion {
		flags, err := r.flags()
		if err != nil {
			return Entry{}, err
		}
		e.Cmd.FoldFunctionNames = flags&flagFoldNames != 0
		hasUser = flags&flagUser != 0
	}
	if hasUser {
		if e.Cmd.User = string(r.bytes()); r.err == nil && e.Cmd.User == "" {
			r.err = ErrBadEnvelope
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: trailing bytes", ErrBadEnvelope)
	}
	if r.err == nil && e.Cmd.Args == nil && e.Cmd.Tx == nil {
		// An empty transaction (MULTI then EXEC) is valid: Tx non-nil, empty.
		e.Cmd.Tx = [][][]byte{}
	}
	if r.err != nil {
		return Entry{}, r.err
	}
	return e, nil
}

// validEntries reports what DecodeEntries would, without building the
// entries: it walks the envelope and allocates nothing.
func validEntries(b []byte) error {
	if isCommand(b) {
		return validEntry(b)
	}
	if len(b) == 0 || b[0] != batchVersion {
		return unknownVersion(b)
	}
	r := envReader{b: b[1:]}
	n := r.count()
	if r.err == nil && n == 0 {
		return fmt.Errorf("%w: empty batch", ErrBadEnvelope)
	}
	for i := 0; i < n && r.err == nil; i++ {
		sub := r.bytes()
		if r.err != nil {
			break
		}
		if err := validEntry(sub); err != nil {
			return fmt.Errorf("batch command %d: %w", i, err)
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: trailing bytes", ErrBadEnvelope)
	}
	return r.err
}

// validEntry is validEntries for one command's envelope (DecodeEntry).
func validEntry(b []byte) error {
	if !isCommand(b) {
		return unknownVersion(b)
	}
	r := envReader{b: b[1:]}
	_, n := binary.Varint(r.b)
	if n <= 0 {
		return ErrBadEnvelope
	}
	r.b = r.b[n:]
	if r.uvarint() >= fsm.NumDBs {
		r.err = ErrBadEnvelope
	}
	r.skipArgs()
	ntx := r.count()
	for i := 0; i < ntx && r.err == nil; i++ {
		if r.skipArgs() == 0 {
			r.err = ErrBadEnvelope
		}
	}
	nw := r.count()
	for i := 0; i < nw && r.err == nil; i++ {
		if r.uvarint() >= fsm.NumDBs {
			r.err = ErrBadEnvelope
		}
		r.bytes()
		r.uvarint()
	}
	hasUser := b[0] == userVersion
	if b[0] == flagsVersion {
		flags, err := r.flags()
		if err != nil {
			return err
		}
		hasUser = flags&flagUser != 0
	}
	if hasUser && len(r.bytes()) == 0 && r.err == nil {
		r.err = ErrBadEnvelope
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: trailing bytes", ErrBadEnvelope)
	}
	return r.err
}

// skipArgs passes over what args would read and returns its count.
func (r *envReader) skipArgs() int {
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		r.bytes()
	}
	return n
}

// flags reads version 4's flags: a bit this build does not know is a
// newer build's rule, refused by name (ErrNewerEnvelope); none at all,
// or a user without a rule (version 3's encoding), is not an envelope any
// build writes.
func (r *envReader) flags() (uint64, error) {
	flags := r.uvarint()
	switch {
	case r.err != nil:
		return 0, r.err
	case flags&^knownFlags != 0:
		return 0, fmt.Errorf("%w: version %d with flags %#x, this build knows %#x", ErrNewerEnvelope, flagsVersion, flags, knownFlags)
	case flags == 0:
		return 0, fmt.Errorf("%w: version %d without flags", ErrBadEnvelope, flagsVersion)
	case flags&flagFoldNames == 0:
		// a user and no rule: version 3, which no build writes as 4
		return 0, fmt.Errorf("%w: version %d with flags %#x (no rule)", ErrBadEnvelope, flagsVersion, flags)
	}
	return flags, nil
}
