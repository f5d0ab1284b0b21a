package acl

import (
	"math"
	"strings"
)

// CommandRules describes a selector's commands as rules that recreate its
// bitmap: "+@all" or "-@all", then the categories that fit best, then
// single commands. Redis 7.0 builds it the same way, so that the same
// bitmap gives the same text (single commands follow the table's order
// here, Redis's hash order there).
func (s *Selector) CommandRules() string {
	var b strings.Builder
	fake := &Selector{}
	additive := !s.bit(futureBit)
	if additive {
		b.WriteString("-@all ")
	} else {
		b.WriteString("+@all ")
		fake.apply("+@all")
	}
	// temp starts as s; each category applied to fake is removed from it,
	// so that it is not counted twice.
	temp := &Selector{bits: s.bits}
	applied := make([]bool, len(Categories))
	for {
		best, minDiff, maxSame := -1, math.MaxInt, 0
		for j := range Categories {
			if applied[j] {
				continue
			}
			on, off := temp.countCategory(1 << j)
			diff, same := off, on
			if !additive {
				diff, same = on, off
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		sign, inv := "+@", "-@"
		if !additive {
			sign, inv = "-@", "+@"
		}
		fake.apply(sign + Categories[best])
		temp.apply(inv + Categories[best])
		b.WriteString(sign + Categories[best] + " ")
		applied[best] = true
	}
	for _, c := range commands {
		if c.Parent != nil {
			continue // with its parent, below
		}
		s.describeOne(&b, fake, c)
		for _, sub := range c.Subs {
			s.describeOne(&b, fake, sub)
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}

func (s *Selector) describeOne(b *strings.Builder, fake *Selector, c *Command) {
	have := s.bit(c.ID)
	if have != fake.bit(c.ID) {
		if have {
			b.WriteString("+")
		} else {
			b.WriteString("-")
		}
		b.WriteString(c.Name + " ")
		fake.changePerm(c, have)
	}
	if !have {
		for _, a := range s.firstArgs[c.ID] {
			b.WriteString("+" + c.Name + "|" + a + " ")
		}
	}
}

func (s *Selector) countCategory(cat uint32) (on, off int) {
	for _, c := range commands {
		if c.Cats&cat != 0 {
			if s.bit(c.ID) {
				on++
			} else {
				off++
			}
		}
	}
	return on, off
}

// KeysRule describes the key patterns: "~*", or each pattern as ~p, %R~p
// or %W~p, space separated.
func (s *Selector) KeysRule() string {
	if s.AllKeys {
		return "~*"
	}
	parts := make([]string, len(s.Patterns))
	for i, p := range s.Patterns {
		parts[i] = p.String()
	}
	return strings.Join(parts, " ")
}

// ChannelsRule describes the channel patterns: "&*" or each as &p.
func (s *Selector) ChannelsRule() string {
	if s.AllChannels {
		return "&*"
	}
	parts := make([]string, len(s.Channels))
	for i, p := range s.Channels {
		parts[i] = "&" + p
	}
	return strings.Join(parts, " ")
}

func (p KeyPattern) String() string {
	switch p.Perm {
	case PermRead:
		return "%R~" + p.Pattern
	case PermWrite:
		return "%W~" + p.Pattern
	}
	return "~" + p.Pattern
}

// describe is the selector as ACL LIST shows it.
func (s *Selector) describe() string {
	var b strings.Builder
	if s.AllKeys {
		b.WriteString("~* ")
	} else {
		for _, p := range s.Patterns {
			b.WriteString(p.String() + " ")
		}
	}
	if s.AllChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.Channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(s.CommandRules())
	return b.String()
}

// Flags are the user's flags as ACL GETUSER lists them.
func (u *User) Flags() []string {
	var out []string
	if u.Enabled {
		out = append(out, "on")
	} else {
		out = append(out, "off")
	}
	if u.NoPass {
		out = append(out, "nopass")
	}
	switch u.Sanitize {
	case -1:
		out = append(out, "skip-sanitize-payload")
	case 1:
		out = append(out, "sanitize-payload")
	}
	return out
}

// Describe is the user's rules as ACL LIST and an ACL file show them,
// without "user <name> ".
func (u *User) Describe() string {
	var b strings.Builder
	for _, f := range u.Flags() {
		b.WriteString(f + " ")
	}
	for _, p := range u.Passwords {
		b.WriteString("#" + p + " ")
	}
	for i, s := range u.Selectors {
		if i == 0 {
			b.WriteString(s.describe())
		} else {
			b.WriteString(" (" + s.describe() + ")")
		}
	}
	return b.String()
}
