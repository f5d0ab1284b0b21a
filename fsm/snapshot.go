package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/deadbolt/deadbolt/internal/gctune"
)

// Snapshot format, version 4 (3 without the cluster id, 2 without lock
// shapes either, 1 without replicated settings either, so that a node from
// before them can still install it). Everything is written in a fixed order
// (sorted keys, sorted script hashes, tombstones oldest first) so that two
// state machines that applied the same log write identical bytes.
//
//	magic "DBOLTSNP", version byte
//	now (varint), version (uvarint)
//	tombstones: floor, count, then (db, key, version) oldest first
//	scripts: count, then (sha, body) by sha
//	cluster members: count, then (id, client address) by id
//	script engine state (math.random generator, cjson settings), bytes
//	version 2 only: replicated settings: count, then (name, value) by name
//	version 2 only: function libraries: count, then code by library name
//	version 4 only: the cluster id (clusterid.go), a string
//	per non-empty db: db+1 (uvarint), key count, then keys in byte order:
//	  key, kind byte, deadline (varint), version (uvarint),
//	  version 3 only: lock shape byte (locks.go), then if not 0 the
//	  state time it was created at (uvarint),
//	  payload
//	0 (end)
//
// Strings are uvarint-length-prefixed. Unknown versions are refused.
const (
	snapshotMagic   = "DBOLTSNP"
	snapshotVersion = 4
	maxSnapString   = 1 << 31
)

// ErrSnapshotFormat is returned when a snapshot cannot be decoded.
var ErrSnapshotFormat = errors.New("fsm: malformed snapshot")

type encoder struct {
	w   *bufio.Writer
	buf [binary.MaxVarintLen64]byte
}

func (e *encoder) uvarint(x uint64) {
	n := binary.PutUvarint(e.buf[:], x)
	e.w.Write(e.buf[:n])
}

func (e *encoder) varint(x int64) {
	n := binary.PutVarint(e.buf[:], x)
	e.w.Write(e.buf[:n])
}

func (e *encoder) bytes(b []byte) {
	e.uvarint(uint64(len(b)))
	e.w.Write(b)
}

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.w.WriteString(s)
}

func (e *encoder) float(f float64) {
	binary.LittleEndian.PutUint64(e.buf[:8], math.Float64bits(f))
	e.w.Write(e.buf[:8])
}

type decoder struct {
	r   *bufio.Reader
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, err := binary.ReadUvarint(d.r)
	if err != nil {
		d.fail(fmt.Errorf("%w: %v", ErrSnapshotFormat, err))
	}
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, err := binary.ReadVarint(d.r)
	if err != nil {
		d.fail(fmt.Errorf("%w: %v", ErrSnapshotFormat, err))
	}
	return x
}

// count reads an element count, refusing absurd ones before anything is
// allocated for them.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > maxSnapString {
		d.fail(fmt.Errorf("%w: count %d", ErrSnapshotFormat, n))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	b := make([]byte, 0, min(n, 1<<20))
	for len(b) < n {
		chunk := min(n-len(b), 1<<20)
		start := len(b)
		b = append(b, make([]byte, chunk)...)
		if _, err := io.ReadFull(d.r, b[start:]); err != nil {
			d.fail(fmt.Errorf("%w: %v", ErrSnapshotFormat, err))
			return nil
		}
	}
	return b
}

