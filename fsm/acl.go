package fsm

import (
	"strings"
	"sync/atomic"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/resp"
)

// ACL users are replicated state. ACL SETUSER, DELUSER and LOAD, and
// CONFIG SET requirepass, reach the state machine as __acl through the
// log, so that every node holds the same users from the same log index.
// The table is kept in snapshots as an ACL file (the replicated setting
// "__acl"); until the log changes it, a node has the users of its own
// start-up configuration (Options.Users: --requirepass, --aclfile).
//
// Readers outside the apply path (the server's permission checks) load the
// table from an atomic pointer the state machine publishes after every
// change; a table is never changed in place.

func init() {
	register(Spec{Name: "__acl", Arity: -2, Flags: Write | Internal | NoScript, fn: cmdACL})
	register(Spec{Name: "__denied", Arity: 2, Flags: Internal | NoScript, fn: func(_ *Ctx, args [][]byte) resp.Reply {
		return resp.Err(string(args[1]))
	}})
	replicatedSettings[aclSetting] = func(f *FSM, v string) bool {
		t, err := acl.ParseFile("snapshot", v)
		if err != nil {
			return false
		}
		f.users = t
		f.settings[aclSetting] = v
		return true
	}
}

const aclSetting = "__acl"

// Users returns the ACL users as of the last command applied. Call it
// where the state machine's other methods may be called; UsersFunc's
// function may be called from any goroutine.
func (f *FSM) Users() *acl.Users { return f.users }

// UsersFunc returns a function that returns the ACL users as of the last
// command applied, safe to call from any goroutine at any time (a Restore
// keeps it working).
func (f *FSM) UsersFunc() func() *acl.Users { return f.aclPub.Load }

func (f *FSM) setUsers(t *acl.Users) {
	f.users = t
	f.settings[aclSetting] = t.File()
	f.aclPub.Store(t)
}

func initialUsers(opt Options) *acl.Users {
	if opt.Users != nil {
		return opt.Users
	}
	return acl.NewUsers()
}

// DeniedCommand stands in a transaction for a queued command its user may
// no longer run (EXEC checks them again): it answers msg in its place.
func DeniedCommand(msg string) [][]byte {
	return [][]byte{[]byte("__denied"), []byte(msg)}
}

// ACLSetUserCommand is ACL SETUSER through the log.
func ACLSetUserCommand(name []byte, rules [][]byte) Command {
	return Command{Args: append([][]byte{[]byte("__acl"), []byte("setuser"), name}, rules...)}
}

// ACLDelUserCommand is ACL DELUSER through the log.
func ACLDelUserCommand(names [][]byte) Command {
	return Command{Args: append([][]byte{[]byte("__acl"), []byte("deluser")}, names...)}
}

// ACLLoadCommand replaces every user with those of an ACL file's text
// (ACL LOAD: the node that reads the file proposes its content).
func ACLLoadCommand(file string) Command {
	return Command{Args: [][]byte{[]byte("__acl"), []byte("load"), []byte(file)}}
}

// ACLPasswordCommand sets the default user's password, nopass when empty
// (CONFIG SET requirepass).
func ACLPasswordCommand(pass string) Command {
	return Command{Args: [][]byte{[]byte("__acl"), []byte("password"), []byte(pass)}}
}

func cmdACL(c *Ctx, args [][]byte) resp.Reply {
	c.mustWrite()
	f := c.f
	switch strings.ToLower(string(args[1])) {
	case "setuser":
		if len(args) < 3 {
			break
		}
		rules := make([]string, len(args)-3)
		for i, r := range args[3:] {
			rules[i] = string(r)
		}
		t, _, err := f.users.SetUser(string(args[2]), rules)
		if err != nil {
			return resp.Err("ERR " + err.Error())
		}
		f.setUsers(t)
		return resp.OK
	case "deluser":
		names := make([]string, len(args)-2)
		for i, n := range args[2:] {
			names[i] = string(n)
		}
		t, n, err := f.users.DelUsers(names)
		if err != nil {
			return resp.Err("ERR " + err.Error())
		}
		f.setUsers(t)
		return resp.IntReply(int64(n))
	case "load":
		if len(args) != 3 {
			break
		}
		t, err := acl.ParseFile("acl", string(args[2]))
		if err != nil {
			return resp.Err("ERR " + err.Error())
		}
		f.setUsers(t)
		return resp.OK
	case "password":
		if len(args) != 3 {
			break
		}
		f.setUsers(f.users.WithDefaultPassword(string(args[2])))
		return resp.OK
	}
	return resp.Err("ERR bad __acl command")
}

// scriptACL checks one redis.call of a script against the permissions of
// the user running it; it returns the error reply, or a zero Reply when
// the call is allowed.
func (c *Ctx) scriptACL(args [][]byte) (resp.Reply, bool) {
	if c.user == "" {
		return resp.Reply{}, true
	}
	u := c.f.users.Get(c.user)
	var d acl.Denial
	if u == nil {
		d = acl.Denial{Reason: acl.DeniedCmd}
	} else {
		d = u.Check(acl.LookupArgs(args), args)
	}
	if d.Reason == acl.DeniedNone {
		return resp.Reply{}, true
	}
	c.denials = append(c.denials, ACLDenial{Denial: d, Args: args})
	return resp.Err("ERR The user executing the script " + d.Message()), false
}

// CheckCommand answers redis.acl_check_cmd (luaexec.CommandChecker) as
// Redis 7.0 does: a command it does not know, or a container command with
// a subcommand it does not know, is invalid; otherwise whether the
// script's user may run it with these arguments. Nothing is logged (Redis
// adds no ACL LOG entry for it). The user table is replicated state, so
// every node answers the same.
func (s *scriptCaller) CheckCommand(args [][]byte) (known, allowed bool) {
	cmd := acl.LookupArgs(args)
	if cmd == nil || len(cmd.Subs) > 0 && len(args) >= 2 {
		return false, false
	}
	c := (*Ctx)(s)
	if c.user == "" {
		return true, true
	}
	u := c.f.users.Get(c.user)
	return true, u != nil && u.Check(cmd, args).Reason == acl.DeniedNone
}

// readsAnyKey reports whether the command's user may read every key with
// it (SORT's BY and GET patterns name keys no key spec shows).
func (c *Ctx) readsAnyKey(args [][]byte) bool {
	if c.user == "" {
		return true
	}
	u := c.f.users.Get(c.user)
	return u != nil && u.ReadsAnyKey(acl.LookupArgs(args), args)
}

// ACLDenial is a redis.call a script's user was refused, reported so that
// the node serving the client can add it to its ACL LOG.
type ACLDenial struct {
	acl.Denial
	Args [][]byte
}

var _ atomic.Pointer[acl.Users] // aclPub's type
