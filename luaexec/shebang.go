package luaexec

import (
	"github.com/deadbolt/deadbolt/resp"
	"strings"
)

// ScriptFlags are the flags of a "#!lua flags=..." first line (Redis 7).
type ScriptFlags uint8

// Script flags. FlagEvalCompat is set for scripts without a shebang line:
// Redis then applies its pre-7.0 rules (a script may write, and is not
// checked against its declared keys).
const (
	FlagNoWrites ScriptFlags = 1 << iota
	FlagAllowOOM
	FlagAllowStale
	FlagNoCluster
	FlagAllowCrossSlot
	FlagEvalCompat
)

var shebangFlags = []struct {
	name string
	flag ScriptFlags
}{
	{"no-writes", FlagNoWrites},
	{"allow-oom", FlagAllowOOM},
	{"allow-stale", FlagAllowStale},
	{"no-cluster", FlagNoCluster},
	{"allow-cross-slot-keys", FlagAllowCrossSlot},
}

// ParseShebang reads the flags of a script. skip is the length of the
// shebang line without its line feed (Lua must not see it). errMsg is the
// error Redis replies for a bad shebang, or "".
func ParseShebang(body []byte) (flags ScriptFlags, skip int, errMsg string) {
	if len(body) < 2 || body[0] != '#' || body[1] != '!' {
		return FlagEvalCompat, 0, ""
	}
	end := strings.IndexByte(string(body), '\n')
	if end < 0 {
		return 0, 0, "ERR Invalid script shebang"
	}
	parts, ok := splitArgs(string(body[:end]))
	if !ok || len(parts) == 0 {
		return 0, 0, "ERR Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return 0, 0, "ERR Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "flags=") {
			return 0, 0, "ERR Unknown lua shebang option: " + p
		}
		list := p[len("flags="):]
		if list == "" {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			found := false
			for _, f := range shebangFlags {
				if f.name == name {
					flags |= f.flag
					found = true
				}
			}
			if !found {
				return 0, 0, "ERR Unexpected flag in script shebang: " + name
			}
		}
	}
	return flags, end, ""
}

// splitArgs splits a line like Redis's sdssplitargs (the same rules as
// an inline request). ok is false for unbalanced quotes.
func splitArgs(line string) ([]string, bool) {
	words, ok := resp.SplitInline([]byte(line))
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = string(w)
	}
	return out, ok
}
