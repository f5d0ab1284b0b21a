package fsm

import (
	"log/slog"
	"sync/atomic"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/resp"
)

// NumDBs is the number of logical databases, as in Redis.
const NumDBs = 16

// Command is one unit of work applied to the state machine: a single Redis
// command, or a whole MULTI/EXEC transaction.
type Command struct {
	DB    int        // database selected by the connection
	Args  [][]byte   // argv of a single command (nil for a transaction)
	Tx    [][][]byte // the queued commands of a transaction, applied as one
	Watch []Watch    // keys WATCHed by the connection; any change aborts Tx
	// User is the ACL user who sent the command, "" for one without
	// restrictions; what its scripts call is checked against that user's
	// permissions as the state machine holds them (acl.go).
	User string
	// FoldFunctionNames: function names compare without case for this
	// command (Redis 7.0's rule): FCALL, FCALL_RO, FUNCTION LOAD and
	// FUNCTION RESTORE, alone or queued in MULTI (function_names.go). The
	// leader sets it on what it writes under that rule (cluster's envelope
	// version 4); a command without it, written before the rule or with
	// --preserve-downgrade, compares them with case, as it did then.
	FoldFunctionNames bool
	// Encoded: the caller takes KEYS's reply over a large database
	// (walk.go) and SCAN's already encoded (resp.Encoded, in pieces) and
	// hands it to a client as it is. Never set where the reply's elements
	// are read (EXEC, a server's own reads). Not part of an applied
	// command.
	Encoded bool
}

// Watch is a key version observed by WATCH. EXEC aborts when the key's
// version is no longer the same.
type Watch struct {
	DB      int
	Key     string
	Version uint64
}

// Publish is a message published by a command. It is an effect, not
// state: each node delivers it to its own subscribers after applying.
type Publish struct {
	Channel []byte
	Message []byte
	Shard   bool // SPUBLISH
	// TxIndex is the 1-based position of the PUBLISH in its transaction
	// (0 outside one, or inside a script): its reply is the receiver count.
	TxIndex int
}

// Result is what applying a Command produced.
type Result struct {
	Reply   resp.Reply
	Effects []Publish
	DB      int // the connection's database afterwards (SELECT inside MULTI)
	// Receivers is filled in by the node after it delivered Effects to its
	// own subscribers: PUBLISH replies with it.
	Receivers int
	// LogIndex is the log position the command was applied at (0 on a
	// single node without a log); WAIT counts the nodes that have it.
	LogIndex uint64
	// Denials are the redis.call a script's ACL user was refused (the
	// serving node logs them in its ACL LOG).
	Denials []ACLDenial
}

// SetReceivers records how many subscribers each effect reached, as the
// node counted when it delivered them: Receivers is the total (a top-level
// PUBLISH replies with it), and a PUBLISH inside MULTI gets its own count
// in the EXEC reply. Nil counts mean none was reached.
func (r *Result) SetReceivers(counts []int) {
	r.Receivers = 0
	for i, n := range counts {
		r.Receivers += n
		if i >= len(r.Effects) {
			continue
		}
		if t := r.Effects[i].TxIndex; t > 0 && r.Reply.Type == resp.Array && t <= len(r.Reply.Elems) && r.Reply.Elems[t-1].Type == resp.Int {
			r.Reply.Elems[t-1].Int += int64(n)
		}
	}
}

// scriptEngine runs Lua scripts (luaexec, adapted in script_engine.go).
type scriptEngine interface {
	Compile(sha string, body []byte) resp.Reply
	Run(sha string, body []byte, keys, argv [][]byte, c caller) resp.Reply
	Forget()
	Close()
	// Function libraries (cmd_function.go). LoadLibrary runs a library's
	// code and holds what it made until KeepLibrary keeps it (or the next
	// load drops it).
	ParseLibraryMeta(code []byte) (name, errMsg string)
	LoadLibrary(name string, code []byte) ([]FunctionMeta, resp.Reply)
	KeepLibrary(name string)
	DropLibrary(name string) // "" drops every library
	HasLibrary(name string, code []byte) bool
	CallFunction(lib, fn string, keys, args [][]byte, c caller) resp.Reply
	// CallFunctionApart calls as CallFunction does, in a fresh copy of the
	// library, for a call outside the log (writesrefused.go).
	CallFunctionApart(lib, fn string, keys, args [][]byte, c caller) resp.Reply
	// ReadOnly reads a script's shebang: whether it declared no-writes,
	// or the error for a malformed shebang.
	ReadOnly(body []byte) (readOnly bool, errMsg string)
	// State and SetState carry what outlives a script run (Redis never
	// reseeds math.random between scripts): replicated, in snapshots.
	State() []byte
	SetState([]byte) error
}

// caller runs a script's redis.call (luaexec.Caller): args are valid only
// during the call.
type caller interface {
	Call(args [][]byte) resp.Reply
}

