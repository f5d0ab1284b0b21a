package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/lathist"
)

// Per-command accounting: one hook (countAs, from dispatch, and account,
// from endCommand) feeds INFO commandstats, errorstats and latencystats,
// SLOWLOG (slowlog.go) and the Prometheus command series (package
// httpapi, through CommandStats). A command's counters sit in a slice
// indexed by its table ID, so counting is a few atomic adds and no map
// lookup; only subcommands of containers ("client|list") go through a map.

type cmdStat struct {
	calls, failed, rejected atomic.Uint64
	usec                    atomic.Uint64
	lat                     lathist.Hist // nanoseconds, calls that ran
}

// commandStats holds every command's counters. CONFIG RESETSTAT swaps in
// fresh ones.
type commandStats struct {
	cur atomic.Pointer[statTable]
}

type statTable struct {
	byID []atomic.Pointer[cmdStat] // fsm commands, then connection commands
	subs sync.Map                  // "client|list" -> *cmdStat
}

func (cs *commandStats) table() *statTable {
	if t := cs.cur.Load(); t != nil {
		return t
	}
	t := &statTable{byID: make([]atomic.Pointer[cmdStat], fsm.NumCommands()+len(connCommands))}
	if cs.cur.CompareAndSwap(nil, t) {
		return t
	}
	return cs.cur.Load()
}

func (cs *commandStats) reset() { cs.cur.Store(nil) }

// slot returns the counters of a command by table ID, or by full name for
// a subcommand; allocated at the first call.
func (t *statTable) slot(id int, full string) *cmdStat {
	if strings.IndexByte(full, '|') >= 0 {
		if v, ok := t.subs.Load(full); ok {
			return v.(*cmdStat)
		}
		v, _ := t.subs.LoadOrStore(full, new(cmdStat))
		return v.(*cmdStat)
	}
	p := &t.byID[id]
	if st := p.Load(); st != nil {
		return st
	}
	p.CompareAndSwap(nil, new(cmdStat))
	return p.Load()
}

// countAs notes which command a request is, for account: spec if the
// state machine runs it, cs if the server answers it, neither if unknown
// (an unknown command is counted in errorstats only, as in Redis).
func (c *conn) countAs(spec *fsm.Spec, cs *connSpec, isConn bool, args [][]byte) {
	c.adm.args = args
	t := c.srv.cmdStats.table()
	switch {
	case spec != nil:
		c.adm.stat = t.slot(spec.ID, c.lastCmd)
	case isConn:
		c.adm.stat = t.slot(fsm.NumCommands()+cs.id, c.lastCmd)
	default:
		c.adm.stat = nil
	}
}

// account records a finished request: its counters, its error, and a
// SLOWLOG entry if it was slow.
func (c *conn) account(took time.Duration) {
	a := &c.adm
	s := c.srv
	failed := a.errPrefix != ""
	if failed {
		s.errStats.record(a.errPrefix)
	}
	if st := a.stat; st != nil {
		switch {
		case a.rejected:
			st.rejected.Add(1)
		default:
			if failed {
				st.failed.Add(1)
			}
			st.calls.Add(1)
			st.usec.Add(uint64(took.Microseconds()))
			st.lat.RecordDuration(took)
			if s.slow.isSlow(took) {
				s.slow.add(c, a.args, took)
			}
		}
	}
	a.stat, a.args = nil, nil
}

// CommandStat is one command's counters, for the metrics endpoint.
type CommandStat struct {
	Name                    string // "get", "client|list"
	Calls, Failed, Rejected uint64 // Calls includes Failed, not Rejected
	Latency                 *lathist.Snap
}

// CommandStats returns the counters of every command called since the
// start or the last CONFIG RESETSTAT, sorted by name.
func (s *Server) CommandStats() []CommandStat {
	var out []CommandStat
	s.eachCommandStat(func(name string, st *cmdStat) {
		out = append(out, CommandStat{Name: name, Calls: st.calls.Load(), Failed: st.failed.Load(),
			Rejected: st.rejected.Load(), Latency: st.lat.Snapshot()})
	})
	slices.SortFunc(out, func(a, b CommandStat) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// eachCommandStat calls fn for each command with counters.
func (s *Server) eachCommandStat(fn func(name string, st *cmdStat)) {
	t := s.cmdStats.cur.Load()
	if t == nil {
		return
	}
	names := commandNamesByID()
	for i := range t.byID {
		if st := t.byID[i].Load(); st != nil {
			fn(names[i], st)
		}
	}
	t.subs.Range(func(k, v any) bool {
		fn(k.(string), v.(*cmdStat))
		return true
	})
}

// commandNamesByID lists the command names by table ID.
var commandNamesByID = sync.OnceValue(func() []string {
	out := make([]string, fsm.NumCommands()+len(connCommands))
	for _, sp := range fsm.Commands() {
		out[sp.ID] = sp.Name
	}
	for _, cs := range connCommands {
		out[fsm.NumCommands()+cs.id] = cs.name
	}
	return out
})

// commandstatsLines is INFO commandstats.
func (s *Server) commandstatsLines() []string {
	var out []string
	s.eachCommandStat(func(name string, st *cmdStat) {
		calls, usec := st.calls.Load(), st.usec.Load()
		if calls == 0 && st.rejected.Load() == 0 {
			return // running now for the first time
		}
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		out = append(out, fmt.Sprintf("cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			name, calls, usec, per, st.rejected.Load(), st.failed.Load()))
	})
	slices.Sort(out)
	return out
}

// latencystatsLines is INFO latencystats: the 50th, 99th and 99.9th
// percentiles of each command's latency in microseconds, as Redis's
// latency-tracking-info-percentiles default has them. The percentiles
// come from lathist's buckets (within 12.5 %), not from an HDR histogram
// as in Redis; commands that never ran (only rejected) have no line.
func (s *Server) latencystatsLines() []string {
	var out []string
	var snap lathist.Snap
	s.eachCommandStat(func(name string, st *cmdStat) {
		st.lat.SnapshotInto(&snap)
		if snap.Count == 0 {
			return
		}
		us := func(q float64) string { return strconv.FormatFloat(snap.Quantile(q)/1e3, 'f', 3, 64) }
		out = append(out, "latency_percentiles_usec_"+name+":p50="+us(0.5)+",p99="+us(0.99)+",p99.9="+us(0.999))
	})
	slices.Sort(out)
	return out
}
