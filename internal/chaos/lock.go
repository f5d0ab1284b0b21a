package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// A Section is one lock holder's critical section, as the holder saw it.
//
// The holder may act under the lock from the moment its acquire returned
// (Start) until it invoked its unlock or its lease ran out, whichever came
// first (End). Its lease is counted from the invocation of the last
// acquire or renewal that the server acknowledged (LeaseStart): the server
// stamped that command no earlier, and the cluster's clock runs no faster
// than real time, so the server keeps the lock at least until
// LeaseStart+Lease. Two sections of one lock that overlap in real time are
// two clients holding it at once.
type Section struct {
	Lock       string  `json:"lock"`
	Owner      string  `json:"owner"`
	Process    int     `json:"process"`
	Node       string  `json:"node"`
	AcqInvoke  int64   `json:"acq_invoke"`
	Start      int64   `json:"start"`
	LeaseStart int64   `json:"lease_start"`
	Lease      int64   `json:"lease"`
	End        int64   `json:"end"`
	Renewals   int     `json:"renewals"`
	Guards     []Guard `json:"guards,omitempty"`
	// Lost is set when the server said, within the lease, that this
	// owner did not hold the lock (a renewal or a guarded write answered
	// 0, or the unlock nil): an acknowledged acquire was lost.
	Lost     string  `json:"lost,omitempty"`
	LostAt   int64   `json:"lost_at,omitempty"`
	UnlockOK Outcome `json:"unlock"`
}

// Valid is when the section's claim to the lock ends.
func (s Section) Valid() int64 { return min(s.End, s.LeaseStart+s.Lease) }

// A Guard is a write the holder made while holding: a script appends
// token to the lock's guard list only if the server still shows the holder
// as owner (a fenced write).
type Guard struct {
	Token    string  `json:"token"`
	Invoke   int64   `json:"invoke"`
	Complete int64   `json:"complete"`
	Outcome  Outcome `json:"outcome"`
	Applied  bool    `json:"applied"` // the script answered 1
}

// ClockJump is an injected change of a leader's clock.
type ClockJump struct {
	At    int64  `json:"at"`
	Delta int64  `json:"delta"` // ns; positive is forward
	Node  string `json:"node"`
}

// Violation is one broken property.
type Violation struct {
	Check  string `json:"check"`
	Detail string `json:"detail"`
	// Explained is set when an injected forward clock jump of the leader
	// accounts for the violation (the lease assumption was broken on
	// purpose); such violations are reported apart.
	Explained string `json:"explained,omitempty"`
}

func ms(ns int64) string { return time.Duration(ns).Round(time.Millisecond).String() }

// jumpLatency is how long after the harness writes a node's clock offset
// the node may start using it (it re-reads the file every 50 ms).
const jumpLatency = int64(100 * time.Millisecond)

// forwardJump returns the total forward clock jump that may have taken
// effect in (from, to]: injected in (from-jumpLatency, to].
func forwardJump(jumps []ClockJump, from, to int64) int64 {
	var sum int64
	for _, j := range jumps {
		if j.Delta > 0 && j.At > from-jumpLatency && j.At <= to {
			sum += j.Delta
		}
	}
	return sum
}

// explain says whether an injected forward jump accounts for a lock whose
// guaranteed end (A's lease end) came early by short, given the evidence
// at time at.
func explain(jumps []ClockJump, leaseStart, at, short int64) string {
	j := forwardJump(jumps, leaseStart, at)
	const slack = int64(250 * time.Millisecond) // stamps and polling of the offset file
	if j > 0 && short <= j+slack {
		return fmt.Sprintf("leader clock jumped forward %s during the lease; the lock ended %s early", ms(j), ms(short))
	}
	return ""
}

// CheckMutex checks that no two sections of a lock overlap, and that no
// holder was told it lost the lock while its lease ran.
func CheckMutex(sections []Section, jumps []ClockJump) []Violation {
	var out []Violation
	by := map[string][]Section{}
	for _, s := range sections {
		by[s.Lock] = append(by[s.Lock], s)
	}
	locks := make([]string, 0, len(by))
	for l := range by {
		locks = append(locks, l)
	}
	sort.Strings(locks)
	for _, l := range locks {
		ss := by[l]
		sort.Slice(ss, func(i, j int) bool { return ss[i].Start < ss[j].Start })
		for i := range ss {
			a := ss[i]
			for j := i + 1; j < len(ss) && ss[j].Start < a.Valid(); j++ {
				b := ss[j]
				if b.Valid() <= b.Start {
					continue
				}
				v := Violation{Check: "mutual-exclusion", Detail: fmt.Sprintf(
					"%s: %s (p%d via %s) held [%s, %s] and %s (p%d via %s) acquired at %s (invoked %s): overlap %s",
					l, a.Owner, a.Process, a.Node, ms(a.Start), ms(a.Valid()), b.Owner, b.Process, b.Node,
					ms(b.Start), ms(b.AcqInvoke), ms(min(a.Valid(), b.Valid())-b.Start))}
				v.Explained = explain(jumps, a.LeaseStart, b.Start, a.LeaseStart+a.Lease-b.Start)
				out = append(out, v)
			}
		}
		for _, s := range ss {
			if s.Lost == "" || s.LostAt >= s.LeaseStart+s.Lease {
				continue
			}
			v := Violation{Check: "lock-lost", Detail: fmt.Sprintf(
				"%s: %s (p%d via %s) acquired at %s, lease until %s, but at %s %s",
				l, s.Owner, s.Process, s.Node, ms(s.Start), ms(s.LeaseStart+s.Lease), ms(s.LostAt), s.Lost)}
			v.Explained = explain(jumps, s.LeaseStart, s.LostAt, s.LeaseStart+s.Lease-s.LostAt)
			out = append(out, v)
		}
	}
	return out
}