// newScriptEngine is set by script_engine.go.
var newScriptEngine = func(Options) scriptEngine { return nil }

// FSM is the keyspace and everything replicated with it. It is not safe
// for concurrent use: one goroutine applies, and reads are serialised with
// applies, and with each other (a read counts in calls), by the caller.
//
// Nothing in here reads the wall clock, draws random numbers or depends on
// Go's map iteration order: the same commands with the same times give the
// same state and the same replies on every node.
type FSM struct {
	dbs      [NumDBs]*keyspace
	now      int64  // ms; never moves backward
	version  uint64 // bumped by every change to a key; see versions.go
	tombs    tombstones
	scripts  map[string]storedScript // SCRIPT LOAD and EVAL bodies by sha1
	lua      scriptEngine            // compiled-script cache; derived, not replicated
	opt      Options
	expires  expiryIndex                // keys with a deadline, ordered for reaping
	nodes    map[string]string          // cluster members' client addresses by id
	settings map[string]string          // replicated CONFIG parameters (notify.go)
	enc      encLimits                  // the encoding thresholds among them (encoding.go)
	users    *acl.Users                 // ACL users (acl.go)
	aclPub   *atomic.Pointer[acl.Users] // users, for readers outside the apply path
	// libraries are the function libraries by name, functions the library
	// of each function by exact name, folded by lower-case name
	// (function_names.go); nil while there are none.
	libraries map[string]*library
	functions map[string]string
	folded    map[string]string
	// functionClash: two libraries hold names that differ only in case
	// (left by commands of the old rule, or restored from them): a
	// folded look-up or a dropped library then looks past f.folded.
	// Recomputed when a library is dropped (sharesFoldedName).
	functionClash bool
	notify        int      // notify-keyspace-events' classes
	applyCtx      Ctx      // reused by Apply (one at a time), so it allocates none
	calls         uint64   // commands run (applied, read, from scripts); cmd_bit.go's bitOwner uses it
	bitOwner      bitOwner // the string the bit commands may change in place (cmd_bit.go)
	// newHash is where a new hash packs its first fields until put moves
	// them in with its name (hashForWrite).
	newHash [sharedNameMax]byte
	// lockStats counts lock events as they are applied (locks.go): this
	// node's observations, not state; a restore keeps them.
	lockStats lockStats
	mem       memAccount // the logical size and maxmemory (maxmemory.go)
	// clusterID is the cluster's identity, set once by the first
	// __clusterid (clusterid.go); "" before.
	clusterID string
}

// Options tunes a state machine.
type Options struct {
	ScriptBudget int64 // work units one script may use; 0 for the default
	// Users are the ACL users until the log sets others (acl.go); nil for
	// the default user alone.
	Users *acl.Users
	// Logger gets warnings (a snapshot restore's, function_names.go);
	// nil for none.
	Logger *slog.Logger
	// Listened reports whether anything on this node is subscribed to a
	// channel, pattern or shard channel, so that a published message
	// could reach it; nil means always. While it reports false, PUBLISH,
	// SPUBLISH and keyspace notifications record no effect
	// (Result.Effects): there is no one to deliver them to, and copying
	// the channel and message was most of what a Redisson unlock's
	// PUBLISH cost. Effects are not state: no reply but the receivers'
	// count, which is then 0, and no snapshot depends on them.
	Listened func() bool
}

// New returns an empty state machine.
func New(opt Options) *FSM {
	f := newState(opt)
	f.lua = newScriptEngine(opt)
	return f
}

func newState(opt Options) *FSM {
	f := &FSM{scripts: make(map[string]storedScript), nodes: make(map[string]string), settings: make(map[string]string), opt: opt, enc: defaultEncLimits}
	f.users = initialUsers(opt)
	f.aclPub = new(atomic.Pointer[acl.Users])
	f.aclPub.Store(f.users)
	f.mem.over = new(atomic.Bool)
	for i := range f.dbs {
		f.dbs[i] = newKeyspace()
	}
	return f
}

// Close releases the script engine.
func (f *FSM) Close() {
	if f.lua != nil {
		f.lua.Close()
	}
}

// Now is the state machine's time in Unix milliseconds.
func (f *FSM) Now() int64 { return f.now }

// advance moves the clock to t unless that would move it backward.
func (f *FSM) advance(t int64) int64 {
	if t > f.now {
		f.now = t
	}
	return f.now
}

// Apply applies cmd at time now (taken from the log, stamped by the
// leader). It may change state.
func (f *FSM) Apply(now int64, cmd Command) Result {
	c := &f.applyCtx
	*c = Ctx{f: f, now: f.advance(now), startVersion: f.version, oom: f.mem.overLimit()}
	r := c.run(cmd)
	if f.mem.memOn() {
		f.memSettle()
	}
	*c = Ctx{} // keep nothing of the command alive
	return r
}

