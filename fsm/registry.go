package fsm

import (
	"sort"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
)

// Flag classifies a command.
type Flag uint32

// Command flags.
const (
	Read      Flag = 1 << iota // reads the keyspace, changes nothing
	Write                      // may change the keyspace: goes through the log
	NoScript                   // not allowed from a script
	Admin                      // administrative
	PubSub                     // publishes (an effect, not state)
	Fast                       // O(1) or O(log N)
	Internal                   // proposed by the node itself, never by a client
	Scripting                  // runs a script (EVAL family)
)

// handler runs one command. args[0] is the command name as sent. Handlers
// are pure: everything they may use is in the Ctx.
type handler func(c *Ctx, args [][]byte) resp.Reply

// Spec describes a command, in the terms of Redis's COMMAND INFO.
type Spec struct {
	Name     string // lower case
	Arity    int    // > 0 exact argc, < 0 at least -Arity
	Flags    Flag
	FirstKey int // position of the first key, 0 if none
	LastKey  int // position of the last key, -1 for the last argument
	Step     int
	// ID numbers the commands densely from 0 in registration order, for
	// tables outside this package indexed by command (see NumCommands).
	ID int
	fn handler
}

func (s *Spec) arityOK(argc int) bool {
	if s.Arity >= 0 {
		return argc == s.Arity
	}
	return argc >= -s.Arity
}

// Keys returns the key arguments of args according to the spec's key
// positions (EVAL-family keys are not included).
func (s *Spec) Keys(args [][]byte) [][]byte {
	if s.FirstKey <= 0 || s.FirstKey >= len(args) {
		return nil
	}
	last := s.LastKey
	if last < 0 {
		last = len(args) + last
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	step := max(s.Step, 1)
	var keys [][]byte
	for i := s.FirstKey; i <= last; i += step {
		keys = append(keys, args[i])
	}
	return keys
}

var commands = map[string]*Spec{}

// register adds commands to the table; a name registered twice is a
// programming error.
func register(specs ...Spec) {
	for i := range specs {
		s := specs[i]
		s.Name = strings.ToLower(s.Name)
		if _, dup := commands[s.Name]; dup {
			panic("fsm: command registered twice: " + s.Name)
		}
		if s.fn == nil {
			panic("fsm: command without handler: " + s.Name)
		}
		s.ID = len(commands)
		commands[s.Name] = &s
		if slot := &quick[quickSlot([]byte(s.Name))]; *slot == nil {
			*slot = &s
		}
	}
}

// quick is a direct-mapped table in front of commands: every node looks
// a command up for each command it applies and for each redis.call of a
// script (nine times per Redisson lock+unlock pair), and a slot compare
// costs less than hashing into a map of a few hundred names. A name that
// shares its slot with an earlier one is found in the map. Filled by
// register, at init, and only read after.
var quick [quickSize]*Spec

const quickSize = 1024

// quickSlot is a lower-case name's slot in quick.
func quickSlot(lower []byte) int {
	n := len(lower)
	if n == 0 {
		return 0
	}
	h := uint(n)*131 + uint(lower[0])*31 + uint(lower[n-1])*7 + uint(lower[n/2])
	return int(h % quickSize)
}

// NumCommands is the number of registered commands: every Spec's ID is
// below it.
func NumCommands() int { return len(commands) }

// Lookup finds a command by name, in any case.
func Lookup(name []byte) (*Spec, bool) {
	var buf [32]byte
	lower, ok := LowerName(&buf, name)
	if !ok {
		return nil, false
	}
	if q := quick[quickSlot(lower)]; q != nil && q.Name == string(lower) {
		return q, true
	}
	s, ok := commands[string(lower)]
	return s, ok
}

// LowerName lowercases an ASCII command name into buf, without
// allocating; false if the name is longer than any command's.
func LowerName(buf *[32]byte, name []byte) ([]byte, bool) {
	if len(name) > len(buf) {
		return nil, false
	}
	for i, ch := range name {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return buf[:len(name)], true
}

// Commands returns every registered command, sorted by name.
func Commands() []*Spec {
	out := make([]*Spec, 0, len(commands))
	for _, s := range commands {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// UnknownCommand is Redis's error text for a command it does not know:
// the name cut to 128 bytes, then as many quoted arguments as fit in 128.
func UnknownCommand(args [][]byte) string {
	var list []byte
	for _, a := range args[1:] {
		if len(list) >= 128 {
			break
		}
		room := 128 - len(list)
		if len(a) > room {
			a = a[:room]
		}
		list = append(list, '\'')
		list = append(list, a...)
		list = append(list, "' "...)
	}
	name := args[0]
	if len(name) > 128 {
		name = name[:128]
	}
	return sanitize("ERR unknown command '" + string(name) + "', with args beginning with: " + string(list))
}

// sanitize replaces characters that cannot appear in an error line.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// WrongArity is Redis's error text for a wrong number of arguments.
func WrongArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}
