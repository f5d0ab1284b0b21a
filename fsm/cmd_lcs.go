package fsm

import (
	"github.com/deadbolt/deadbolt/resp"
)

// LCS: the longest common subsequence of two strings (Redis 7.0).
func init() {
	register(
		Spec{Name: "lcs", Arity: -3, Flags: Read, FirstKey: 1, LastKey: 2, Step: 1, fn: cmdLCS},
	)
}

const (
	msgLCSType   = "ERR The specified keys must contain string values"
	msgLCSLenIdx = "ERR If you want both the length and indexes, please just use IDX."
	msgLCSMemory = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
)

// cmdLCS computes Redis's table of LCS lengths and walks it back from the
// end exactly as Redis does (on a tie, the second string's index moves),
// so that the subsequence and the ranges IDX reports are Redis's own among
// the equally long ones.
//
// Redis refuses a table of more than proto-max-bulk-len bytes at 4 bytes a
// cell: (len(a)+1)*(len(b)+1)*4 > 512 MiB. Below that bound the shorter
// string has at most 11,584 bytes, so no length exceeds 16 bits and
// this table takes 2 bytes a cell; LEN alone keeps two rows.
func cmdLCS(c *Ctx, args [][]byte) resp.Reply {
	va, vb := c.lookup(args[1]), c.lookup(args[2])
	if va != nil && va.Kind != KindString || vb != nil && vb.Kind != KindString {
		return resp.Err(msgLCSType)
	}
	var a, b []byte
	if va != nil {
		a = va.Str
	}
	if vb != nil {
		b = vb.Str
	}
	var getLen, getIdx, withLen bool
	var minLen int64
	for j := 3; j < len(args); j++ {
		switch opt := args[j]; {
		case optEq(opt, "idx"):
			getIdx = true
		case optEq(opt, "len"):
			getLen = true
		case optEq(opt, "withmatchlen"):
			withLen = true
		case optEq(opt, "minmatchlen") && j+1 < len(args):
			n, ok := parseInt64(args[j+1])
			if !ok {
				return resp.Err(msgNotInt)
			}
			minLen = max(n, 0)
			j++
		default:
			return resp.Err(msgSyntax)
		}
	}
	if getIdx && getLen {
		return resp.Err(msgLCSLenIdx)
	}
	if (uint64(len(a))+1)*(uint64(len(b))+1)*4 > maxStringLen {
		return resp.Err(msgLCSMemory)
	}
	if getLen {
		return resp.IntReply(int64(lcsLength(a, b)))
	}

	// t[i*w+j] is the length of the LCS of a[:i] and b[:j].
	w := len(b) + 1
	t := make([]uint16, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		row, prev := t[i*w:(i+1)*w], t[(i-1)*w:i*w]
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
	}
	total := int(t[len(t)-1])
	lcs := make([]byte, total)
	var matches []resp.Reply
	// The current range of matching bytes, a[aStart:aEnd+1] and
	// b[bStart:...]; none while aStart is len(a).
	aStart, aEnd, bStart, bEnd := len(a), 0, 0, 0
	n := total
	for i, j := len(a), len(b); i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			lcs[n-1] = a[i-1]
			if aStart == len(a) {
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			} else {
				// The walk moves diagonally while it matches, so the
				// range always extends backward here.
				aStart--
				bStart--
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			n--
			i--
			j--
		} else {
			if t[(i-1)*w+j] > t[i*w+j-1] {
				i--
			} else {
				j--
			}
			emit = aStart != len(a)
		}
		if emit {
			if mlen := int64(aEnd - aStart + 1); getIdx && (minLen == 0 || mlen >= minLen) {
				m := []resp.Reply{
					resp.ArrayReply(resp.IntReply(int64(aStart)), resp.IntReply(int64(aEnd))),
					resp.ArrayReply(resp.IntReply(int64(bStart)), resp.IntReply(int64(bEnd))),
				}
				if withLen {
					m = append(m, resp.IntReply(mlen))
				}
				matches = append(matches, resp.ArrayReply(m...))
			}
			aStart = len(a)
		}
	}
	if getIdx {
		return resp.MapReply(
			resp.BulkString("matches"), resp.ArrayReply(matches...),
			resp.BulkString("len"), resp.IntReply(int64(total)),
		)
	}
	return resp.BulkReply(lcs)
}

// lcsLength is the length of the LCS of a and b, computed row by row.
func lcsLength(a, b []byte) uint16 {
	prev := make([]uint16, len(b)+1)
	row := make([]uint16, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
		prev, row = row, prev
	}
	return prev[len(b)]
}