// Read runs a read-only command without changing any state, not even the
// clock or lazily expired keys. now is the caller's best view of the
// current time; the state machine's own clock is used if it is later.
func (f *FSM) Read(now int64, cmd Command) Result {
	if now < f.now {
		now = f.now
	}
	c := &Ctx{f: f, now: now, readOnly: true}
	return c.run(cmd)
}

func (c *Ctx) run(cmd Command) Result {
	if cmd.DB < 0 || cmd.DB >= NumDBs {
		return Result{Reply: resp.Err(msgDBIndex), DB: cmd.DB}
	}
	c.selectDB(cmd.DB)
	c.user = cmd.User
	c.foldNames = cmd.FoldFunctionNames
	c.encoded = cmd.Encoded && len(cmd.Args) > 0 && optEq(cmd.Args[0], "scan")
	if r, ok := c.oomRefusal(cmd); !ok {
		return Result{Reply: r, DB: cmd.DB}
	}
	var r resp.Reply
	if cmd.Args == nil {
		r = c.exec(cmd)
	} else {
		r = c.call(cmd.Args)
	}
	return Result{Reply: r, Effects: c.effects, DB: c.dbIndex, Denials: c.denials}
}

// exec applies a transaction: all commands or, if a watched key changed,
// none (nil array reply, as EXEC gives).
func (c *Ctx) exec(cmd Command) resp.Reply {
	for _, w := range cmd.Watch {
		if w.DB < 0 || w.DB >= NumDBs || c.f.keyVersion(w.DB, w.Key, c.now) != w.Version {
			return resp.Reply{Type: resp.NilArray}
		}
	}
	out := make([]resp.Reply, len(cmd.Tx))
	for i, args := range cmd.Tx {
		c.txIndex = i + 1
		out[i] = c.call(args)
	}
	c.txIndex = 0
	return resp.Reply{Type: resp.Array, Elems: out}
}

// Ctx is the context of one command being applied: the state, the
// database, the time, and what the command publishes.
type Ctx struct {
	f        *FSM
	db       *keyspace
	dbIndex  int
	now      int64
	readOnly bool      // served outside the log: must not change anything
	script   scriptRun // the script being run, if any (cmd_script.go)
	txIndex  int       // 1-based position in the transaction being applied
	effects  []Publish
	user     string // the ACL user running the command (Command.User)
	// foldNames: function names compare without case (Command.FoldFunctionNames)
	foldNames bool
	denials   []ACLDenial // script calls that user was refused
	// startVersion is the state's version before the command: a key with
	// a later version changed during it (locks.go).
	startVersion uint64
	// oom is whether the logical size was over maxmemory as the command
	// began: Redis's pre_command_oom_state (maxmemory.go).
	oom bool
	// writeRefusal, on a read that runs a script while writes are refused
	// (writesrefused.go), is the error a write call from it gets.
	writeRefusal string
	// encoded: the caller takes SCAN's reply encoded (Command.Encoded);
	// only a SCAN sent by a client, never one a script calls.
	encoded bool
}

func (c *Ctx) selectDB(i int) {
	c.dbIndex = i
	c.db = c.f.dbs[i]
}

// Now is the command's time in Unix milliseconds.
func (c *Ctx) Now() int64 { return c.now }

// publish records a message to deliver after the command is applied.
func (c *Ctx) publish(channel, msg []byte, shard bool) {
	c.publishTx(channel, msg, shard, c.txIndex)
}

// publishTx records a message whose receivers count toward the reply of
// the transaction's tx-th command (0: none; a keyspace notification).
func (c *Ctx) publishTx(channel, msg []byte, shard bool, tx int) {
	if l := c.f.opt.Listened; l != nil && !l() {
		return
	}
	if c.script.active {
		tx = 0
	}
	// One copy holds both; an empty one stays nil, as a copy by append
	// leaves it.
	b := make([]byte, len(channel)+len(msg))
	n := copy(b, channel)
	copy(b[n:], msg)
	p := Publish{Shard: shard, TxIndex: tx}
	if n > 0 {
		p.Channel = b[:n:n]
	}
	if len(msg) > 0 {
		p.Message = b[n:]
	}
	c.effects = append(c.effects, p)
}

// call looks up and runs one command with Redis's checks: unknown
// command, arity, and, for reads served outside the log, write commands.
func (c *Ctx) call(args [][]byte) resp.Reply {
	spec, ok := Lookup(args[0])
	if !ok {
		return resp.Err(UnknownCommand(args))
	}
	if !spec.arityOK(len(args)) {
		return resp.Err(WrongArity(spec.Name))
	}
	if c.readOnly && spec.Flags&Write != 0 && !ReadOnlyCall(args) {
		return resp.Err(msgWriteInRead)
	}
	c.f.calls++
	return spec.fn(c, args)
}
