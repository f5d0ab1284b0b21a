package acl

import "strings"

// Redis 7.0 finds the keys of most commands from their key specs, but of
// three from a procedure of their own, which both ACL checks and COMMAND
// GETKEYS(ANDFLAGS) use: SET and BITFIELD, whose key flags depend on the
// arguments (variable_flags), and SORT, whose STORE key no spec can find
// (its second spec is "unknown").

// NotKey reports whether the spec's arguments are not keys (SPUBLISH's
// and SSUBSCRIBE's shard channels): Redis leaves them out of ACL key
// checks and COMMAND GETKEYS.
func (s KeySpec) NotKey() bool {
	for _, f := range s.Flags {
		if strings.EqualFold(f, "not_key") {
			return true
		}
	}
	return false
}

// HasKeys reports whether a command with these specs has key arguments
// for COMMAND GETKEYS (a spec that is not not_key).
func HasKeys(specs []KeySpec) bool {
	for _, s := range specs {
		if !s.NotKey() {
			return true
		}
	}
	return false
}

var (
	flagsOWUpdate       = []string{"OW", "update"}
	flagsRWAccessUpdate = []string{"RW", "access", "update"}
	flagsROAccess       = []string{"RO", "access"}
)

// ProcKeys refines the keys FindKeys found in argv of the command name as
// Redis's procedures for SET, BITFIELD and SORT do; other commands' keys
// are returned as they are.
func ProcKeys(name string, argv [][]byte, keys []KeyRef) []KeyRef {
	switch {
	case strings.EqualFold(name, "set") && len(keys) == 1:
		k := KeyRef{Pos: 1, Flags: flagsOWUpdate, Perm: PermWrite}
		for _, a := range argv[min(3, len(argv)):] {
			if strings.EqualFold(string(a), "get") {
				k = KeyRef{Pos: 1, Flags: flagsRWAccessUpdate, Perm: PermAll}
				break
			}
		}
		return []KeyRef{k}
	case strings.EqualFold(name, "bitfield") && len(keys) == 1:
		// As Redis's bitfieldGetKeys: GET and OVERFLOW with their
		// arguments read; SET, INCRBY, or anything it cannot read (a
		// syntax error to come) counts as a write.
		readOnly := true
	ops:
		for i := 2; i < len(argv); i++ {
			left := len(argv) - i - 1
			switch a := strings.ToLower(string(argv[i])); {
			case a == "get" && left >= 2:
				i += 2
			case a == "overflow" && left >= 1:
				i++
			default:
				readOnly = false
				break ops
			}
		}
		if readOnly {
			return []KeyRef{{Pos: 1, Flags: flagsROAccess, Perm: PermRead}}
		}
		return []KeyRef{{Pos: 1, Flags: flagsRWAccessUpdate, Perm: PermAll}}
	case strings.EqualFold(name, "sort") && len(argv) >= 2:
		// The sorted key, and the last STORE's destination, read as SORT
		// itself reads its options (fsm/cmd_sort.go): LIMIT takes two
		// arguments, STORE, GET and BY one, when there are that many left.
		// Redis's sortGetKeys does not skip STORE's argument, so for "SORT
		// k STORE by STORE d" it checks "by" and SORT writes d; here d is
		// checked, the one difference from Redis's keys (COMPATIBILITY.md).
		out := []KeyRef{{Pos: 1, Flags: flagsROAccess, Perm: PermRead}}
		store := 0
		for i := 2; i < len(argv); i++ {
			left := len(argv) - i - 1
			switch a := strings.ToLower(string(argv[i])); {
			case a == "limit" && left >= 2:
				i += 2
			case a == "store" && left >= 1:
				store = i + 1
				i++
			case (a == "get" || a == "by") && left >= 1:
				i++
			}
		}
		if store > 0 {
			out = append(out, KeyRef{Pos: store, Flags: flagsOWUpdate, Perm: PermWrite})
		}
		return out
	}
	return keys
}