// CheckGuards checks a lock's guard list, read after healing, against the
// fenced writes the holders made: every acknowledged write is there once,
// no refused or failed write is, each owner's writes form one run (the
// server never let two owners write in turns), and writes that did not
// overlap in real time are in real-time order.
func CheckGuards(lock string, list []string, sections []Section) []Violation {
	var out []Violation
	type gw struct {
		g     Guard
		owner string
	}
	writes := map[string]gw{}
	for _, s := range sections {
		if s.Lock != lock {
			continue
		}
		for _, g := range s.Guards {
			writes[g.Token] = gw{g, s.Owner}
		}
	}
	pos := map[string]int{}
	for i, tok := range list {
		if _, dup := pos[tok]; dup {
			out = append(out, Violation{Check: "guard-duplicate", Detail: fmt.Sprintf("%s: %s appears twice", lock, tok)})
			continue
		}
		pos[tok] = i
		w, ok := writes[tok]
		switch {
		case !ok:
			out = append(out, Violation{Check: "guard-phantom", Detail: fmt.Sprintf("%s: %s in the list was never written", lock, tok)})
		case w.g.Outcome == Fail:
			out = append(out, Violation{Check: "guard-failed-applied", Detail: fmt.Sprintf("%s: %s failed (%s) but was applied", lock, tok, "definite error")})
		case w.g.Outcome == OK && !w.g.Applied:
			out = append(out, Violation{Check: "guard-refused-applied", Detail: fmt.Sprintf("%s: %s was refused (not owner) but is in the list", lock, tok)})
		}
	}
	for tok, w := range writes {
		if w.g.Outcome == OK && w.g.Applied {
			if _, ok := pos[tok]; !ok {
				out = append(out, Violation{Check: "guard-lost", Detail: fmt.Sprintf("%s: acknowledged write %s (at %s) is missing", lock, tok, ms(w.g.Complete))})
			}
		}
	}
	// Each owner's tokens form one contiguous run.
	seen := map[string]bool{}
	prev := ""
	for _, tok := range list {
		owner := tok
		if i := strings.LastIndexByte(tok, '#'); i >= 0 {
			owner = tok[:i]
		}
		if owner != prev {
			if seen[owner] {
				out = append(out, Violation{Check: "guard-interleaved", Detail: fmt.Sprintf("%s: owner %s wrote again after %s had written: two owners held the lock in turns", lock, owner, prev)})
			}
			seen[owner] = true
			prev = owner
		}
	}
	// Real-time order of acknowledged writes.
	var acked []gw
	for _, w := range writes {
		if _, ok := pos[w.g.Token]; ok && w.g.Outcome == OK {
			acked = append(acked, w)
		}
	}
	sort.Slice(acked, func(i, j int) bool { return acked[i].g.Complete < acked[j].g.Complete })
	// prefix[k] is the write with the largest list position among the
	// first k to complete.
	prefix := make([]int, len(acked)+1)
	for k := range acked {
		prefix[k+1] = prefix[k]
		if k == 0 || pos[acked[k].g.Token] > pos[acked[prefix[k]-1].g.Token] {
			prefix[k+1] = k + 1
		}
	}
	for _, b := range acked {
		n := sort.Search(len(acked), func(k int) bool { return acked[k].g.Complete >= b.g.Invoke })
		if n == 0 {
			continue
		}
		a := acked[prefix[n]-1]
		if pos[a.g.Token] > pos[b.g.Token] {
			out = append(out, Violation{Check: "guard-order", Detail: fmt.Sprintf("%s: %s completed at %s before %s was invoked at %s, but comes after it", lock, a.g.Token, ms(a.g.Complete), b.g.Token, ms(b.g.Invoke))})
		}
	}
	return out
}
