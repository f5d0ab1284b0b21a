package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// ACL users (Redis 7.0): the users are the state machine's (replicated,
// fsm/acl.go); a connection keeps the user it authenticated as and looks
// it up again when the table has changed. A user deleted while
// connections use it closes them, as Redis does. The ACL LOG is this
// node's own, as each Redis server's is.

// UsersReader is implemented by backends whose state machine holds the
// ACL users (cluster.Local, cluster.Node).
type UsersReader interface {
	Users() *acl.Users
}

func init() {
	registerConn(connSpec{name: "acl", arity: -2, flags: connAdmin, fn: cmdACL})
}

// users returns the ACL users in force on this node.
func (s *Server) users() *acl.Users {
	if r, ok := s.backend.(UsersReader); ok {
		if t := r.Users(); t != nil {
			return t
		}
	}
	return s.adm.ownUsers.Load()
}

// defaultAuthed reports whether a new connection is authenticated as the
// default user without AUTH: the default user is on and nopass.
func defaultAuthed(t *acl.Users) bool {
	d := t.Default()
	return d != nil && d.Enabled && d.NoPass
}

// setUser makes u the connection's user, from table t.
func (c *conn) setUser(u *acl.User, t *acl.Users) {
	c.mu.Lock()
	c.user, c.usersAt = u, t
	c.mu.Unlock()
}

// userName is the connection's user as CLIENT LIST shows it.
func (c *conn) userName() string {
	if c.user == nil {
		return "default"
	}
	return c.user.Name
}

// syncUser looks the connection's user up again when the table changed;
// it reports false, and has the connection closed, when the user is gone.
func (c *conn) syncUser() bool {
	t := c.srv.users()
	if t == c.usersAt {
		return true
	}
	u := t.Get(c.userName())
	if u == nil {
		c.closing = true
		return false
	}
	c.setUser(u, t)
	return true
}

