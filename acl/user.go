package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
)

// User is an ACL user. A User is never changed once it is in a Users
// table: a change makes a new one (Users.SetUser), so connections may keep
// a pointer to the one they authenticated as without a lock.
type User struct {
	Name      string
	Enabled   bool
	NoPass    bool
	Sanitize  int8     // 0 unset, 1 sanitize-payload, -1 skip-sanitize-payload
	Passwords []string // SHA-256, lower-case hex
	Selectors []*Selector

	unrestricted bool // root selector allows everything: no check needed
}

// Selector is a set of permissions; a command is allowed when one of the
// user's selectors allows it. The first is the user's root selector.
type Selector struct {
	Root        bool
	AllKeys     bool
	AllChannels bool
	AllCommands bool // +@all given and no command removed since
	bits        [maxCommands / 64]uint64
	firstArgs   map[int][]string // +cmd|arg of a command without subcommands
	Patterns    []KeyPattern
	Channels    []string
}

// KeyPattern is a key glob with the access it grants.
type KeyPattern struct {
	Pattern string
	Perm    uint8
}

// Errors of a rule, with Redis's texts.
var (
	errUnknownName = errors.New("Unknown command or category name in ACL")
	errSyntax      = errors.New("Syntax error")
	errAfterAllKey = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errAfterAllCh  = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errNoSuchPass  = errors.New("The password you are trying to remove from the user does not exist")
	errBadHash     = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errSubFirstArg = errors.New("Allowing first-arg of a subcommand is not supported")
)

// NewUser returns a user as ACL SETUSER creates it: off, no password, no
// permissions (Redis 7.0's acl-pubsub-default is resetchannels).
func NewUser(name string) *User {
	return &User{Name: name, Selectors: []*Selector{{Root: true}}}
}

// DefaultUser is the "default" user of a server without ACL
// configuration: on, nopass, everything allowed.
func DefaultUser() *User {
	u := NewUser("default")
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		if err := u.apply(op); err != nil {
			panic(err)
		}
	}
	u.finish()
	return u
}

// Unrestricted reports whether the user may run every command on every key
// and channel, so that no check is needed.
func (u *User) Unrestricted() bool { return u.unrestricted }

func (u *User) clone() *User {
	n := *u
	n.Passwords = slices.Clone(u.Passwords)
	n.Selectors = make([]*Selector, len(u.Selectors))
	for i, s := range u.Selectors {
		n.Selectors[i] = s.clone()
	}
	return &n
}

func (s *Selector) clone() *Selector {
	n := *s
	n.Patterns = slices.Clone(s.Patterns)
	n.Channels = slices.Clone(s.Channels)
	if s.firstArgs != nil {
		n.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, a := range s.firstArgs {
			n.firstArgs[id] = slices.Clone(a)
		}
	}
	return &n
}

func (u *User) finish() {
	r := u.Selectors[0]
	u.unrestricted = r.AllCommands && r.AllKeys && r.AllChannels
}

