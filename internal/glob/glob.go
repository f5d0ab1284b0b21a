// Package glob matches Redis glob-style patterns (KEYS, SCAN MATCH,
// PSUBSCRIBE, PUBSUB CHANNELS, CONFIG GET): * ? [set] [^set] [a-z] and \
// escapes, with Redis's quirks.
package glob

// Match reports whether s matches the glob pattern as Redis's
// stringmatchlen does: '*', '?', '[...]' classes with '^' negation, 'a-z'
// ranges (ends in either order) and '\' escapes, and a '\' before any
// other character. Quirks kept on purpose: an unterminated '[' class runs
// to the end of the pattern, "[a-]" is the range from 'a' to ']', and
// bytes above 0x7f compare as C's signed char in ranges.
func Match(pattern, s []byte) bool {
	skip := false
	return matchImpl(pattern, s, false, &skip)
}

// MatchFold is Match ignoring ASCII case, as Redis's nocase mode.
func MatchFold(pattern, s []byte) bool {
	skip := false
	return matchImpl(pattern, s, true, &skip)
}

func matchImpl(p, s []byte, nocase bool, skipLonger *bool) bool {
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if matchImpl(p[1:], s, nocase, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if len(p) >= 2 && p[0] == '\\' {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if len(p) > 0 && p[0] == ']' {
					break
				} else if len(p) == 0 {
					// Unterminated class: Redis steps back so that the
					// advance after the switch lands on the end.
					p = nil
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end, ch := int(int8(p[0])), int(int8(p[2])), int(int8(s[0]))
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, ch = lowerC(start), lowerC(end), lowerC(ch)
					}
					p = p[2:]
					if ch >= start && ch <= end {
						match = true
					}
				} else if nocase {
					if lowerC(int(p[0])) == lowerC(int(s[0])) {
						match = true
					}
				} else if p[0] == s[0] {
					match = true
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if p == nil {
				// The class ran to the end of the pattern.
				if len(s) == 0 {
					return true
				}
				return false
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if nocase {
				if lowerC(int(p[0])) != lowerC(int(s[0])) {
					return false
				}
			} else if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

func lowerC(c int) int {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
