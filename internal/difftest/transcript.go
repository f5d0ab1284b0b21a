package difftest

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// Kind is what a step does.
type Kind uint8

// The kinds of step.
const (
	Send     Kind = iota // "> CMD ...": send a command, compare the replies
	Recv                 // "<": read one more reply (a pub/sub message), compare
	WaitGone             // "@waitgone KEY...": poll until the keys expire on both
)

// Options change how one step's replies are compared; the zero value
// compares the raw bytes.
type Options struct {
	Conn        int      // connection number, 1 unless connN
	Sorted      bool     // sort an array reply's elements before comparing
	SortIn      int      // sorted=N: sort the elements of the reply's Nth element instead
	SortedPairs bool     // sort an array reply's (field, value) pairs
	Tolerance   int64    // ttl[=N]: integers may differ by N; -1 when unset
	AnyErr      bool     // both replies are errors; their texts may differ
	Shape       bool     // only the types and array lengths must agree
	Any         bool     // read both replies, compare nothing
	Skip        []string // in a field/value array, ignore these fields' values
	Raw         bool     // send the single argument's bytes as they are
}

// defaultTolerance is ttl's tolerance when none is given: enough for the
// milliseconds that pass between sending a command to one server and to
// the other, on a loaded machine under -race.
const defaultTolerance = 500

// Step is one executable line of a transcript.
type Step struct {
	Line int    // 1-based line number in the file
	Text string // the line as written
	Kind Kind
	Args [][]byte // the command (Send) or the keys (WaitGone)
	Opts Options
}

// Transcript is a parsed transcript file.
type Transcript struct {
	Name  string // file name, for messages
	Steps []Step
	Defs  map[string]string // @define blocks by name
}

// ParseFile reads and parses one transcript file.
func ParseFile(path string) (*Transcript, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(filepath.Base(path), bytes.NewReader(b))
}

