package fsm

import (
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/luaexec"
	"github.com/deadbolt/deadbolt/resp"
)

// maxmemory (fsm/DESIGN.md, "maxmemory").
//
// The limit is on a logical size that every replica computes alike: the
// sum over the keys of what memusage.go estimates Redis would take for
// each, never the Go heap (which differs from node to node with garbage
// collection and history). A command is refused when the size was already
// over the limit before the command, as Redis 7.0 refuses a denyoom
// command when used_memory > maxmemory; the decision is made where the
// entry is applied, so every node refuses the same writes.
//
// The size is kept only while maxmemory is set: without a limit nothing
// reads it, and measuring would cost every write (a fifth of a SET's
// apply). The apply that sets a limit where there was none counts every
// key once (O(keys)); the apply that sets it back to 0 drops the totals.
// Both are log entries, so every replica starts and stops counting at
// the same index, and a restore counts only if the restored settings
// have a limit. Without one, the hot path pays one predictable branch
// (memOn) before memNote and memSettle.
//
// While it is kept, the total is kept incrementally. The first time a
// command meets a key (lookup, put, remove on the apply path) the key's
// size before the command is noted; when the command is done, each noted
// key's size now replaces it. A key is never measured unless a command
// touched it, and a command costs what measuring its own keys costs. A
// flush drops its databases' totals at once.
//
// The size counts each value as if its encoding were decided by its
// content with Redis's default thresholds (as after a restore), not by
// its history or by the thresholds CONFIG SET changed: history is not in
// snapshots, so a node restored from one would otherwise disagree with
// the leader about the same keys. A list longer than listWalk elements is
// sized from its first ones, without walking the rest, so that an LPUSH
// on a long list stays O(1).

// msgOOM is Redis's shared.oomerr.
const msgOOM = "OOM command not allowed when used memory > 'maxmemory'."

// OOMError is the error Redis answers a command refused for memory (the
// server's, for a command queued in MULTI while over the limit).
const OOMError = msgOOM

// msgScriptOOM is what Redis's scriptPrepareForRun answers for a script
// with flags but without allow-oom, when it gets that far.
const msgScriptOOM = "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"

// memAccount is the logical size and the limit.
type memAccount struct {
	used  [NumDBs]int64
	total int64
	limit int64 // maxmemory; 0 for none
	// dirty are the keys the command being applied met, with their
	// size before it; index finds them once there are many.
	dirty []memSlot
	index map[memKey]int
	// over publishes overLimit after each command, for OverMaxmemory.
	over *atomic.Bool
}

type memKey struct {
	db  int
	key string
}

type memSlot struct {
	memKey
	before int64
}

// indexFrom is how many noted keys a linear search looks through before
// the account builds an index.
const indexFrom = 8

func init() {
	settingDefaults["maxmemory"] = "0"
	replicatedSettings["maxmemory"] = func(f *FSM, v string) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return false
		}
		was := f.mem.limit
		f.mem.limit = n
		switch {
		case n == 0:
			delete(f.settings, "maxmemory") // snapshots stay version 1
			f.memStop()
			return true
		case was == 0:
			// Nothing was noted while there was no limit (memOn), so
			// no command's notes are lost: count from scratch.
			f.memRecount()
		}
		f.settings["maxmemory"] = strconv.FormatInt(n, 10)
		return true
	}
}

// LogicalMemory returns the logical size of the data (INFO memory) and
// the maxmemory limit (0 for none). The size is counted only while there
// is a limit: without one it is 0.
func (f *FSM) LogicalMemory() (used, limit int64) { return f.mem.total, f.mem.limit }

// OverMaxmemoryFunc returns a function that reports whether the logical
// size was over maxmemory after the last command applied. Unlike the
// state machine's other methods, the function may be called at any time,
// from any goroutine (it outlives restores, as UsersFunc's does).
func (f *FSM) OverMaxmemoryFunc() func() bool { return f.mem.over.Load }

// MemoryRefusal is the reply cmd would get now if it were refused for
// memory before it ran (ok false), or ok true. A leader that is over the
// limit uses it to refuse a denyoom command without proposing it, so that
// refused writes do not fill the log; the decision that counts is still
// the one each node makes when it applies an entry.
func (f *FSM) MemoryRefusal(cmd Command) (r resp.Reply, ok bool) {
	c := &Ctx{f: f, readOnly: true, oom: f.mem.overLimit(), foldNames: cmd.FoldFunctionNames}
	return c.oomRefusal(cmd)
}