func (d *decoder) float() float64 {
	var b [8]byte
	if d.err != nil {
		return 0
	}
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		d.fail(fmt.Errorf("%w: %v", ErrSnapshotFormat, err))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

// Snapshot writes the whole state to w.
func (f *FSM) Snapshot(w io.Writer) error { return f.SnapshotUpTo(w, snapshotVersion) }

// SnapshotUpTo writes the whole state to w in a format version no higher
// than max, for a build that reads up to max (a downgrade). Version 2
// leaves out the lock shapes (which only DEADBOLT LOCKS and the lock
// counters read); a state with replicated settings or function libraries
// cannot be written below version 2.
func (f *FSM) SnapshotUpTo(w io.Writer, max int) error {
	// The lowest version that carries the state, so that a node from
	// before a format change can install it while it can.
	version := byte(1)
	if len(f.settings) != 0 || len(f.libraries) != 0 {
		version = 2
	}
	if f.hasLockShapes() {
		version = 3
	}
	if f.clusterID != "" {
		version = 4 // left out below 4, as lock shapes are below 3
	}
	switch {
	case max < 1 || max > snapshotVersion:
		return fmt.Errorf("%w: no format version %d (this build writes 1 to %d)", ErrSnapshotFormat, max, snapshotVersion)
	case max < 2 && (len(f.settings) != 0 || len(f.libraries) != 0):
		return fmt.Errorf("%w: replicated settings or function libraries need format version 2", ErrSnapshotFormat)
	case int(version) > max:
		version = byte(max)
	}
	e := &encoder{w: bufio.NewWriterSize(w, 64<<10)}
	e.w.WriteString(snapshotMagic)
	e.w.WriteByte(version)
	e.varint(f.now)
	e.uvarint(f.version)

	e.uvarint(f.tombs.floor)
	live := []tombEntry(nil)
	if f.tombs.byKey != nil {
		live = f.tombs.liveEntries()
	}
	e.uvarint(uint64(len(live)))
	for _, t := range live {
		e.uvarint(uint64(t.k.db))
		e.str(t.k.key)
		e.uvarint(t.v)
	}

	shas := make([]string, 0, len(f.scripts))
	for sha := range f.scripts {
		shas = append(shas, sha)
	}
	sort.Strings(shas)
	e.uvarint(uint64(len(shas)))
	for _, sha := range shas {
		e.str(sha)
		e.bytes(f.scripts[sha].body)
	}

	ids := f.Nodes()
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.str(id)
		e.str(f.nodes[id])
	}

	var engine []byte
	if f.lua != nil {
		engine = f.lua.State()
	}
	e.bytes(engine)

	if version >= 2 {
		names := make([]string, 0, len(f.settings))
		for name := range f.settings {
			names = append(names, name)
		}
		sort.Strings(names)
		e.uvarint(uint64(len(names)))
		for _, name := range names {
			e.str(name)
			e.str(f.settings[name])
		}
		libs := f.sortedLibraries()
		e.uvarint(uint64(len(libs)))
		for _, lib := range libs {
			e.bytes(lib.code)
		}
		if version >= 4 {
			e.str(f.clusterID)
		}
	}

	for i, ks := range f.dbs {
		if ks.keys.len() == 0 {
			continue
		}
		e.uvarint(uint64(i + 1))
		keys := ks.sortedKeys()
		e.uvarint(uint64(len(keys)))
		for _, k := range keys {
			v := ks.keys.get(k)
			e.str(k)
			e.w.WriteByte(byte(v.Kind))
			e.varint(v.Deadline)
			e.uvarint(v.Version)
			if version >= 3 {
				e.w.WriteByte(byte(v.lock))
				if v.lock != shapeNone {
					e.uvarint(uint64(v.created()))
				}
			}
			v.encode(e)
		}
	}
	e.uvarint(0)
	return e.w.Flush()
}

func (v *Value) encode(e *encoder) {
	switch v.Kind {
	case KindString:
		e.bytes(v.Str)
	case KindHash:
		e.uvarint(uint64(v.hash().Len()))
		v.hash().peekEach(func(f, val []byte) bool { // written, not kept
			e.bytes(f)
			e.bytes(val)
			return true
		})
	case KindList:
		v.list().encode(e)
	case KindSet:
		v.set().encode(e)
	case KindZSet:
		v.zset().encode(e)
	default:
		panic("fsm: unknown kind in keyspace")
	}
}

func decodeValue(d *decoder, kind Kind) *Value {
	v := &Value{Kind: kind}
	switch kind {
	case KindString:
		v.Str = d.bytes()
	case KindHash:
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			f := d.bytes()
			v.hash().Set(f, d.bytes())
		}
	case KindList:
		v.agg = decodeList(d)
	case KindSet:
		v.agg = decodeSet(d)
	case KindZSet:
		v.agg = decodeZSet(d)
	default:
		d.fail(fmt.Errorf("%w: unknown kind %d", ErrSnapshotFormat, kind))
	}
	return v
}

