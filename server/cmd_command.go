package server

import (
	"slices"
	"strings"
	"sync"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/glob"
	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	registerConn(
		connSpec{name: "command", arity: -1, flags: connAdmin, fn: cmdCommand},
	)
}

// COMMAND describes every command this node answers: the state machine's
// (fsm.Commands) and the server's own (connCommands). Names, arities and,
// for keyspace commands, key positions come from those tables, as they are
// what deadbolt actually does. Redis's flags, ACL categories, tips, key
// specs, subcommands and docs come from redisCommands (cmd_command_table.go),
// a copy of Redis 7.0.15's command table for the commands deadbolt may implement. A
// command missing from it is described from its own flags instead.

// command is one command as COMMAND describes it.
type command struct {
	name              string
	arity             int
	first, last, step int
	doc               *cmdDoc   // nil if Redis's table lacks it
	spec              *fsm.Spec // the state machine's entry, if any
	conn              *connSpec // the server's entry, if any
}

var (
	cmdTableOnce sync.Once
	cmdTable     []*command
	cmdByName    map[string]*command
)

// commands returns every command a client can send, sorted by name. The
// tables are complete once every package's init has run.
func commands() ([]*command, map[string]*command) {
	cmdTableOnce.Do(func() {
		cmdByName = make(map[string]*command)
		for _, s := range fsm.Commands() {
			if s.Flags&fsm.Internal != 0 {
				continue
			}
			cmdByName[s.Name] = &command{name: s.Name, arity: s.Arity, first: s.FirstKey, last: s.LastKey, step: s.Step, spec: s}
		}
		for name, cs := range connCommands {
			if strings.Contains(name, ".") {
				continue // between nodes (deadbolt.forward), not for clients
			}
			cmd := cmdByName[name]
			if cmd == nil {
				cmd = &command{name: name}
				cmdByName[name] = cmd
			}
			cmd.conn, cmd.arity = cs, cs.arity
		}
		for name, cmd := range cmdByName {
			cmd.doc = docs()[name]
			if cmd.spec == nil && cmd.doc != nil {
				// The server's own commands with keys (WATCH): Redis's
				// positions.
				cmd.first, cmd.last, cmd.step = cmd.doc.first, cmd.doc.last, cmd.doc.step
			}
			if cmd.first == 0 {
				cmd.last, cmd.step = 0, 0
			}
			cmdTable = append(cmdTable, cmd)
		}
		sortCommands(cmdTable)
	})
	return cmdTable, cmdByName
}

func sortCommands(cs []*command) {
	slices.SortFunc(cs, func(a, b *command) int { return strings.Compare(a.name, b.name) })
}

// lookupCommand finds a command or, for "name|sub", a subcommand's row.
func lookupCommand(name string) (*command, *cmdDoc) {
	name = strings.ToLower(name)
	_, byName := commands()
	if parent, _, ok := strings.Cut(name, "|"); ok {
		if byName[parent] == nil {
			return nil, nil
		}
		d := docs()[name]
		if d == nil {
			return nil, nil
		}
		return byName[parent], d
	}
	cmd := byName[name]
	if cmd == nil {
		return nil, nil
	}
	return cmd, cmd.doc
}

// flags returns the command's Redis flags.
func (cmd *command) flags() []string {
	if cmd.doc != nil {
		return strings.Fields(cmd.doc.flags)
	}
	var out []string
	if s := cmd.spec; s != nil && cmd.conn == nil {
		if s.Flags&fsm.Write != 0 {
			out = append(out, "write")
		}
		if s.Flags&fsm.Read != 0 {
			out = append(out, "readonly")
		}
		if s.Flags&fsm.Admin != 0 {
			out = append(out, "admin")
		}
		if s.Flags&fsm.PubSub != 0 {
			out = append(out, "pubsub")
		}
		if s.Flags&(fsm.NoScript|fsm.Scripting) != 0 {
			out = append(out, "noscript")
		}
		if s.Flags&fsm.Fast != 0 {
			out = append(out, "fast")
		}
		return out
	}
	f := cmd.conn.flags
	if f&connAdmin != 0 {
		out = append(out, "admin")
	}
	if f&connPubSub != 0 {
		out = append(out, "pubsub")
	}
	out = append(out, "noscript", "loading", "stale")
	if f&noAuth != 0 {
		out = append(out, "no_auth")
	}
	return out
}