// Parse parses a transcript; name is used in messages only.
//
// The format, one directive per line:
//
//	# a comment (also: blank lines)
//	> SET foo bar                 send on connection 1, replies must be equal byte for byte
//	>sorted,conn2 SMEMBERS s      the same with options (comma-separated, no spaces)
//	<conn2                        read one more reply on connection 2 (a pushed message)
//	@define NAME                  a verbatim multi-line text (a Lua script) up to "@end";
//	@end                          ${NAME} as a whole argument is its text, ${sha1:NAME} its SHA1
//	@waitgone KEY...              wait (polling, 5 s at most) until KEY... are gone on both
//
// Arguments are split like redis-cli does (resp.SplitInline): "double
// quotes" with \n \r \t \xHH escapes, 'single quotes' with \' only.
// Options:
//
//	sorted       compare an array reply as a multiset (Redis's order is unspecified)
//	sorted=N     the same for the Nth element of an array reply (SCAN: sorted=2)
//	sortedpairs  compare a field/value array as a set of pairs (HGETALL)
//	ttl, ttl=N   non-negative integers, also inside arrays, may differ by N (default 500)
//	anyerr       both replies are errors, their texts may differ (say why in a comment)
//	shape        only the types and the array lengths must agree (TIME)
//	any          read both replies, compare nothing
//	skip=FIELD   in a field/value array, or in the maps of an array of them,
//	             ignore FIELD's value (HELLO's id, ACL LOG's age); repeatable
//	connN        use connection N (1 to 9) instead of 1; each is opened when first used
//	raw          send the one argument's bytes as they are, not as a RESP array:
//	             inline commands and malformed requests (>raw "PING\r\n")
//
// A connection the server closes reads as "connection closed"; when both
// servers close it, the step agrees.
func Parse(name string, r io.Reader) (*Transcript, error) {
	t := &Transcript{Name: name, Defs: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	lineNo := 0
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, args...))
	}
	var (
		defName  string
		defStart int
		defBody  []string
	)
	for sc.Scan() {
		lineNo++
		line := strings.TrimSuffix(sc.Text(), "\r")
		if defName != "" {
			if strings.TrimSpace(line) == "@end" {
				t.Defs[defName] = strings.Join(defBody, "\n")
				defName, defBody = "", nil
				continue
			}
			defBody = append(defBody, line)
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		switch trimmed[0] {
		case '@':
			fields := strings.Fields(trimmed)
			switch fields[0] {
			case "@define":
				if len(fields) != 2 || !validName(fields[1]) {
					return nil, errf("want @define NAME (letters, digits, _ and -)")
				}
				if _, dup := t.Defs[fields[1]]; dup {
					return nil, errf("%s defined twice", fields[1])
				}
				defName, defStart = fields[1], lineNo
			case "@end":
				return nil, errf("@end without @define")
			case "@waitgone":
				if len(fields) < 2 {
					return nil, errf("want @waitgone KEY...")
				}
				args, ok := resp.SplitInline([]byte(strings.TrimPrefix(trimmed, "@waitgone")))
				if !ok {
					return nil, errf("unbalanced quotes")
				}
				t.Steps = append(t.Steps, Step{Line: lineNo, Text: trimmed, Kind: WaitGone, Args: args, Opts: Options{Conn: 1, Tolerance: -1}})
			default:
				return nil, errf("unknown directive %s", fields[0])
			}
		case '>', '<':
			head, rest, _ := strings.Cut(trimmed[1:], " ")
			opts, err := parseOptions(head)
			if err != nil {
				return nil, errf("%v", err)
			}
			step := Step{Line: lineNo, Text: trimmed, Opts: opts}
			if trimmed[0] == '<' {
				if strings.TrimSpace(rest) != "" {
					return nil, errf("< takes options only, no command")
				}
				step.Kind = Recv
				t.Steps = append(t.Steps, step)
				continue
			}
			args, ok := resp.SplitInline([]byte(rest))
			if !ok {
				return nil, errf("unbalanced quotes")
			}
			if len(args) == 0 {
				return nil, errf("> without a command")
			}
			if w := string(args[0]); strings.HasPrefix(w, "conn") && len(w) > 4 && strings.Trim(w[4:], "0123456789") == "" && !opts.Raw {
				// ">skip=id conn8 HELLO" sends the command "conn8" on
				// conn1, which both servers refuse alike.
				return nil, errf("%s is an option: separate options with commas", w)
			}
			if opts.Raw && len(args) != 1 {
				return nil, errf("raw takes one (quoted) argument, got %d", len(args))
			}
			step.Kind, step.Args = Send, args
			t.Steps = append(t.Steps, step)
		default:
			return nil, errf("a line must start with >, <, @ or #")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if defName != "" {
		lineNo = defStart
		return nil, errf("@define %s has no @end", defName)
	}
	// Substitute definitions now that all are known.
	for i := range t.Steps {
		s := &t.Steps[i]
		for j, a := range s.Args {
			v, ok, err := t.expand(string(a))
			if err != nil {
				lineNo = s.Line
				return nil, errf("%v", err)
			}
			if ok {
				s.Args[j] = []byte(v)
			}
		}
	}
	return t, nil
}

// expand resolves an argument of the form ${NAME} or ${sha1:NAME}.
func (t *Transcript) expand(arg string) (string, bool, error) {
	if !strings.HasPrefix(arg, "${") || !strings.HasSuffix(arg, "}") {
		return "", false, nil
	}
	ref := arg[2 : len(arg)-1]
	name, sha := strings.CutPrefix(ref, "sha1:")
	body, ok := t.Defs[name]
	if !ok {
		return "", false, fmt.Errorf("%s is not defined", arg)
	}
	if sha {
		sum := sha1.Sum([]byte(body))
		return hex.EncodeToString(sum[:]), true, nil
	}
	return body, true, nil
}

func validName(s string) bool {
	for _, c := range s {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func parseOptions(s string) (Options, error) {
	o := Options{Conn: 1, Tolerance: -1}
	if s == "" {
		return o, nil
	}
	for _, opt := range strings.Split(s, ",") {
		key, val, hasVal := strings.Cut(opt, "=")
		switch {
		case key == "sorted":
			o.Sorted = true
			if hasVal {
				n, err := strconv.Atoi(val)
				if err != nil || n < 1 {
					return o, fmt.Errorf("sorted=%s: want a position from 1", val)
				}
				o.SortIn = n
			}
		case key == "sortedpairs" && !hasVal:
			o.SortedPairs = true
		case key == "ttl":
			o.Tolerance = defaultTolerance
			if hasVal {
				n, err := strconv.ParseInt(val, 10, 64)
				if err != nil || n < 0 {
					return o, fmt.Errorf("ttl=%s: want a non-negative integer", val)
				}
				o.Tolerance = n
			}
		case key == "anyerr" && !hasVal:
			o.AnyErr = true
		case key == "shape" && !hasVal:
			o.Shape = true
		case key == "any" && !hasVal:
			o.Any = true
		case key == "raw" && !hasVal:
			o.Raw = true
		case key == "skip" && hasVal && val != "":
			o.Skip = append(o.Skip, val)
		case strings.HasPrefix(key, "conn") && !hasVal:
			n, err := strconv.Atoi(key[4:])
			if err != nil || n < 1 || n > maxConns {
				return o, fmt.Errorf("%s: want conn1 to conn%d", key, maxConns)
			}
			o.Conn = n
		default:
			return o, fmt.Errorf("unknown option %q", opt)
		}
	}
	if o.Sorted && o.SortedPairs {
		return o, fmt.Errorf("sorted and sortedpairs exclude each other")
	}
	return o, nil
}

// maxConns is the number of connections a transcript may use.
const maxConns = 9

// waitGoneTimeout bounds @waitgone.
const waitGoneTimeout = 5 * time.Second
