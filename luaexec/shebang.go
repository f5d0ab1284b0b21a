package luaexec

import (
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

// splitArgs splits a line like Redis's sdssplitargs: words separated by
// white space, "double quoted" strings with escapes, 'single quoted'
// strings. ok is false for unbalanced quotes.
func splitArgs(line string) ([]string, bool) {
	var out []string
	i := 0
	for {
		for i < len(line) && isSpace(int(line[i])) {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			if i >= len(line) {
				if inq || insq {
					return nil, false
				}
				break
			}
			c := line[i]
			switch {
			case inq:
				if c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isXDigit(int(line[i+2])) && isXDigit(int(line[i+3])) {
					cur = append(cur, byte(digitVal(line[i+2])*16+digitVal(line[i+3])))
					i += 3
				} else if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				} else if c == '"' {
					if i+1 < len(line) && !isSpace(int(line[i+1])) {
						return nil, false
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			case insq:
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					cur = append(cur, '\'')
				} else if c == '\'' {
					if i+1 < len(line) && !isSpace(int(line[i+1])) {
						return nil, false
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			default:
				switch {
				case isSpace(int(c)):
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		out = append(out, string(cur))
	}
}