// aclAllows checks a command against the connection's user, answering
// NOPERM itself (and logging it) when it is refused.
func (c *conn) aclAllows(name string, args [][]byte) bool {
	if c.member {
		return true
	}
	if !c.syncUser() {
		c.reject(name, "NOPERM this user has been deleted")
		return false
	}
	if c.user.Unrestricted() {
		return true
	}
	cmd := acl.LookupArgs(args)
	d := c.user.Check(cmd, args)
	if d.Reason == acl.DeniedNone {
		return true
	}
	if d.Reason == acl.DeniedCmd && cmd != nil && len(cmd.Subs) > 0 && len(args) > 1 {
		// The table knows the container but not this subcommand: Redis
		// 7.0 answers "unknown subcommand" before it looks at the rules,
		// and logs nothing. (CLIENT SETINFO, which deadbolt has from Redis
		// 7.2, is unknown to 7.0's table: a restricted user gets 7.0's
		// answer, which clients that send it at connect time ignore.)
		c.reject(name, "ERR unknown subcommand '"+truncate(string(args[1]), 128)+"'. Try "+strings.ToUpper(string(args[0]))+" HELP.")
		return false
	}
	if d.Reason == acl.DeniedCmd && cmd != nil && cmd.Parent != nil && !arityOK(cmd.Arity, len(args)) {
		// So is a known subcommand's arity (dispatch checked the
		// container's).
		c.reject(name, fsm.WrongArity(cmd.Name))
		return false
	}
	ctx := "toplevel"
	if c.multi != nil {
		ctx = "multi"
	}
	c.srv.aclLog.add(c, d.Reason, ctx, denialObject(d, cmd, c.lastCmd, args), c.userName(), args)
	var msg string
	switch d.Reason {
	case acl.DeniedCmd:
		// The table's name: "sentinel|masters" as a Redis Sentinel says,
		// where the server's own command table (COMMAND) has no SENTINEL.
		what := c.lastCmd
		if cmd != nil {
			what = cmd.Name
		}
		msg = "NOPERM this user has no permissions to run the '" + what + "' command"
	case acl.DeniedKey:
		msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
	default:
		msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	c.reject(name, msg)
	return false
}

func denialObject(d acl.Denial, cmd *acl.Command, fallback string, args [][]byte) string {
	if d.Reason == acl.DeniedCmd {
		if cmd != nil {
			return cmd.Name
		}
		return fallback
	}
	return string(args[d.Pos])
}

// logScriptDenials adds the script calls the state machine refused to
// this node's ACL LOG.
func (c *conn) logScriptDenials(ds []fsm.ACLDenial) {
	for _, d := range ds {
		cmd := acl.LookupArgs(d.Args)
		name := ""
		if len(d.Args) > 0 {
			name = strings.ToLower(string(d.Args[0]))
		}
		c.srv.aclLog.add(c, d.Reason, "lua", denialObject(d.Denial, cmd, name, d.Args), c.userName(), nil)
	}
}

// scriptUser is the user a command's scripts are checked against: ""
// when the connection's user may do anything.
func (c *conn) scriptUser() string {
	if c.member || c.user == nil || c.user.Unrestricted() {
		return ""
	}
	return c.user.Name
}

// authenticate logs the connection in as name, answering nothing; it
// reports whether it succeeded, and logs a failure.
func (c *conn) authenticate(name, pass []byte, args [][]byte) bool {
	t := c.srv.users()
	u := t.Authenticate(name, pass)
	if u == nil {
		ctx := "toplevel"
		if c.multi != nil || c.execing != nil { // inside EXEC: a queued AUTH or HELLO AUTH
			ctx = "multi"
		}
		c.srv.aclLog.add(c, acl.DeniedAuth, ctx, string(args[0]), string(name), args)
		return false
	}
	c.setUser(u, t)
	c.setAuthed(true)
	return true
}

// ---- ACL ----

func cmdACL(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	n := len(args)
	switch {
	case sub == "setuser" && n >= 3:
		aclSetUser(c, args)
	case sub == "deluser" && n >= 3:
		aclDelUser(c, args)
	case sub == "getuser" && n == 3:
		u := c.srv.users().Get(string(args[2]))
		if u == nil {
			c.reply(resp.NilReply)
			return
		}
		c.reply(getUserReply(u))
	case (sub == "list" || sub == "users") && n == 2:
		t := c.srv.users()
		var out []resp.Reply
		if sub == "users" {
			for _, name := range t.Names() {
				out = append(out, resp.BulkString(name))
			}
		} else {
			for _, l := range t.List() {
				out = append(out, resp.BulkString(l))
			}
		}
		c.reply(resp.ArrayReply(out...))
	case sub == "whoami" && n == 2:
		c.reply(resp.BulkString(c.userName()))
	case (sub == "load" || sub == "save") && c.srv.cfg.ACLFile == "":
		c.reply(resp.Err("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."))
	case sub == "load" && n == 2:
		aclLoad(c)
	case sub == "save" && n == 2:
		if err := saveACLFile(c.srv.cfg.ACLFile, c.srv.users().File()); err != nil {
			c.srv.cfg.Logger.Warn("server: ACL SAVE failed", "file", c.srv.cfg.ACLFile, "err", err)
			c.reply(resp.Err("ERR There was an error trying to save the ACLs. Please check the server logs for more information"))
			return
		}
		c.reply(resp.OK)
	case sub == "cat" && n == 2:
		out := make([]resp.Reply, len(acl.Categories))
		for i, cat := range acl.Categories {
			out[i] = resp.BulkString(cat)
		}
		c.reply(resp.ArrayReply(out...))
	case sub == "cat" && n == 3:
		bit := acl.CategoryBit(string(args[2]))
		if bit == 0 {
			c.reply(resp.Err("ERR Unknown category '" + truncate(string(args[2]), 128) + "'"))
			return
		}
		var out []resp.Reply
		for _, name := range acl.CommandsIn(bit) {
			out = append(out, resp.BulkString(name))
		}
		c.reply(resp.ArrayReply(out...))
	case sub == "genpass" && (n == 2 || n == 3):
		aclGenPass(c, args)
	case sub == "log" && (n == 2 || n == 3):
		aclLogCmd(c, args)
	case sub == "dryrun" && n >= 4:
		aclDryRun(c, args)
	case sub == "help" && n == 2:
		c.reply(helpReply("ACL", aclHelp))
	default:
		c.reply(subcommandSyntaxError(args))
	}
}

var aclHelp = []string{
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
}

// maxACLRules bounds one ACL SETUSER: what goes through the log is
// bounded like any command, and a rule list this long is a mistake.
const maxACLRules = 1024

// aclApply sends an ACL change through the backend (the log, in a
// cluster), so that every node applies it at the same point.
func (c *conn) aclApply(cmd fsm.Command) (resp.Reply, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.cfg.CommandTimeout)
	defer cancel()
	res, err := c.srv.backend.Apply(ctx, cmd)
	if err != nil {
		return resp.Err(errorText(err)), false
	}
	if err := c.srv.appliedHere(ctx, res); err != nil {
		return resp.Err(errorText(err)), false
	}
	return res.Reply, !res.Reply.IsError()
}

