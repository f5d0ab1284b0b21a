// Package glob matches Redis glob-style patterns (KEYS, SCAN MATCH,
// PSUBSCRIBE, PUBSUB CHANNELS): * ? [set] [^set] [a-z] and \ escapes.
package glob

// Match reports whether s matches pattern, as Redis's stringmatchlen does
// (case-sensitive).
func Match(pattern, s []byte) bool {
	return match(pattern, s, 0)
}

// maxDepth bounds the recursion on patterns with many stars, as Redis
// does, so a hostile pattern cannot take exponential time.
const maxDepth = 1000

func match(p, s []byte, depth int) bool {
	if depth > maxDepth {
		return false
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if match(p[1:], s[i:], depth+1) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
			p = p[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			var ok bool
			p, ok = matchClass(p[1:], s[0])
			if !ok {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			s = s[1:]
			p = p[1:]
		}
	}
	return len(s) == 0
}

// matchClass matches c against a [class] whose body starts at p; it
// returns the pattern after the closing bracket.
func matchClass(p []byte, c byte) ([]byte, bool) {
	not := false
	if len(p) > 0 && p[0] == '^' {
		not = true
		p = p[1:]
	}
	hit := false
	for len(p) > 0 && p[0] != ']' {
		switch {
		case p[0] == '\\' && len(p) >= 2:
			if p[1] == c {
				hit = true
			}
			p = p[2:]
		case len(p) >= 3 && p[1] == '-':
			lo, hi := p[0], p[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if c >= lo && c <= hi {
				hit = true
			}
			p = p[3:]
		default:
			if p[0] == c {
				hit = true
			}
			p = p[1:]
		}
	}
	if len(p) > 0 {
		p = p[1:] // the closing bracket; a missing one ends the pattern
	}
	if not {
		hit = !hit
	}
	return p, hit
}