// acl returns the command's ACL categories, each with its '@'.
func (cmd *command) acl() []string {
	var cats []string
	if cmd.doc != nil {
		cats = strings.Fields(cmd.doc.acl)
	} else {
		fl := cmd.flags()
		has := func(f string) bool {
			for _, x := range fl {
				if x == f {
					return true
				}
			}
			return false
		}
		switch {
		case has("write"):
			cats = append(cats, "write")
		case has("readonly"):
			cats = append(cats, "read")
		}
		if has("admin") {
			cats = append(cats, "admin")
		}
		if has("pubsub") {
			cats = append(cats, "pubsub")
		}
		if has("fast") {
			cats = append(cats, "fast")
		} else {
			cats = append(cats, "slow")
		}
		if has("admin") {
			cats = append(cats, "dangerous")
		}
		if cmd.conn != nil && !has("admin") && !has("pubsub") {
			cats = append(cats, "connection")
		}
	}
	for i, c := range cats {
		cats[i] = "@" + c
	}
	return cats
}

// keySpecs returns the command's key specs: Redis's, or one made from its
// key positions.
func (cmd *command) keySpecs() []acl.KeySpec {
	if cmd.doc != nil {
		return cmd.doc.specs
	}
	if cmd.first <= 0 {
		return nil
	}
	flags := []string{"RO", "access"}
	if cmd.spec != nil && cmd.spec.Flags&fsm.Write != 0 {
		flags = []string{"RW", "update"}
	}
	last := cmd.last
	if last >= 0 {
		last -= cmd.first
	}
	return []acl.KeySpec{{Flags: flags, Begin: 'i', Index: cmd.first, Find: 'r', A: last, B: max(cmd.step, 1)}}
}

// info is the command's COMMAND INFO entry.
func (cmd *command) info() resp.Reply {
	var tips []string
	if cmd.doc != nil {
		tips = strings.Fields(cmd.doc.tips)
	}
	var subs []resp.Reply
	if cmd.doc != nil {
		for _, d := range cmd.doc.subs {
			subs = append(subs, docInfo(d, d.arity, d.first, d.last, d.step, strings.Fields(d.flags)))
		}
	}
	return commandInfoReply(cmd.name, cmd.arity, cmd.flags(), cmd.first, cmd.last, cmd.step,
		cmd.acl(), tips, cmd.keySpecs(), subs)
}

// docInfo is a subcommand's COMMAND INFO entry, all from Redis's table.
func docInfo(d *cmdDoc, arity, first, last, step int, flags []string) resp.Reply {
	acl := strings.Fields(d.acl)
	for i, c := range acl {
		acl[i] = "@" + c
	}
	return commandInfoReply(d.name, arity, flags, first, last, step, acl, strings.Fields(d.tips), d.specs, nil)
}

func commandInfoReply(name string, arity int, flags []string, first, last, step int, acl, tips []string, specs []acl.KeySpec, subs []resp.Reply) resp.Reply {
	fl := make([]resp.Reply, len(flags))
	for i, f := range flags {
		fl[i] = resp.StatusReply(f)
	}
	ac := make([]resp.Reply, len(acl))
	for i, a := range acl {
		ac[i] = resp.StatusReply(a)
	}
	tp := make([]resp.Reply, len(tips))
	for i, t := range tips {
		tp[i] = resp.BulkString(t)
	}
	ks := make([]resp.Reply, len(specs))
	for i, s := range specs {
		ks[i] = specReply(s)
	}
	// Redis answers no subcommands with an empty set, some with an array.
	sub := resp.SetReply()
	if len(subs) > 0 {
		sub = resp.ArrayReply(subs...)
	}
	return resp.ArrayReply(
		resp.BulkString(name), resp.IntReply(int64(arity)), resp.SetReply(fl...),
		resp.IntReply(int64(first)), resp.IntReply(int64(last)), resp.IntReply(int64(step)),
		resp.SetReply(ac...), resp.SetReply(tp...), resp.SetReply(ks...), sub,
	)
}