func aclSetUser(c *conn, args [][]byte) {
	if len(args)-3 > maxACLRules {
		c.reply(resp.Err("ERR too many ACL rules in one ACL SETUSER (at most " + strconv.Itoa(maxACLRules) + ")"))
		return
	}
	rules := make([]string, len(args)-3)
	for i, r := range args[3:] {
		rules[i] = string(r)
	}
	// Checked here first, so that a rule in error never reaches the log.
	if _, _, err := c.srv.users().SetUser(string(args[2]), rules); err != nil {
		c.reply(resp.Err("ERR " + err.Error()))
		return
	}
	r, ok := c.aclApply(fsm.ACLSetUserCommand(args[2], args[3:]))
	c.reply(r)
	if ok {
		c.srv.dropRemovedUsers(c)
	}
}

func aclDelUser(c *conn, args [][]byte) {
	for _, a := range args[2:] {
		if string(a) == "default" {
			c.reply(resp.Err("ERR The 'default' user cannot be removed"))
			return
		}
	}
	r, ok := c.aclApply(fsm.ACLDelUserCommand(args[2:]))
	c.reply(r)
	if ok {
		c.srv.dropRemovedUsers(c)
	}
}

func aclLoad(c *conn) {
	name := c.srv.cfg.ACLFile
	text, err := os.ReadFile(name)
	if err != nil {
		c.reply(resp.Err("ERR Error loading ACLs, opening file '" + name + "': " + errnoText(err)))
		return
	}
	if _, err := acl.ParseFile(name, string(text)); err != nil {
		c.reply(resp.Err("ERR " + err.Error()))
		return
	}
	r, ok := c.aclApply(fsm.ACLLoadCommand(string(text)))
	c.reply(r)
	if ok {
		c.srv.dropRemovedUsers(c)
	}
}