// Restore replaces the whole state with the snapshot read from r. On error
// the state machine is left unchanged.
func (f *FSM) Restore(r io.Reader) error {
	// What a restore allocates stays live: the collector need not run
	// at a small GOGC meanwhile (internal/gctune).
	defer gctune.Bulk()()
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10)}
	var head [len(snapshotMagic) + 1]byte
	if _, err := io.ReadFull(d.r, head[:]); err != nil || string(head[:len(snapshotMagic)]) != snapshotMagic {
		return fmt.Errorf("%w: bad header", ErrSnapshotFormat)
	}
	version := head[len(snapshotMagic)]
	if version < 1 || version > snapshotVersion {
		return fmt.Errorf("%w: unsupported version %d", ErrSnapshotFormat, version)
	}
	n := newState(f.opt)
	n.now = d.varint()
	n.version = d.uvarint()

	floor := d.uvarint()
	n.tombs.reset(floor)
	for i, c := 0, d.count(); i < c && d.err == nil; i++ {
		db := d.uvarint()
		key := string(d.bytes())
		ver := d.uvarint()
		if db >= NumDBs {
			d.fail(fmt.Errorf("%w: db %d", ErrSnapshotFormat, db))
		}
		n.tombs.add(int(db), key, ver)
	}

	for i, c := 0, d.count(); i < c && d.err == nil; i++ {
		sha := string(d.bytes())
		n.scripts[sha] = storedScript{sha: sha, body: d.bytes()}
	}

	for i, c := 0, d.count(); i < c && d.err == nil; i++ {
		id := string(d.bytes())
		n.nodes[id] = string(d.bytes())
	}

	engine := d.bytes()
	var libCodes [][]byte

	if version >= 2 {
		for i, c := 0, d.count(); i < c && d.err == nil; i++ {
			name, value := string(d.bytes()), string(d.bytes())
			set, ok := replicatedSettings[name]
			if d.err == nil && (!ok || !set(n, value)) {
				d.fail(fmt.Errorf("%w: setting %q = %q", ErrSnapshotFormat, name, value))
			}
		}
		for i, c := 0, d.count(); i < c && d.err == nil; i++ {
			libCodes = append(libCodes, d.bytes())
		}
		if version >= 4 {
			n.clusterID = string(d.bytes())
			if d.err == nil && !ValidClusterID(n.clusterID) {
				d.fail(fmt.Errorf("%w: cluster id %q", ErrSnapshotFormat, n.clusterID))
			}
		}
	}

	for d.err == nil {
		db := d.uvarint()
		if db == 0 || d.err != nil {
			break
		}
		if db > NumDBs {
			d.fail(fmt.Errorf("%w: db %d", ErrSnapshotFormat, db-1))
			break
		}
		ks := n.dbs[db-1]
		c := d.count()
		// A count is only a hint until the keys are read: a damaged one
		// must not make the table take gigabytes.
		ks.keys.reserve(min(c, 1<<22))
		for i := 0; i < c && d.err == nil; i++ {
			keyBytes := d.bytes()
			kind, err := d.r.ReadByte()
			if err != nil {
				d.fail(fmt.Errorf("%w: %v", ErrSnapshotFormat, err))
				break
			}
			deadline := d.varint()
			ver := d.uvarint()
			shape, created := shapeNone, uint64(0)
			if version >= 3 {
				b, err := d.r.ReadByte()
				if err != nil {
					d.fail(fmt.Errorf("%w: %v", ErrSnapshotFormat, err))
					break
				}
				shape = lockShape(b)
				if shape != shapeNone {
					created = d.uvarint()
				}
				if !shape.fits(Kind(kind)) || created > createdMax {
					d.fail(fmt.Errorf("%w: lock shape %d, created %d on a %s key", ErrSnapshotFormat, shape, created, Kind(kind)))
					break
				}
			}
			v := decodeValue(d, Kind(kind))
			v.lock = shape
			v.setCreated(int64(created))
			n.enc.settleEncoding(v)
			v.Deadline = deadline
			v.Version = ver
			v.name = v.takeName(keyBytes) // as put does
			ks.keys.set(v)
			if deadline != 0 {
				n.expires.add(int(db-1), v.name, deadline)
			}
		}
	}
	if d.err != nil {
		return d.err
	}
	// Keep this node's script engine: its compiled functions are derived
	// state (dropped), its generator state is restored.
	n.lua = f.lua
	n.lockStats = f.lockStats
	if n.lua != nil {
		if err := n.lua.SetState(engine); err != nil {
			return fmt.Errorf("%w: %v", ErrSnapshotFormat, err)
		}
		n.lua.Forget()
		n.lua.DropLibrary("")
		for _, code := range libCodes {
			if _, r := n.loadLibrary(code, false, restoredNames); r.IsError() {
				n.lua.DropLibrary("") // f's libraries load again when called
				return fmt.Errorf("%w: a function library does not load: %s", ErrSnapshotFormat, r.String())
			}
		}
		n.warnSharedFunctionNames()
	}
	n.aclPub = f.aclPub
	n.mem.over = f.mem.over
	if n.mem.memOn() {
		n.memRecount() // the setting was read before the keys
	} else {
		n.memStop()
	}
	*f = *n
	f.aclPub.Store(f.users)
	return nil
}
