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
		readOnly := true
		for i := 2; i < len(argv); i++ {
			switch strings.ToLower(string(argv[i])) {
			case "get":
				i += 2
			case "set", "incrby":
				readOnly = false
				i += 3
			case "overflow":
				i++
			}
		}
		if readOnly {
			return []KeyRef{{Pos: 1, Flags: flagsROAccess, Perm: PermRead}}
		}
		return []KeyRef{{Pos: 1, Flags: flagsRWAccessUpdate, Perm: PermAll}}
	case strings.EqualFold(name, "sort") && len(argv) >= 2:
		// The sorted key, and the last STORE's destination. LIMIT skips
		// two arguments, GET and BY one; any other word none, so in
		// "LIMIT 0 STORE d" STORE is LIMIT's and d no key, as in Redis.
		out := []KeyRef{{Pos: 1, Flags: flagsROAccess, Perm: PermRead}}
		store := 0
		for i := 2; i < len(argv); i++ {
			switch strings.ToLower(string(argv[i])) {
			case "limit":
				i += 2
			case "store":
				if i+1 < len(argv) {
					store = i + 1
				}
			case "get", "by":
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
