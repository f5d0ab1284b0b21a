package fsm

import "strconv"

// Encodings as OBJECT ENCODING reports them (fsm/DESIGN.md, "Encodings").
//
// deadbolt stores every value one way; what it keeps is the one fact
// Redis 7.0's choice depends on besides the value itself: its history.
// Redis converts a small encoding (listpack, intset) to the big one
// (hashtable, skiplist) when a write passes a threshold and never back, and
// makes a string raw when APPEND, SETRANGE or a bit command changes it in
// place. Value.enc() records that; the thresholds are the replicated
// CONFIG parameters below, so every node decides alike.

// Value.enc() for strings.
const (
	encAuto  uint8 = iota // as tryObjectEncoding leaves it: int, embstr or raw by content
	encRaw                // changed in place (APPEND, SETRANGE, SETBIT, BITFIELD, BITOP): raw
	encNoInt              // made from a number's text (INCRBYFLOAT): embstr or raw by length
)

// encBig is Value.enc() for an aggregate converted to its big encoding.
const encBig uint8 = 1

// embstrLimit is Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT.
const embstrLimit = 44

// encLimits are the thresholds, Redis 7.0's defaults unless CONFIG SET.
type encLimits struct {
	hashEntries, hashValue int64
	zsetEntries, zsetValue int64
	intsetEntries          int64
}

var defaultEncLimits = encLimits{hashEntries: 512, hashValue: 64, zsetEntries: 128, zsetValue: 64, intsetEntries: 512}

// encSettings maps each threshold's CONFIG name to its field.
var encSettings = map[string]func(l *encLimits) *int64{
	"hash-max-listpack-entries": func(l *encLimits) *int64 { return &l.hashEntries },
	"hash-max-listpack-value":   func(l *encLimits) *int64 { return &l.hashValue },
	"zset-max-listpack-entries": func(l *encLimits) *int64 { return &l.zsetEntries },
	"zset-max-listpack-value":   func(l *encLimits) *int64 { return &l.zsetValue },
	"set-max-intset-entries":    func(l *encLimits) *int64 { return &l.intsetEntries },
}

func init() {
	for name, field := range encSettings {
		def := strconv.FormatInt(*field(&defaultEncLimits), 10)
		settingDefaults[name] = def
		replicatedSettings[name] = func(f *FSM, v string) bool {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return false
			}
			*field(&f.enc) = n
			if v == def {
				delete(f.settings, name) // snapshots stay version 1
			} else {
				f.settings[name] = v
			}
			return true
		}
	}
}

// objectEncoding is the encoding Redis 7.0 would report for v.
func (c *Ctx) objectEncoding(v *Value) string {
	switch v.Kind {
	case KindString:
		return stringEncoding(v)
	case KindHash:
		if v.enc() == encBig {
			return "hashtable"
		}
		return "listpack"
	case KindList:
		return "quicklist" // Redis 7.0 has no listpack-encoded lists
	case KindSet:
		if v.enc() == encBig {
			return "hashtable"
		}
		return "intset"
	case KindZSet:
		if v.enc() == encBig {
			return "skiplist"
		}
		return "listpack"
	}
	return "unknown"
}

func stringEncoding(v *Value) string {
	if v.enc() == encRaw {
		return "raw"
	}
	if v.enc() == encAuto && len(v.Str) <= 20 {
		if _, ok := parseInt64(v.Str); ok {
			return "int"
		}
	}
	if len(v.Str) <= embstrLimit {
		return "embstr"
	}
	return "raw"
}

// sharedInt reports whether Redis would hold v as one of its shared
// integers (0 to 9999), whose OBJECT REFCOUNT is INT_MAX.
func sharedInt(v *Value) bool {
	if v.Kind != KindString || stringEncoding(v) != "int" {
		return false
	}
	n, _ := parseInt64(v.Str)
	return n >= 0 && n < 10000
}

// hashSet sets a field as Redis's hashTypeSet does for the encoding: a
// field or value longer than hash-max-listpack-value, or one entry more
// than hash-max-listpack-entries, converts a listpack to a hashtable.
func (c *Ctx) hashSet(v *Value, field, value []byte) bool {
	added := v.hash().Set(field, value)
	l := &c.f.enc
	if v.enc() != encBig && (int64(len(field)) > l.hashValue || int64(len(value)) > l.hashValue || int64(v.hash().Len()) > l.hashEntries) {
		v.setEnc(encBig)
	}
	return added
}

// setAdd adds a member as Redis's setTypeAdd does for the encoding: a
// member that is not an integer, or one more than set-max-intset-entries,
// converts an intset to a hashtable.
func (c *Ctx) setAdd(v *Value, m []byte) bool {
	if !v.set().Add(m) {
		return false
	}
	if v.enc() != encBig {
		if _, ok := parseInt64(m); !ok || int64(v.set().Len()) > c.f.enc.intsetEntries {
			v.setEnc(encBig)
		}
	}
	return true
}

// zsetAdded follows a new member of a sorted set as Redis's zsetAdd does:
// a member longer than zset-max-listpack-value, or one more than
// zset-max-listpack-entries, converts a listpack to a skiplist. (A new
// key's first member is checked the same way when it is created.)
func (c *Ctx) zsetAdded(v *Value, m []byte) {
	l := &c.f.enc
	if v.enc() != encBig && (int64(len(m)) > l.zsetValue || int64(v.zset().Len()) > l.zsetEntries) {
		v.setEnc(encBig)
	}
}

// settleEncoding decides a restored value's encoding as Redis does when it
// loads an RDB file: by the value alone (a string as tryObjectEncoding
// leaves it; an aggregate small if it is within every threshold).
func (l *encLimits) settleEncoding(v *Value) {
	v.setEnc(encAuto)
	switch v.Kind {
	case KindHash:
		big := int64(v.hash().Len()) > l.hashEntries
		v.hash().peekEach(func(f, val []byte) bool {
			big = big || int64(len(f)) > l.hashValue || int64(len(val)) > l.hashValue
			return !big
		})
		if big {
			v.setEnc(encBig)
		}
	case KindSet:
		big := int64(v.set().Len()) > l.intsetEntries
		v.set().Each(func(m string) bool {
			_, ok := parseInt64([]byte(m))
			big = big || !ok
			return !big
		})
		if big {
			v.setEnc(encBig)
		}
	case KindZSet:
		big := int64(v.zset().Len()) > l.zsetEntries
		v.zset().Each(func(m string, _ float64) bool {
			big = big || int64(len(m)) > l.zsetValue
			return !big
		})
		if big {
			v.setEnc(encBig)
		}
	}
}

// The encoding history lives in the top two bits of createdHi, whose
// other 14 bits are the high part of the lock created stamp (locks.go):
// together they fill what was padding, so a Value stays 96 bytes.
const (
	encShift      = 14
	createdHiMask = 1<<encShift - 1
)

func (v *Value) enc() uint8 { return uint8(v.createdHi >> encShift) }

func (v *Value) setEnc(e uint8) {
	v.createdHi = v.createdHi&createdHiMask | uint16(e)<<encShift
}