// overLimit is Redis's out-of-memory state for the next command.
func (m *memAccount) overLimit() bool { return m.limit > 0 && m.total > m.limit }

// memOn is whether the logical size is kept: while maxmemory is set. The
// apply path tests it before memNote and memSettle, so that without a
// limit a write pays this one branch and nothing else.
func (m *memAccount) memOn() bool { return m.limit > 0 }

// accountSize is a key's share of the logical size (see above).
func accountSize(v *Value, keyLen int) int64 {
	if v == nil {
		return 0
	}
	if v.Kind == KindList {
		return listSizeBounded(v.list()) + sdsAlloc(keyLen) + sizeDictEntry
	}
	tmp := *v
	defaultEncLimits.settleEncoding(&tmp)
	return memoryUsage(&tmp, keyLen, defaultSamples)
}

// listWalk is how many elements of a list the logical size reads.
const listWalk = 32

// listSizeBounded is objectSize's quicklist estimate for a list of up to
// listWalk elements. For a longer one it reads only the first listWalk:
// their average entry is taken for every element, packed into nodes of
// quicklistNodeMax bytes, so that a push onto a long list costs no walk
// over it.
func listSizeBounded(l *List) int64 {
	n := int64(l.Len())
	if n <= listWalk {
		return objectSize(&Value{Kind: KindList, agg: l}, defaultSamples)
	}
	var b int64
	for i := range listWalk {
		b += lpEntrySize(l.Index(i))
	}
	// k elements take 7+k*b/listWalk bytes of listpack.
	perNode := max(1, (quicklistNodeMax-7)*listWalk/b)
	size := sizeRobj + sizeQuicklist + n/perNode*(sizeQuicklistNode+jemallocSize(7+perNode*b/listWalk))
	if rest := n % perNode; rest > 0 {
		size += sizeQuicklistNode + jemallocSize(7+rest*b/listWalk)
	}
	return size
}

// memNote records key's size before the command, the first time the
// command meets it. Reads served outside the log note nothing. Callers
// test memOn first (a call's arguments cost even when it returns at once).
func (c *Ctx) memNote(key string) {
	if c.readOnly {
		return
	}
	m := &c.f.mem
	k := memKey{c.dbIndex, key}
	if m.index != nil {
		if _, ok := m.index[k]; ok {
			return
		}
	} else {
		for i := range m.dirty {
			if m.dirty[i].memKey == k {
				return
			}
		}
	}
	m.dirty = append(m.dirty, memSlot{memKey: k, before: accountSize(c.db.keys.get(key), len(key))})
	if m.index != nil {
		m.index[k] = len(m.dirty) - 1
	} else if len(m.dirty) > indexFrom {
		m.index = make(map[memKey]int, 2*indexFrom)
		for i, s := range m.dirty {
			m.index[s.memKey] = i
		}
	}
}

// memFlushed drops a flushed database's size (every one for db < 0).
func (c *Ctx) memFlushed(db int) {
	m := &c.f.mem
	if !m.memOn() {
		return
	}
	kept := m.dirty[:0]
	for _, s := range m.dirty {
		if db < 0 || s.db == db {
			continue
		}
		kept = append(kept, s)
	}
	clear(m.dirty[len(kept):])
	m.dirty = kept
	if m.index != nil {
		m.index = make(map[memKey]int, len(kept))
		for i, s := range kept {
			m.index[s.memKey] = i
		}
	}
	for i := range m.used {
		if db < 0 || i == db {
			m.total -= m.used[i]
			m.used[i] = 0
		}
	}
}

// memSettle replaces the noted keys' sizes with their sizes now.
func (f *FSM) memSettle() {
	m := &f.mem
	for _, s := range m.dirty {
		after := accountSize(f.dbs[s.db].keys.get(s.key), len(s.key))
		m.used[s.db] += after - s.before
		m.total += after - s.before
	}
	clear(m.dirty)
	m.dirty = m.dirty[:0]
	m.index = nil
	m.over.Store(m.overLimit())
}

// memStop drops the totals and the notes: the limit is gone, and with it
// the counting (memOn).
func (f *FSM) memStop() {
	m := &f.mem
	clear(m.dirty)
	m.dirty = m.dirty[:0]
	m.index = nil
	m.used = [NumDBs]int64{}
	m.total = 0
	m.over.Store(false)
}

