package acl

import (
	"strings"

	"github.com/deadbolt/deadbolt/internal/glob"
)

// Denial says why a command was refused; Reason is DeniedNone when it was
// not.
type Denial struct {
	Reason int
	Pos    int // the argument (key or channel) refused, for DeniedKey and DeniedChannel
}

// Reasons of a Denial, in Redis's order of precedence.
const (
	DeniedNone = iota
	DeniedCmd
	DeniedKey
	DeniedAuth
	DeniedChannel
)

// Channel use of an argument.
const (
	chanPublish = 1 << iota
	chanSubscribe
	chanPattern
)

type chanRef struct {
	pos   int
	flags int
}

// channelsOf returns the channel arguments that ACLs check: what PUBLISH,
// SPUBLISH and the SUBSCRIBE family name (unsubscribing is always allowed).
func channelsOf(c *Command, argv [][]byte) []chanRef {
	var fl int
	switch c.Name {
	case "publish", "spublish":
		if len(argv) > 1 {
			return []chanRef{{1, chanPublish}}
		}
		return nil
	case "subscribe", "ssubscribe":
		fl = chanSubscribe
	case "psubscribe":
		fl = chanSubscribe | chanPattern
	default:
		return nil
	}
	out := make([]chanRef, 0, len(argv)-1)
	for i := 1; i < len(argv); i++ {
		out = append(out, chanRef{i, fl})
	}
	return out
}

// keysFor returns the keys of argv that ACLs check, with the access each
// needs: those of the key specs, refined as Redis's key procedures do
// (ProcKeys).
func keysFor(c *Command, argv [][]byte) []KeyRef {
	if len(c.Specs) == 0 {
		return nil
	}
	keys, ok := FindKeys(c.Specs, argv)
	if !ok {
		return nil
	}
	return ProcKeys(c.Name, argv, keys)
}

// Check reports whether u may run argv, whose table row is c (nil for a
// command the table does not know: allowed only to a selector that may run
// future commands).
func (u *User) Check(c *Command, argv [][]byte) Denial {
	if u.unrestricted {
		return Denial{}
	}
	var keys []KeyRef
	keysDone := false
	best := Denial{Reason: DeniedCmd}
	for _, s := range u.Selectors {
		d := s.check(c, argv, &keys, &keysDone)
		if d.Reason == DeniedNone {
			return d
		}
		if d.Reason > best.Reason || d.Reason == best.Reason && d.Pos > best.Pos {
			best = d
		}
	}
	return best
}

func (s *Selector) allows(c *Command, argv [][]byte) bool {
	if c == nil {
		return s.bit(futureBit)
	}
	if s.AllCommands || c.NoAuth || s.bit(c.ID) {
		return true
	}
	args := s.firstArgs[c.ID]
	if len(args) == 0 || len(argv) < 2 {
		return false
	}
	idx := 1
	if c.Parent != nil {
		idx = 2
	}
	if idx >= len(argv) {
		return false
	}
	for _, a := range args {
		if strings.EqualFold(a, string(argv[idx])) {
			return true
		}
	}
	return false
}

func (s *Selector) check(c *Command, argv [][]byte, keys *[]KeyRef, keysDone *bool) Denial {
	if !s.allows(c, argv) {
		return Denial{Reason: DeniedCmd}
	}
	if c == nil {
		return Denial{}
	}
	if !s.AllKeys && len(c.Specs) > 0 {
		if !*keysDone {
			*keys, *keysDone = keysFor(c, argv), true
		}
		for _, k := range *keys {
			if !s.keyAllowed(argv[k.Pos], k.Perm) {
				return Denial{Reason: DeniedKey, Pos: k.Pos}
			}
		}
	}
	if !s.AllChannels {
		for _, ch := range channelsOf(c, argv) {
			if !s.channelAllowed(argv[ch.pos], ch.flags&chanPattern != 0) {
				return Denial{Reason: DeniedChannel, Pos: ch.pos}
			}
		}
	}
	return Denial{}
}

func (s *Selector) keyAllowed(key []byte, perm uint8) bool {
	if s.AllKeys {
		return true
	}
	for _, p := range s.Patterns {
		if p.Perm&perm != perm {
			continue
		}
		if glob.Match([]byte(p.Pattern), key) {
			return true
		}
	}
	return false
}

func (s *Selector) channelAllowed(ch []byte, isPattern bool) bool {
	if s.AllChannels {
		return true
	}
	for _, p := range s.Channels {
		if isPattern && p == string(ch) || !isPattern && glob.Match([]byte(p), ch) {
			return true
		}
	}
	return false
}

// KeyAllowed reports whether one of u's selectors grants perm on key
// (Redis's ACLUserCheckKeyPerm: SORT's BY and GET patterns, for instance).
func (u *User) KeyAllowed(key []byte, perm uint8) bool {
	for _, s := range u.Selectors {
		if s.keyAllowed(key, perm) {
			return true
		}
	}
	return false
}

// ChannelAllowed reports whether u may use a channel (or, with isPattern,
// subscribe to a pattern).
func (u *User) ChannelAllowed(ch []byte, isPattern bool) bool {
	for _, s := range u.Selectors {
		if s.channelAllowed(ch, isPattern) {
			return true
		}
	}
	return false
}

// Message is the reason of a denial as scripts and ACL LOG word it:
// "can't run this command or subcommand", ...
func (d Denial) Message() string {
	switch d.Reason {
	case DeniedCmd:
		return "can't run this command or subcommand"
	case DeniedKey:
		return "can't access at least one of the keys mentioned in the command arguments"
	case DeniedChannel:
		return "can't publish to the channel mentioned in the command"
	}
	return "lacking the permissions for the command"
}

// ReasonName is the reason as ACL LOG shows it.
func ReasonName(reason int) string {
	switch reason {
	case DeniedCmd:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// ReadsAnyKey reports whether one of u's selectors allows argv and may
// read every key (allkeys, ~* or %R~*): Redis's test before SORT's BY and
// GET patterns, which name keys the key specs do not show.
func (u *User) ReadsAnyKey(c *Command, argv [][]byte) bool {
	if u.unrestricted {
		return true
	}
	for _, s := range u.Selectors {
		var keys []KeyRef
		done := false
		if s.check(c, argv, &keys, &done).Reason != DeniedNone {
			continue
		}
		if s.AllKeys {
			return true
		}
		for _, p := range s.Patterns {
			if p.Pattern == "*" && p.Perm&PermRead != 0 {
				return true
			}
		}
	}
	return false
}

// KeyReader returns a test of whether u may read keys with argv (whose
// table row is c), for a command that shows keys' contents without naming
// them as arguments (DEADBOLT LOCKS): as if argv named the keys for
// reading, one selector must both allow the command and grant read access
// (~ or %R~) on every one of them, as Redis asks of a command naming
// several keys. It returns nil when u may read every key with argv, and a
// test that refuses everything when no selector allows argv.
func (u *User) KeyReader(c *Command, argv [][]byte) func(keys ...[]byte) bool {
	if u.unrestricted {
		return nil
	}
	var sels []*Selector
	for _, s := range u.Selectors {
		if c == nil || !s.allows(c, argv) {
			continue
		}
		if s.AllKeys {
			return nil
		}
		sels = append(sels, s)
	}
	return func(keys ...[]byte) bool {
	next:
		for _, s := range sels {
			for _, k := range keys {
				if !s.keyAllowed(k, PermRead) {
					continue next
				}
			}
			return true
		}
		return false
	}
}