// HashPassword is the SHA-256 of a password in lower-case hex, the form
// passwords are kept in.
func HashPassword(pass []byte) string {
	h := sha256.Sum256(pass)
	return hex.EncodeToString(h[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func hasSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// apply applies one rule to u (a staging copy).
func (u *User) apply(op string) error {
	if op == "" {
		return nil
	}
	switch strings.ToLower(op) {
	case "on":
		u.Enabled = true
		return nil
	case "off":
		u.Enabled = false
		return nil
	case "skip-sanitize-payload":
		u.Sanitize = -1
		return nil
	case "sanitize-payload":
		u.Sanitize = 1
		return nil
	case "nopass":
		u.NoPass, u.Passwords = true, nil
		return nil
	case "resetpass":
		u.NoPass, u.Passwords = false, nil
		return nil
	case "clearselectors":
		u.Selectors = u.Selectors[:1]
		return nil
	case "reset":
		u.NoPass, u.Passwords = false, nil
		r := u.Selectors[0]
		r.apply("resetkeys")
		r.apply("resetchannels")
		u.Enabled = false
		u.Sanitize = 1
		u.Selectors = u.Selectors[:1]
		r.apply("-@all")
		return nil
	}
	switch op[0] {
	case '>', '#':
		var h string
		if op[0] == '>' {
			h = HashPassword([]byte(op[1:]))
		} else {
			if !validHash(op[1:]) {
				return errBadHash
			}
			h = op[1:]
		}
		if !slices.Contains(u.Passwords, h) {
			u.Passwords = append(u.Passwords, h)
		}
		u.NoPass = false
		return nil
	case '<', '!':
		var h string
		if op[0] == '<' {
			h = HashPassword([]byte(op[1:]))
		} else {
			if !validHash(op[1:]) {
				return errBadHash
			}
			h = op[1:]
		}
		i := slices.Index(u.Passwords, h)
		if i < 0 {
			return errNoSuchPass
		}
		u.Passwords = slices.Delete(u.Passwords, i, i+1)
		return nil
	case '(':
		if op[len(op)-1] != ')' {
			return errSyntax
		}
		s := &Selector{}
		for _, sub := range splitArgs(op[1 : len(op)-1]) {
			if err := s.apply(sub); err != nil {
				return err
			}
		}
		u.Selectors = append(u.Selectors, s)
		return nil
	}
	return u.Selectors[0].apply(op)
}

// splitArgs splits a selector's inside on spaces (Redis's sdssplitargs,
// without quotes: rules have no spaces).
func splitArgs(s string) []string { return strings.Fields(s) }

func (s *Selector) setBit(id int, on bool) {
	if on {
		s.bits[id/64] |= 1 << (id % 64)
	} else {
		s.bits[id/64] &^= 1 << (id % 64)
		s.AllCommands = false
	}
}

func (s *Selector) bit(id int) bool { return s.bits[id/64]&(1<<(id%64)) != 0 }

// changePerm allows or denies a command and, for a container, its
// subcommands.
func (s *Selector) changePerm(c *Command, allow bool) {
	s.setBit(c.ID, allow)
	delete(s.firstArgs, c.ID)
	for _, sub := range c.Subs {
		s.setBit(sub.ID, allow)
	}
}

func (s *Selector) setCategory(cat uint32, allow bool) {
	for _, c := range commands {
		if c.Cats&cat != 0 {
			s.changePerm(c, allow)
		}
	}
}

func (s *Selector) apply(op string) error {
	lower := strings.ToLower(op)
	switch lower {
	case "allkeys", "~*":
		s.AllKeys, s.Patterns = true, nil
		return nil
	case "resetkeys":
		s.AllKeys, s.Patterns = false, nil
		return nil
	case "allchannels", "&*":
		s.AllChannels, s.Channels = true, nil
		return nil
	case "resetchannels":
		s.AllChannels, s.Channels = false, nil
		return nil
	case "allcommands", "+@all":
		for i := range s.bits {
			s.bits[i] = ^uint64(0)
		}
		s.AllCommands, s.firstArgs = true, nil
		return nil
	case "nocommands", "-@all":
		s.bits = [maxCommands / 64]uint64{}
		s.AllCommands, s.firstArgs = false, nil
		return nil
	}
	switch {
	case op[0] == '~' || op[0] == '%':
		if s.AllKeys {
			return errAfterAllKey
		}
		perm, off := PermAll, 1
		if op[0] == '%' {
			perm = 0
			for ; off < len(op); off++ {
				c := op[off]
				if (c == 'R' || c == 'r') && perm&PermRead == 0 {
					perm |= PermRead
				} else if (c == 'W' || c == 'w') && perm&PermWrite == 0 {
					perm |= PermWrite
				} else if c == '~' {
					off++
					break
				} else {
					return errSyntax
				}
			}
		}
		pat := op[min(off, len(op)):]
		if hasSpace(pat) {
			return errSyntax
		}
		for i := range s.Patterns {
			if s.Patterns[i].Pattern == pat {
				s.Patterns[i].Perm |= perm
				return nil
			}
		}
		s.Patterns = append(s.Patterns, KeyPattern{Pattern: pat, Perm: perm})
		return nil
	case op[0] == '&':
		if s.AllChannels {
			return errAfterAllCh
		}
		pat := op[1:]
		if hasSpace(pat) {
			return errSyntax
		}
		if !slices.Contains(s.Channels, pat) {
			s.Channels = append(s.Channels, pat)
		}
		return nil
	case len(op) > 1 && (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := CategoryBit(op[2:])
		if cat == 0 {
			return errUnknownName
		}
		s.setCategory(cat, op[0] == '+')
		return nil
	case op[0] == '+':
		name := lower[1:]
		i := strings.LastIndexByte(name, '|')
		if i < 0 {
			c := byName[name]
			if c == nil {
				return errUnknownName
			}
			s.changePerm(c, true)
			return nil
		}
		c := byName[name[:i]]
		if c == nil {
			return errUnknownName
		}
		if c.Parent != nil {
			return errSubFirstArg
		}
		if i == len(name)-1 {
			return errSyntax
		}
		if len(c.Subs) > 0 {
			sub := byName[name]
			if sub == nil {
				return errUnknownName
			}
			s.changePerm(sub, true)
			return nil
		}
		arg := op[1+i+1:]
		if s.firstArgs == nil {
			s.firstArgs = make(map[int][]string)
		}
		for _, a := range s.firstArgs[c.ID] {
			if strings.EqualFold(a, arg) {
				return nil
			}
		}
		s.firstArgs[c.ID] = append(s.firstArgs[c.ID], arg)
		return nil
	case op[0] == '-':
		c := byName[lower[1:]]
		if c == nil {
			return errUnknownName
		}
		s.changePerm(c, false)
		return nil
	}
	return errSyntax
}