// memRecount measures every key: when a limit is set where there was
// none, and on a restore with a limit.
func (f *FSM) memRecount() {
	m := &f.mem
	m.total = 0
	for i, ks := range f.dbs {
		m.used[i] = 0
		for k, v := range ks.keys.all() {
			m.used[i] += accountSize(v, len(k))
		}
		m.total += m.used[i]
	}
	m.over.Store(m.overLimit())
}

// deniedOnOOM reports whether Redis flags this command line denyoom: by
// its table, and for a script by its flags (a script without a shebang
// is not; one with flags is unless it has allow-oom or no-writes).
func (c *Ctx) deniedOnOOM(spec *Spec, args [][]byte) bool {
	if spec.Flags&Scripting != 0 {
		switch spec.Name {
		case "eval", "eval_ro":
			return scriptDeniesOOM(args[1])
		case "evalsha", "evalsha_ro":
			s, ok := c.f.script(args[1])
			return ok && scriptDeniesOOM(s.body)
		case "fcall", "fcall_ro":
			fn, ok := c.f.functionMeta(args[1], c.foldNames)
			return ok && !slices.Contains(fn.Flags, "allow-oom") && !fn.noWrites()
		}
	}
	return hasFlag(acl.LookupArgs(args), "denyoom")
}

func hasFlag(cmd *acl.Command, flag string) bool {
	return cmd != nil && slices.Contains(cmd.Flags, flag)
}

// scriptDeniesOOM reads a script's shebang as Redis's
// scriptFlagsToCmdFlags does.
func scriptDeniesOOM(body []byte) bool {
	flags, _, msg := luaexec.ParseShebang(body)
	return msg == "" && flags&luaexec.FlagEvalCompat == 0 && flags&(luaexec.FlagAllowOOM|luaexec.FlagNoWrites) == 0
}

// scriptAllowsOOM is whether a script declared allow-oom: then none of
// its calls is refused.
func scriptAllowsOOM(body []byte) bool {
	flags, _, _ := luaexec.ParseShebang(body)
	return flags&luaexec.FlagEvalCompat == 0 && flags&luaexec.FlagAllowOOM != 0
}

// oomRefusal is the reply to a command refused for memory before it runs
// (ok false), as Redis's processCommand refuses it; a transaction with a
// denied command is discarded whole, as EXEC's execCommandAbort does.
func (c *Ctx) oomRefusal(cmd Command) (resp.Reply, bool) {
	if !c.oom {
		return resp.Reply{}, true
	}
	if cmd.Args == nil {
		for _, args := range cmd.Tx {
			if spec, ok := Lookup(args[0]); ok && spec.arityOK(len(args)) && c.deniedOnOOM(spec, args) {
				return resp.Err("EXECABORT Transaction discarded because of: " + msgOOM), false
			}
		}
		return resp.Reply{}, true
	}
	if spec, ok := Lookup(cmd.Args[0]); ok && spec.arityOK(len(cmd.Args)) && c.deniedOnOOM(spec, cmd.Args) {
		return resp.Err(msgOOM), false
	}
	return resp.Reply{}, true
}

// scriptOOM is scriptVerifyOOM: a denyoom call from a script is refused
// when memory was over the limit as the command began, unless the script
// declared allow-oom or has already written (it cannot stop half way).
func (c *Ctx) scriptOOM(args [][]byte) (resp.Reply, bool) {
	if !c.oom || c.script.allowOOM {
		return resp.Reply{}, true
	}
	cmd := acl.LookupArgs(args)
	if !c.script.wrote && hasFlag(cmd, "denyoom") && !c.countsInPlace(args) {
		return resp.Err(msgOOM), false
	}
	if hasFlag(cmd, "write") {
		c.script.wrote = true
	}
	return resp.Reply{}, true
}

// countsInPlace reports whether a script's call is HINCRBY of a field
// that exists: it adds no key and no field, so deadbolt lets it through
// over the limit, where Redis refuses it as it refuses every denyoom
// call before a script's first write. Redisson's unlock script begins its
// writes with one (the hold count, decremented), and a lock server must
// let its locks be released at the limit; the rest of that script then
// runs as a script that already wrote. Decided on the state alone, so
// alike on every replica.
func (c *Ctx) countsInPlace(args [][]byte) bool {
	if len(args) != 4 || !optEq(args[0], "hincrby") {
		return false
	}
	v, ok := c.lookupKind(args[1], KindHash)
	if !ok || v == nil {
		return false
	}
	_, ok = v.hash().peek(args[2])
	return ok
}
