package acl

import (
	"strconv"
	"strings"
)

// KeySpec is a Redis 7 key specification: where a command's keys start
// (begin search) and how many follow (find keys), with the flags that say
// how the command uses them.
type KeySpec struct {
	Notes string
	Flags []string // Redis's: RO RW OW RM, access update insert delete, ...

	Begin     byte // 'i' index, 'k' keyword, 'u' unknown
	Index     int
	Keyword   string
	StartFrom int

	Find byte // 'r' range, 'n' keynum, 'u' unknown
	// range: lastkey, keystep, limit; keynum: keynumidx, firstkey, keystep
	A, B, C int

	perm uint8 // permission the keys need: PermRead, PermWrite
}

// Key permissions of a key pattern (%R~, %W~, ~ is both).
const (
	PermRead  uint8 = 1
	PermWrite uint8 = 2
	PermAll         = PermRead | PermWrite
)

// permOf is the permission a key with these flags needs: reading for
// "access", writing for "insert", "delete" and "update" (Redis's rule).
func permOf(flags []string) uint8 {
	var p uint8
	for _, f := range flags {
		switch strings.ToLower(f) {
		case "access":
			p |= PermRead
		case "insert", "delete", "update":
			p |= PermWrite
		}
	}
	return p
}

// ParseKeySpecs decodes the command tables' key spec notation: specs
// separated by ';', each "flags|begin|find[|notes]" where begin is iN
// (index N), kWORD,N (keyword WORD searched from N) or u (unknown), and
// find is rLAST,STEP,LIMIT (range), nIDX,FIRST,STEP (keynum) or u.
func ParseKeySpecs(s string) []KeySpec {
	if s == "" {
		return nil
	}
	var out []KeySpec
	for _, one := range strings.Split(s, ";") {
		parts := strings.SplitN(one, "|", 4)
		ks := KeySpec{Flags: strings.Fields(parts[0])}
		ks.perm = permOf(ks.Flags)
		if len(parts) == 4 {
			ks.Notes = parts[3]
		}
		b := parts[1]
		ks.Begin = b[0]
		switch ks.Begin {
		case 'i':
			ks.Index = atoi(b[1:])
		case 'k':
			word, from, _ := strings.Cut(b[1:], ",")
			ks.Keyword, ks.StartFrom = word, atoi(from)
		}
		f := parts[2]
		ks.Find = f[0]
		if ks.Find != 'u' {
			n := strings.Split(f[1:], ",")
			ks.A, ks.B, ks.C = atoi(n[0]), atoi(n[1]), atoi(n[2])
		}
		out = append(out, ks)
	}
	return out
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic("acl: bad number in a command table: " + s)
	}
	return n
}

// KeyRef is one key argument of a command line.
type KeyRef struct {
	Pos   int      // index in argv
	Flags []string // its spec's flags
	Perm  uint8    // permission it needs
}

// FindKeys finds the key arguments of argv as Redis's getKeysUsingKeySpecs
// does. ok is false when a spec points outside the arguments.
func FindKeys(specs []KeySpec, argv [][]byte) (keys []KeyRef, ok bool) {
	argc := len(argv)
	for _, s := range specs {
		if s.NotKey() {
			continue // a shard channel (SPUBLISH): Redis's default search skips it
		}
		first := 0
		switch s.Begin {
		case 'i':
			first = s.Index
		case 'k':
			start, end, dir := s.StartFrom, argc-1, 1
			if s.StartFrom <= 0 {
				start, end, dir = argc+s.StartFrom, 0, -1
			}
			for i := start; i != end && i >= 1 && i < argc; i += dir {
				if strings.EqualFold(string(argv[i]), s.Keyword) {
					first = i + 1
					break
				}
			}
			if first == 0 {
				continue
			}
		default:
			continue
		}
		last, step := 0, 1
		switch s.Find {
		case 'r':
			step = s.B
			switch {
			case s.A >= 0:
				last = first + s.A
			case s.C == 0:
				last = argc + s.A
			default:
				last = first + (argc-first)/s.C + s.A
			}
		case 'n':
			if first+s.A >= argc {
				return nil, false
			}
			n, err := strconv.Atoi(string(argv[first+s.A]))
			if err != nil || n < 0 {
				return nil, false
			}
			first += s.B
			last, step = first+n-1, s.C
		default:
			continue
		}
		if last >= argc || last < first || first >= argc || step <= 0 {
			return nil, false
		}
		perm := s.perm
		if perm == 0 {
			perm = permOf(s.Flags)
		}
		for i := first; i <= last; i += step {
			keys = append(keys, KeyRef{Pos: i, Flags: s.Flags, Perm: perm})
		}
	}
	return keys, true
}
