package acl

import (
	_ "embed"
	"slices"
	"strconv"
	"strings"
)

//go:embed redis_commands.txt
var redisTable string

//go:embed deadbolt_commands.txt
var deadboltTable string

// Categories are Redis's ACL categories, in Redis's order (ACL CAT, and the
// order in which a description tries them).
var Categories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// CategoryBit returns the bit of a category name (case-insensitive), 0 if
// there is none.
func CategoryBit(name string) uint32 {
	for i, c := range Categories {
		if strings.EqualFold(c, name) {
			return 1 << i
		}
	}
	return 0
}

// Command is one row of the command table: a command or a subcommand.
type Command struct {
	ID       int
	Name     string // full name, lower case: "get", "config|set"
	Arity    int
	Flags    []string
	Cats     uint32 // category bits
	Specs    []KeySpec
	Parent   *Command
	Subs     []*Command // in name order
	NoAuth   bool       // allowed to everybody (AUTH, HELLO): Redis's no_auth
	VarFlags bool       // key flags depend on the arguments (SET, BITFIELD)
}

var (
	commands []*Command          // by ID
	byName   map[string]*Command // by full name
)

// maxCommands bounds the command bitmaps; the last bit is the reserved one
// that +@all sets (commands added in the future).
const maxCommands = 1024

const futureBit = maxCommands - 1

func init() {
	byName = make(map[string]*Command)
	lines := strings.Split(strings.Trim(redisTable, "\n")+"\n"+strings.Trim(deadboltTable, "\n"), "\n")
	slices.Sort(lines) // a parent sorts before its subcommands ("acl" < "acl|cat")
	for _, line := range lines {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			panic("acl: bad command table line: " + line)
		}
		arity, err := strconv.Atoi(f[1])
		if err != nil {
			panic("acl: bad arity: " + line)
		}
		c := &Command{ID: len(commands), Name: f[0], Arity: arity, Flags: strings.Fields(f[2]), Specs: ParseKeySpecs(f[4])}
		for _, cat := range strings.Fields(f[3]) {
			c.Cats |= CategoryBit(cat)
		}
		c.NoAuth = slices.Contains(c.Flags, "no_auth")
		for _, s := range c.Specs {
			c.VarFlags = c.VarFlags || slices.Contains(s.Flags, "variable_flags")
		}
		if parent, _, ok := strings.Cut(c.Name, "|"); ok {
			c.Parent = byName[parent]
			if c.Parent == nil {
				panic("acl: subcommand without its command: " + line)
			}
			c.Parent.Subs = append(c.Parent.Subs, c)
		}
		commands = append(commands, c)
		byName[c.Name] = c
	}
	if len(commands) >= futureBit {
		panic("acl: command table too large")
	}
}

// Lookup returns the table's row for a full name ("get", "config|set"),
// case-insensitively.
func Lookup(name string) *Command {
	if c := byName[name]; c != nil {
		return c
	}
	return byName[strings.ToLower(name)]
}

// LookupArgs returns the row for a command line: the subcommand's when the
// command has subcommands and args[1] names one, else the command's.
func LookupArgs(args [][]byte) *Command {
	if len(args) == 0 {
		return nil
	}
	var buf [32]byte
	name := lowerInto(buf[:0], args[0])
	c := byName[string(name)]
	if c == nil || len(c.Subs) == 0 || len(args) < 2 || len(args[1]) > 64 {
		return c
	}
	full := append(append(name, '|'), args[1]...)
	if sub := byName[string(lowerInto(full[:0], full))]; sub != nil {
		return sub
	}
	return c
}

func lowerInto(dst, s []byte) []byte {
	for _, b := range s {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		dst = append(dst, b)
	}
	return dst
}

// CommandsIn returns the full names of the commands and subcommands in a
// category, in table order (ACL CAT category).
func CommandsIn(cat uint32) []string {
	var out []string
	for _, c := range commands {
		if c.Cats&cat != 0 {
			out = append(out, c.Name)
		}
	}
	return out
}