func specReply(s acl.KeySpec) resp.Reply {
	var out []resp.Reply
	if s.Notes != "" {
		out = append(out, resp.BulkString("notes"), resp.BulkString(s.Notes))
	}
	fl := make([]resp.Reply, len(s.Flags))
	for i, f := range s.Flags {
		fl[i] = resp.StatusReply(f)
	}
	out = append(out, resp.BulkString("flags"), resp.SetReply(fl...))

	var begin resp.Reply
	switch s.Begin {
	case 'i':
		begin = typedSpec("index", resp.BulkString("index"), resp.IntReply(int64(s.Index)))
	case 'k':
		begin = typedSpec("keyword", resp.BulkString("keyword"), resp.BulkString(s.Keyword),
			resp.BulkString("startfrom"), resp.IntReply(int64(s.StartFrom)))
	default:
		begin = typedSpec("unknown")
	}
	var find resp.Reply
	switch s.Find {
	case 'r':
		find = typedSpec("range", resp.BulkString("lastkey"), resp.IntReply(int64(s.A)),
			resp.BulkString("keystep"), resp.IntReply(int64(s.B)), resp.BulkString("limit"), resp.IntReply(int64(s.C)))
	case 'n':
		find = typedSpec("keynum", resp.BulkString("keynumidx"), resp.IntReply(int64(s.A)),
			resp.BulkString("firstkey"), resp.IntReply(int64(s.B)), resp.BulkString("keystep"), resp.IntReply(int64(s.C)))
	default:
		find = typedSpec("unknown")
	}
	out = append(out, resp.BulkString("begin_search"), begin, resp.BulkString("find_keys"), find)
	return resp.MapReply(out...)
}

func typedSpec(typ string, spec ...resp.Reply) resp.Reply {
	return resp.MapReply(resp.BulkString("type"), resp.BulkString(typ), resp.BulkString("spec"), resp.MapReply(spec...))
}

// docsReply is a command's COMMAND DOCS entry (name, then its map).
func docsEntry(d *cmdDoc, name string) []resp.Reply {
	if d == nil {
		return []resp.Reply{resp.BulkString(name), resp.MapReply(
			resp.BulkString("summary"), resp.BulkString(""),
			resp.BulkString("since"), resp.BulkString(""),
			resp.BulkString("group"), resp.BulkString("generic"),
		)}
	}
	m := []resp.Reply{
		resp.BulkString("summary"), resp.BulkString(d.summary),
		resp.BulkString("since"), resp.BulkString(d.since),
		resp.BulkString("group"), resp.BulkString(d.group),
	}
	if len(d.subs) > 0 {
		var subs []resp.Reply
		for _, s := range d.subs {
			subs = append(subs, docsEntry(s, s.name)...)
		}
		m = append(m, resp.BulkString("subcommands"), resp.MapReply(subs...))
	}
	return []resp.Reply{resp.BulkString(name), resp.MapReply(m...)}
}

func cmdCommand(c *conn, args [][]byte) {
	all, _ := commands()
	if len(args) == 1 {
		out := make([]resp.Reply, len(all))
		for i, cmd := range all {
			out[i] = cmd.info()
		}
		c.reply(resp.ArrayReply(out...))
		return
	}
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	switch sub {
	case "count":
		c.reply(resp.IntReply(int64(len(all))))
	case "info":
		if len(args) == 2 {
			cmdCommand(c, args[:1])
			return
		}
		out := make([]resp.Reply, 0, len(args)-2)
		for _, a := range args[2:] {
			cmd, d := lookupCommand(string(a))
			switch {
			case cmd == nil:
				out = append(out, resp.NilReply)
			case d != nil && d != cmd.doc:
				out = append(out, docInfo(d, d.arity, d.first, d.last, d.step, strings.Fields(d.flags)))
			default:
				out = append(out, cmd.info())
			}
		}
		c.reply(resp.ArrayReply(out...))
	case "docs":
		var out []resp.Reply
		if len(args) == 2 {
			for _, cmd := range all {
				out = append(out, docsEntry(cmd.doc, cmd.name)...)
			}
		}
		for _, a := range args[2:] {
			cmd, d := lookupCommand(string(a))
			if cmd == nil {
				continue
			}
			if d == nil {
				out = append(out, docsEntry(nil, cmd.name)...)
			} else {
				out = append(out, docsEntry(d, d.name)...)
			}
		}
		c.reply(resp.MapReply(out...))
	case "list":
		commandList(c, args, all)
	case "getkeys", "getkeysandflags":
		commandGetKeys(c, args[2:], sub == "getkeysandflags")
	case "help":
		c.reply(helpReply("COMMAND", []string{
			"(no subcommand)",
			"    Return details about all Redis commands.",
			"COUNT",
			"    Return the total number of commands in this Redis server.",
			"LIST",
			"    Return a list of all commands in this Redis server.",
			"INFO [<command-name> ...]",
			"    Return details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"DOCS [<command-name> ...]",
			"    Return documentation details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"GETKEYS <full-command>",
			"    Return the keys from a full Redis command.",
			"GETKEYSANDFLAGS <full-command>",
			"    Return the keys and the access flags from a full Redis command.",
		}))
	default:
		c.reply(unknownSubcommand(args))
	}
}

