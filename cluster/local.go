package cluster

import (
	"context"
	"github.com/deadbolt/deadbolt/acl"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
)

// Deliverer hands published messages to this node's own subscribers and
// returns how many subscribers received each.
type Deliverer interface {
	DeliverEach(msgs []fsm.Publish) []int
}

// Listener is a Deliverer that can tell when no one is subscribed
// (server.Hub): a node gives its Listened to the state machine
// (fsm.Options.Listened), which then records no published message.
type Listener interface {
	Listened() bool
}

// listened returns d's Listened, or nil if d cannot tell.
func listened(d Deliverer) func() bool {
	if l, ok := d.(Listener); ok {
		return l.Listened
	}
	return nil
}

// Clock is where a node takes time from. The leader stamps log entries
// with it; tests move a manual clock forward instead of sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a clock that starts at the real time and then moves only
// when told to; real time keeps passing underneath unless frozen. The zero
// value is the wall clock.
type ManualClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the wall clock plus every Advance so far.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// reapBatch is how many expired keys one active-expiry command removes.
const reapBatch = 1000

// reapInterval is how often a node checks for expired keys to reap.
const reapInterval = 100 * time.Millisecond

// Local drives a state machine on one node with no replication: commands
// are applied in the order they arrive, stamped with the local clock. It
// is the embedded single node and the in-process test double.
type Local struct {
	mu      sync.Mutex
	fsm     *fsm.FSM
	users   func() *acl.Users
	overMax func() bool // the state machine's OverMaxmemoryFunc
	clock   Clock
	deliver Deliverer

	stop chan struct{}
	done chan struct{}
}

// NewLocal returns a driver for f and starts its active expiry. deliver
// may be nil when nothing subscribes.
func NewLocal(f *fsm.FSM, clock Clock, deliver Deliverer) *Local {
	if clock == nil {
		clock = SystemClock{}
	}
	l := &Local{fsm: f, users: f.UsersFunc(), overMax: f.OverMaxmemoryFunc(), clock: clock, deliver: deliver, stop: make(chan struct{}), done: make(chan struct{})}
	go l.expireLoop()
	return l
}

func (l *Local) nowMs() int64 { return l.clock.Now().UnixMilli() }

// Synchronous reports that Local's methods never wait for anything but
// its lock, so the server may run its commands on an event loop.
func (l *Local) Synchronous() bool { return true }

// Apply applies one command (or transaction) and delivers what it
// published.
func (l *Local) Apply(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// no log to replay: Redis 7.0's rule for function names (upgrade.go)
	cmd.FoldFunctionNames = fsm.NamesFunctions(cmd)
	res := l.fsm.Apply(l.nowMs(), cmd)
	if len(res.Effects) > 0 && l.deliver != nil {
		res.SetReceivers(l.deliver.DeliverEach(res.Effects))
	}
	return res, nil
}

// Read runs a read-only command. A long one (KEYS over a large
// database) runs in steps, the lock free between them (fsm.Walk).
func (l *Local) Read(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
	l.mu.Lock()
	if w := l.fsm.BeginWalk(l.nowMs(), cmd); w != nil {
		l.mu.Unlock()
		return w.Run(&l.mu), nil
	}
	defer l.mu.Unlock()
	return l.fsm.Read(l.nowMs(), cmd), nil
}

// LongRead reports whether cmd is a long read, which the event loop
// runs on a goroutine of its own (server.LongReader).
func (l *Local) LongRead(cmd fsm.Command) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.LongRead(cmd)
}

// KeyVersion returns the version WATCH records for a key.
func (l *Local) KeyVersion(_ context.Context, db int, key string) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.KeyVersion(db, key, l.nowMs()), nil
}

// KeyspaceStats counts a database's keys and those with a deadline (INFO
// keyspace).
func (l *Local) KeyspaceStats(db int) (keys, expires int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.Stats(db)
}

// ScriptCount is the number of cached scripts (INFO memory).
func (l *Local) ScriptCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.ScriptCount()
}

// Expire runs one pass of active expiry now (tests call it after moving
// the clock); it returns how many keys it removed.
func (l *Local) Expire() int {
	n := 0
	for {
		l.mu.Lock()
		next, ok := l.fsm.NextDeadline()
		now := l.nowMs()
		if !ok || next > now {
			l.mu.Unlock()
			return n
		}
		res := l.fsm.Apply(now, fsm.ReapCommand(reapBatch))
		if len(res.Effects) > 0 && l.deliver != nil {
			l.deliver.DeliverEach(res.Effects) // "expired" notifications
		}
		l.mu.Unlock()
		n += int(res.Reply.Int)
		if res.Reply.Int < reapBatch {
			return n
		}
	}
}

func (l *Local) expireLoop() {
	defer close(l.done)
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.Expire()
		}
	}
}

// Close stops active expiry.
func (l *Local) Close() error {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
	return nil
}

// Snapshot writes the state machine's snapshot (for tests and tools).
func (l *Local) Snapshot(w interface{ Write([]byte) (int, error) }) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.Snapshot(w)
}

// LogicalMemory returns the state machine's logical size and maxmemory
// (INFO memory, MULTI's queueing).
func (l *Local) LogicalMemory() (used, limit int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.LogicalMemory()
}

// OverMaxmemory reports whether the state machine was over maxmemory
// after its last command; no lock.
func (l *Local) OverMaxmemory() bool { return l.overMax() }

// Setting returns a replicated setting's value (CONFIG GET).
func (l *Local) Setting(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.Setting(name)
}

// Users returns the ACL users (the server's permission checks); no lock:
// the state machine publishes them atomically.
func (l *Local) Users() *acl.Users { return l.users() }

// LockStats returns the state machine's lock counters (FSM.LockStats),
// one entry per fsm.LockKind.
func (l *Local) LockStats() []fsm.LockKindStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fsm.LockStats()
}

// InMemory reports that a single node keeps nothing on disk (SAVE says so).
func (l *Local) InMemory() bool { return true }