func errnoText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// saveACLFile writes the users to name: a temporary file beside it,
// synced, then renamed over it.
func saveACLFile(name, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

func aclGenPass(c *conn, args [][]byte) {
	bits := int64(256)
	if len(args) == 3 {
		v, err := parseInt(args[2])
		if err != nil {
			c.reply(resp.Err(msgNotInt))
			return
		}
		bits = v
	}
	if bits <= 0 || bits > 4096 {
		c.reply(resp.Err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"))
		return
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	if _, err := rand.Read(buf); err != nil {
		c.reply(resp.Err("ERR " + err.Error()))
		return
	}
	c.reply(resp.BulkString(hex.EncodeToString(buf)[:chars]))
}

func aclDryRun(c *conn, args [][]byte) {
	u := c.srv.users().Get(string(args[2]))
	if u == nil {
		c.reply(resp.Err("ERR User '" + string(args[2]) + "' not found"))
		return
	}
	argv := args[3:]
	cmd := acl.LookupArgs(argv)
	if cmd == nil || !knownCommand(argv[0]) {
		c.reply(resp.Err("ERR Command '" + string(argv[0]) + "' not found"))
		return
	}
	if !arityOK(cmd.Arity, len(argv)) {
		c.reply(resp.Err("ERR wrong number of arguments for '" + cmd.Name + "' command"))
		return
	}
	d := u.Check(cmd, argv)
	switch d.Reason {
	case acl.DeniedNone:
		c.reply(resp.OK)
	case acl.DeniedCmd:
		c.reply(resp.BulkString("This user has no permissions to run the '" + cmd.Name + "' command"))
	case acl.DeniedKey:
		c.reply(resp.BulkString("This user has no permissions to access the '" + string(argv[d.Pos]) + "' key"))
	default:
		c.reply(resp.BulkString("This user has no permissions to access the '" + string(argv[d.Pos]) + "' channel"))
	}
}

// knownCommand reports whether this node answers a command by that name.
func knownCommand(name []byte) bool {
	if _, ok := lookupConn(name); ok {
		return true
	}
	s, ok := fsm.Lookup(name)
	return ok && s.Flags&fsm.Internal == 0
}

func getUserReply(u *acl.User) resp.Reply {
	flags := make([]resp.Reply, 0, 3)
	for _, f := range u.Flags() {
		flags = append(flags, resp.BulkString(f))
	}
	pw := make([]resp.Reply, len(u.Passwords))
	for i, p := range u.Passwords {
		pw[i] = resp.BulkString(p)
	}
	root := u.Selectors[0]
	sels := make([]resp.Reply, 0, len(u.Selectors)-1)
	for _, s := range u.Selectors[1:] {
		sels = append(sels, resp.MapReply(selectorFields(s)...))
	}
	fields := []resp.Reply{
		resp.BulkString("flags"), resp.SetReply(flags...),
		resp.BulkString("passwords"), resp.ArrayReply(pw...),
	}
	fields = append(fields, selectorFields(root)...)
	fields = append(fields, resp.BulkString("selectors"), resp.ArrayReply(sels...))
	return resp.MapReply(fields...)
}

func selectorFields(s *acl.Selector) []resp.Reply {
	return []resp.Reply{
		resp.BulkString("commands"), resp.BulkString(s.CommandRules()),
		resp.BulkString("keys"), resp.BulkString(s.KeysRule()),
		resp.BulkString("channels"), resp.BulkString(s.ChannelsRule()),
	}
}

// dropRemovedUsers closes the connections whose user no longer exists
// (ACL DELUSER, ACL LOAD), and the subscribers whose user may no longer
// use a channel they are subscribed to, as Redis does. On the other nodes
// of a cluster the watcher does it when it sees the change (watchUsers);
// a command sent before that finds the user gone itself.
func (s *Server) dropRemovedUsers(self *conn) {
	t := s.users()
	s.mu.Lock()
	var victims []*conn
	for _, o := range s.conns {
		if o.member {
			continue
		}
		o.mu.Lock()
		gone := false
		if o.user != nil {
			nu := t.Get(o.user.Name)
			gone = nu == nil || !subsAllowed(nu, &o.subs)
		}
		o.mu.Unlock()
		if gone {
			victims = append(victims, o)
		}
	}
	s.mu.Unlock()
	for _, o := range victims {
		if o == self {
			o.closing = true // after its reply
			continue
		}
		o.abort()
	}
}

// watchUsers closes the connections of removed users when the table
// changes through the log (a change made on another node), until done.
func (s *Server) watchUsers(done <-chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	last := s.users()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if cur := s.users(); cur != last {
				last = cur
				s.dropRemovedUsers(nil)
			}
		}
	}
}

// subsAllowed reports whether u may keep every subscription in subs.
func subsAllowed(u *acl.User, subs *subscriptions) bool {
	if u.Unrestricted() {
		return true
	}
	for kind, names := range subs {
		for _, ch := range names {
			if !u.ChannelAllowed([]byte(ch), subKind(kind) == subPattern) {
				return false
			}
		}
	}
	return true
}

// userNameLocked is userName for another goroutine's connection.
func (c *conn) userNameLocked() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.userName()
}

// recheckQueued checks a transaction's queued commands again at EXEC, as
// Redis does, in case the user's rules changed since they were queued: a
// command no longer allowed is replaced by one that answers Redis's
// NOPERM in its place (fsm's __denied), and the others run. It reports
// false, having answered, when the user is gone.
func (c *conn) recheckQueued(m *multiState) bool {
	if c.member {
		return true
	}
	if !c.syncUser() {
		c.reply(resp.Err("NOPERM this user has been deleted"))
		return false
	}
	if c.user.Unrestricted() {
		return true
	}
	for i, args := range m.queued {
		cmd := acl.LookupArgs(args)
		d := c.user.Check(cmd, args)
		if d.Reason == acl.DeniedNone {
			continue
		}
		c.srv.aclLog.add(c, d.Reason, "multi", denialObject(d, cmd, strings.ToLower(string(args[0])), args), c.userName(), args)
		if i < len(m.local) && m.local[i] != nil {
			m.local[i] = nil // now the state machine's to answer
			m.nlocal--
		}
		m.queued[i] = fsm.DeniedCommand(msgACLChanged + aclChangedWhy(d.Reason))
	}
	return true
}
