package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Users is a table of users. It is never changed in place: every change
// returns a new table, so that readers need no lock.
type Users struct {
	byName map[string]*User
}

// NewUsers returns the table of a server without ACL configuration: the
// default user alone.
func NewUsers() *Users {
	return &Users{byName: map[string]*User{"default": DefaultUser()}}
}

// Get returns a user, nil if there is none by that name.
func (t *Users) Get(name string) *User { return t.byName[name] }

// Default returns the default user.
func (t *Users) Default() *User { return t.byName["default"] }

// Names returns the user names in byte order (ACL USERS).
func (t *Users) Names() []string {
	names := make([]string, 0, len(t.byName))
	for n := range t.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (t *Users) with(u *User) *Users {
	n := &Users{byName: make(map[string]*User, len(t.byName)+1)}
	for k, v := range t.byName {
		n.byName[k] = v
	}
	n.byName[u.Name] = u
	return n
}

// mergeSelectors joins the rules of a selector written over several
// arguments ("(~a" "+get)") into one, as Redis does; bad is the index of
// an unclosed one.
func mergeSelectors(rules []string) (merged []string, bad int, ok bool) {
	open := -1
	var cur string
	for i, r := range rules {
		if open < 0 && strings.HasPrefix(r, "(") && !strings.HasSuffix(r, ")") {
			open, cur = i, r
			continue
		}
		if open >= 0 {
			cur += " " + r
			if strings.HasSuffix(r, ")") {
				merged = append(merged, cur)
				open = -1
			}
			continue
		}
		merged = append(merged, r)
	}
	if open >= 0 {
		return nil, open, false
	}
	return merged, 0, true
}

// SetUser applies rules to a user (created if missing), all or none, and
// returns the new table; the error is ACL SETUSER's text without "ERR ".
func (t *Users) SetUser(name string, rules []string) (*Users, *User, error) {
	if hasSpace(name) {
		return nil, nil, errors.New("Usernames can't contain spaces or null characters")
	}
	merged, bad, ok := mergeSelectors(rules)
	if !ok {
		return nil, nil, fmt.Errorf("Unmatched parenthesis in acl selector starting at '%s'.", rules[bad])
	}
	var u *User
	if old := t.byName[name]; old != nil {
		u = old.clone()
	} else {
		u = NewUser(name)
	}
	for _, r := range merged {
		if err := u.apply(r); err != nil {
			return nil, nil, fmt.Errorf("Error in ACL SETUSER modifier '%s': %s", r, err)
		}
	}
	u.finish()
	if !reloads(u) {
		return nil, nil, errors.New("Error in ACL SETUSER: a selector's pattern ends in ')', so the user's description would not load back; deadbolt refuses it (Redis accepts it and cannot load its own ACL SAVE)")
	}
	return t.with(u), u, nil
}

// reloads reports whether u's description makes the same user again: the
// users are kept in snapshots and ACL files as descriptions, so one that
// does not load back would stop a node from restoring its own state.
// Redis 7.0 takes a selector such as "(&a))", whose description does not
// load.
func reloads(u *User) bool {
	desc := u.Describe()
	again := NewUser(u.Name)
	merged, _, ok := mergeSelectors(strings.Fields(desc))
	if !ok {
		return false
	}
	for _, r := range merged {
		if again.apply(r) != nil {
			return false
		}
	}
	return again.Describe() == desc
}

// DelUsers removes users; the default user cannot be removed.
func (t *Users) DelUsers(names []string) (*Users, int, error) {
	for _, n := range names {
		if n == "default" {
			return nil, 0, errors.New("The 'default' user cannot be removed")
		}
	}
	n := &Users{byName: make(map[string]*User, len(t.byName))}
	for k, v := range t.byName {
		n.byName[k] = v
	}
	deleted := 0
	for _, name := range names {
		if _, ok := n.byName[name]; ok {
			delete(n.byName, name)
			deleted++
		}
	}
	return n, deleted, nil
}

// List is ACL LIST: "user <name> <rules>" for each user in name order.
func (t *Users) List() []string {
	names := t.Names()
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "user " + n + " " + t.byName[n].Describe()
	}
	return out
}

// File is the table in the ACL file format (ACL SAVE): one line a user.
func (t *Users) File() string {
	var b strings.Builder
	for _, l := range t.List() {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// IsInitial reports whether the table is NewUsers' (nothing configured).
func (t *Users) IsInitial() bool {
	if len(t.byName) != 1 {
		return false
	}
	d := t.byName["default"]
	return d != nil && d.Describe() == DefaultUser().Describe()
}

// LoadRefusedWarning ends ParseFile's error, as Redis ends ACL LOAD's.
const LoadRefusedWarning = "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"

// ParseFile reads an ACL file (Redis's format: "user <name> <rules>" a
// line). name is used in the error texts, which are Redis's: every line in
// error is reported, and nothing is loaded when one is. A file without the
// default user gets it as NewUsers has it.
func ParseFile(name, text string) (*Users, error) {
	t := &Users{byName: make(map[string]*User)}
	var errs strings.Builder
	for i, line := range strings.Split(text, "\n") {
		num := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		argv = slices.DeleteFunc(argv, func(s string) bool { return s == "" })
		if len(argv) == 0 {
			continue
		}
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", name, num)
			continue
		}
		if hasSpace(argv[1]) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", name, num, argv[1])
			continue
		}
		if t.byName[argv[1]] != nil {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], num)
			continue
		}
		u := NewUser(argv[1])
		t.byName[u.Name] = u
		merged, _, ok := mergeSelectors(argv[2:])
		if !ok {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", name, num)
		}
		syntaxErr := false
		for _, r := range merged {
			if err := u.apply(strings.Trim(r, "\t\r\n")); err != nil {
				if err == errUnknownName {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", name, num, r, err)
				} else if !syntaxErr {
					fmt.Fprintf(&errs, "%s:%d: %s. ", name, num, err)
					syntaxErr = true
				}
			}
		}
		u.finish()
		if !syntaxErr && !reloads(u) {
			fmt.Fprintf(&errs, "%s:%d: a selector's pattern ends in ')', so the user's description would not load back. ", name, num)
		}
	}
	if errs.Len() > 0 {
		return nil, errors.New(errs.String() + LoadRefusedWarning)
	}
	if t.byName["default"] == nil {
		t.byName["default"] = DefaultUser()
	}
	return t, nil
}

// WithDefaultPassword returns the table with the default user's passwords
// replaced by pass, or made nopass when pass is empty (requirepass).
func (t *Users) WithDefaultPassword(pass string) *Users {
	rules := []string{"resetpass", "nopass"}
	if pass != "" {
		rules = []string{"resetpass", ">" + pass}
	}
	n, _, err := t.SetUser("default", rules)
	if err != nil {
		panic(err) // these rules cannot fail
	}
	return n
}

// Authenticate returns the user that name and pass log in as, or nil
// (unknown user, disabled, or a wrong password).
func (t *Users) Authenticate(name, pass []byte) *User {
	u := t.byName[string(name)]
	if u == nil || !u.Enabled {
		return nil
	}
	if u.NoPass {
		return u
	}
	h := HashPassword(pass)
	ok := false
	for _, p := range u.Passwords {
		ok = ok || constantTimeEq(p, h)
	}
	if !ok {
		return nil
	}
	return u
}

func constantTimeEq(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var d byte
	for i := 0; i < len(a); i++ {
		d |= a[i] ^ b[i]
	}
	return d == 0
}