// commandList answers COMMAND LIST [FILTERBY MODULE m | ACLCAT c | PATTERN p]:
// top-level names and subcommands.
func commandList(c *conn, args [][]byte, all []*command) {
	var keep func(name, acl string) bool
	switch {
	case len(args) == 2:
		keep = func(string, string) bool { return true }
	case len(args) == 5 && strings.EqualFold(string(args[2]), "filterby"):
		val := string(args[4])
		switch strings.ToLower(string(args[3])) {
		case "module":
			keep = func(string, string) bool { return false }
		case "aclcat":
			cat := strings.ToLower(val)
			keep = func(_, acl string) bool {
				for _, a := range strings.Fields(acl) {
					if a == cat {
						return true
					}
				}
				return false
			}
		case "pattern":
			pat := []byte(strings.ToLower(val))
			keep = func(name, _ string) bool { return glob.Match(pat, []byte(name)) }
		}
	}
	if keep == nil {
		c.reply(resp.Err("ERR syntax error"))
		return
	}
	var out []resp.Reply
	for _, cmd := range all {
		if keep(cmd.name, strings.Join(trimAt(cmd.acl()), " ")) {
			out = append(out, resp.BulkString(cmd.name))
		}
		if cmd.doc != nil {
			for _, s := range cmd.doc.subs {
				if keep(s.name, s.acl) {
					out = append(out, resp.BulkString(s.name))
				}
			}
		}
	}
	c.reply(resp.ArrayReply(out...))
}

func trimAt(cats []string) []string {
	for i, c := range cats {
		cats[i] = strings.TrimPrefix(c, "@")
	}
	return cats
}

// commandGetKeys answers COMMAND GETKEYS / GETKEYSANDFLAGS for argv.
func commandGetKeys(c *conn, argv [][]byte, withFlags bool) {
	cmd, d := lookupCommand(string(argv[0]))
	if cmd != nil && len(argv) > 1 && hasSubcommands(cmd.name) {
		if sd := docs()[cmd.name+"|"+strings.ToLower(string(argv[1]))]; sd != nil {
			d = sd
		}
	}
	if cmd == nil {
		c.reply(resp.Err("ERR Invalid command specified"))
		return
	}
	arity, specs, flags := cmd.arity, cmd.keySpecs(), cmd.flags()
	if d != nil && d != cmd.doc {
		arity, specs, flags = d.arity, d.specs, strings.Fields(d.flags)
	}
	if !acl.HasKeys(specs) {
		c.reply(resp.Err("ERR The command has no key arguments"))
		return
	}
	if !arityOK(arity, len(argv)) {
		c.reply(resp.Err("ERR Invalid number of arguments specified for command"))
		return
	}
	keys, ok := acl.FindKeys(specs, argv)
	if ok {
		keys = acl.ProcKeys(cmd.name, argv, keys) // SET, BITFIELD, SORT: Redis's key procedures
	}
	if !ok || len(keys) == 0 {
		for _, f := range flags {
			if f == "no_mandatory_keys" {
				c.reply(resp.EmptyArr)
				return
			}
		}
		c.reply(resp.Err("ERR Invalid arguments specified for command"))
		return
	}
	out := make([]resp.Reply, len(keys))
	for i, k := range keys {
		if !withFlags {
			out[i] = resp.BulkReply(argv[k.Pos])
			continue
		}
		fl := make([]resp.Reply, len(k.Flags))
		for j, f := range k.Flags {
			fl[j] = resp.StatusReply(f)
		}
		out[i] = resp.ArrayReply(resp.BulkReply(argv[k.Pos]), resp.SetReply(fl...))
	}
	c.reply(resp.ArrayReply(out...))
}
