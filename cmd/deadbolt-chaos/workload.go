package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/chaos"
)

// The lock scripts, in the shape Redisson's RLock uses: a hash per lock,
// field = owner, value = re-entry count; acquire answers nil or the
// holder's PTTL; renew answers 1/0; unlock answers nil (not the owner), 0
// (still held, re-entered) or 1 (released, and a message published).
var (
	acquireScript = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`)
	renewScript = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0`)
	unlockScript = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)
	// guardScript is the holder's work under the lock: append a token to
	// the lock's guard list, only while the server shows it as owner.
	guardScript = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
  return 1
end
return 0`)
	getScript    = redis.NewScript(`return redis.call('get', KEYS[1])`)
	setScript    = redis.NewScript(`return redis.call('set', KEYS[1], ARGV[1])`)
	casScript    = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], ARGV[2]) return 1 end return 0`)
	appendScript = redis.NewScript(`return redis.call('rpush', KEYS[1], ARGV[1])`)
	lrangeScript = redis.NewScript(`return redis.call('lrange', KEYS[1], 0, -1)`)
)

// workload is the clients' shared state and what they recorded.
type workload struct {
	clock    *chaos.Clock
	targets  func() []string // client addresses to choose from
	failover func() redis.UniversalClient
	cfg      config
	values   atomic.Int64
	procs    atomic.Int64

	mu       sync.Mutex
	ops      []chaos.Op
	sections []chaos.Section
	lockOps  map[string]int // lock op outcome counts: "acquire ok" ...
	locks    []string
}

func newWorkload(clock *chaos.Clock, cfg config, targets func() []string) *workload {
	w := &workload{clock: clock, cfg: cfg, targets: targets, lockOps: map[string]int{}}
	for i := 0; i < cfg.locks; i++ {
		w.locks = append(w.locks, fmt.Sprintf("lock:{l%d}", i))
	}
	return w
}

func (w *workload) record(op chaos.Op) {
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
}

func (w *workload) count(what string) {
	w.mu.Lock()
	w.lockOps[what]++
	w.mu.Unlock()
}

// key names a register or list key: keys change every keyEpoch so that
// each key's history stays short enough for the checker.
func (w *workload) key(prefix string, rng *rand.Rand) string {
	epoch := time.Duration(w.clock.Now()) / w.cfg.keyEpoch
	return fmt.Sprintf("%s:%d:%d", prefix, epoch, rng.Intn(w.cfg.keysPerEpoch))
}

func (w *workload) value() string { return strconv.FormatInt(w.values.Add(1), 10) }

// client is one worker: a role, a connection to one node (or, against
// Redis, a Sentinel-aware client) and a process number that changes after
// every indeterminate operation (as a crashed Jepsen process would).
type client struct {
	w       *workload
	id      int
	role    string
	rng     *rand.Rand
	rdb     redis.UniversalClient
	node    string
	proc    int
	fails   int
	lastVal map[string]string
	// turn moves a reader to the next node every readerTurn operations,
	// so that each reader's reads reach the leader and every follower
	// (a follower serves reads itself at a read point from the leader).
	turn int
	ops  int
}

const readerTurn = 25

func (c *client) connect() {
	if c.rdb != nil {
		c.rdb.Close()
	}
	if c.w.failover != nil {
		c.rdb, c.node = c.w.failover(), "sentinel"
		return
	}
	ts := c.w.targets()
	c.node = ts[(c.id+c.rng.Intn(len(ts)))%len(ts)]
	if c.fails == 0 {
		c.node = ts[(c.id+c.turn)%len(ts)]
	}
	// Odd clients speak RESP3, even ones RESP2, so that both protocols'
	// replies travel through forwarding followers under the faults.
	c.rdb = redis.NewClient(&redis.Options{Addr: c.node, Protocol: 2 + c.id%2, MaxRetries: -1, DisableIdentity: true,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: c.w.cfg.opTimeout, WriteTimeout: c.w.cfg.opTimeout,
		PoolSize: 2, PoolTimeout: time.Second, ContextTimeoutEnabled: true})
}

// after notes an outcome: a new process after an indeterminate one; after a
// few failures in a row, another node.
func (c *client) after(o chaos.Outcome) {
	if o == chaos.Info {
		c.proc = int(c.w.procs.Add(1))
	}
	if o == chaos.OK {
		c.fails = 0
		return
	}
	c.fails++
	if c.fails%3 == 0 {
		c.connect()
	}
	time.Sleep(time.Duration(10+c.rng.Intn(40)) * time.Millisecond)
}

func (c *client) run(ctx context.Context) {
	c.proc = int(c.w.procs.Add(1))
	c.lastVal = map[string]string{}
	c.connect()
	defer func() { c.rdb.Close() }()
	for ctx.Err() == nil {
		switch c.role {
		case "lock":
			c.lockRound(ctx)
		case "register":
			c.registerOp(ctx, 4)
		case "reader":
			c.registerOp(ctx, 9)
			if c.ops++; c.ops%readerTurn == 0 && c.w.failover == nil {
				c.turn++
				c.connect()
			}
		case "list":
			c.listOp(ctx)
		}
	}
}

func (c *client) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	// Operations already started finish even as the run stops, so that
	// nothing is cut short by the harness itself.
	return context.WithTimeout(context.WithoutCancel(ctx), c.w.cfg.opTimeout)
}

func (c *client) via(choices ...string) string { return choices[c.rng.Intn(len(choices))] }

// registerOp reads a register (reads in ten), writes it, or compares and
// sets it.
func (c *client) registerOp(ctx context.Context, reads int) {
	op := chaos.Op{Process: c.proc, Kind: "register", Key: c.w.key("reg", c.rng), Node: c.node}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	r := c.rng.Intn(10)
	if r >= reads {
		r = 4 + c.rng.Intn(6) // a write, as the writes are spread among themselves
	} else {
		r = 0
	}
	switch {
	case r < 4:
		op.F, op.Via = "read", c.via("plain", "eval", "multi")
		c.w.clock.Do(octx, &op, func(ctx context.Context) error {
			var cmd *redis.Cmd
			var scmd *redis.StringCmd
			var err error
			switch op.Via {
			case "plain":
				scmd = c.rdb.Get(ctx, op.Key)
				err = scmd.Err()
			case "eval":
				cmd = getScript.Run(ctx, c.rdb, []string{op.Key})
				err = cmd.Err()
			case "multi":
				_, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { scmd = p.Get(ctx, op.Key); return nil })
				if errors.Is(err, redis.Nil) {
					err = nil
				}
				if err == nil {
					err = scmd.Err()
				}
			}
			if errors.Is(err, redis.Nil) {
				return nil
			}
			if err != nil {
				return err
			}
			op.Exists = true
			if scmd != nil {
				op.Value = scmd.Val()
			} else {
				op.Value = fmt.Sprint(cmd.Val())
			}
			return nil
		})
		if op.Outcome == chaos.OK && op.Exists {
			c.lastVal[op.Key] = op.Value
		}
	case r < 7:
		op.F, op.Via, op.Arg2 = "write", c.via("plain", "eval", "multi"), c.w.value()
		c.w.clock.Do(octx, &op, func(ctx context.Context) error {
			switch op.Via {
			case "plain":
				return c.rdb.Set(ctx, op.Key, op.Arg2, 0).Err()
			case "eval":
				return setScript.Run(ctx, c.rdb, []string{op.Key}, op.Arg2).Err()
			}
			_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, op.Key, op.Arg2, 0); return nil })
			return err
		})
		if op.Outcome == chaos.OK {
			c.lastVal[op.Key] = op.Arg2
		}
	case r < 9:
		op.F, op.Via, op.Arg, op.Arg2 = "cas", "eval", c.lastVal[op.Key], c.w.value()
		if op.Arg == "" {
			op.Arg = strconv.FormatInt(max(1, c.w.values.Load()-int64(c.rng.Intn(5))), 10)
		}
		c.w.clock.Do(octx, &op, func(ctx context.Context) error {
			n, err := casScript.Run(ctx, c.rdb, []string{op.Key}, op.Arg, op.Arg2).Int64()
			op.CASOK = n == 1
			return err
		})
		if op.Outcome == chaos.OK && op.CASOK {
			c.lastVal[op.Key] = op.Arg2
		}
	default:
		// Optimistic transaction: WATCH, GET, MULTI SET EXEC. Success is a
		// compare-and-set against the value read; an aborted EXEC says
		// only that the key changed after WATCH, so it is not checked.
		op.F, op.Via, op.Arg2 = "cas", "watch", c.w.value()
		var read chaos.Op
		aborted := false
		c.w.clock.Do(octx, &op, func(ctx context.Context) error {
			return c.rdb.Watch(ctx, func(tx *redis.Tx) error {
				read = chaos.Op{Process: c.proc, Kind: "register", F: "read", Via: "watch", Key: op.Key, Node: c.node}
				c.w.clock.Do(ctx, &read, func(ctx context.Context) error {
					v, err := tx.Get(ctx, op.Key).Result()
					if errors.Is(err, redis.Nil) {
						return nil
					}
					read.Value, read.Exists = v, err == nil
					return err
				})
				if read.Outcome != chaos.OK {
					return errors.New("watch read: " + read.Err)
				}
				if !read.Exists {
					aborted = true // a CAS from nil is not in the model
					return nil
				}
				op.Arg = read.Value
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, op.Key, op.Arg2, 0); return nil })
				if errors.Is(err, redis.TxFailedErr) {
					aborted = true
					return nil
				}
				op.CASOK = err == nil
				return err
			}, op.Key)
		})
		if read.Invoke != 0 {
			c.w.record(read)
		}
		if aborted || op.Arg == "" {
			op.Kind = "register-aborted" // not checked
		}
	}
	c.w.record(op)
	c.after(op.Outcome)
}

func (c *client) listOp(ctx context.Context) {
	op := chaos.Op{Process: c.proc, Kind: "list", Key: c.w.key("list", c.rng), Node: c.node}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	if c.rng.Intn(10) < 6 {
		op.F, op.Via, op.Arg = "append", c.via("eval", "multi"), c.w.value()
		c.w.clock.Do(octx, &op, func(ctx context.Context) error {
			if op.Via == "eval" {
				n, err := appendScript.Run(ctx, c.rdb, []string{op.Key}, op.Arg).Int64()
				op.Len = n
				return err
			}
			var ic *redis.IntCmd
			_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { ic = p.RPush(ctx, op.Key, op.Arg); return nil })
			if err == nil {
				op.Len = ic.Val()
			}
			return err
		})
	} else {
		op.F, op.Via = "read", c.via("plain", "eval", "multi")
		c.w.clock.Do(octx, &op, func(ctx context.Context) error {
			var err error
			op.Elems, err = readList(ctx, c.rdb, op.Key, op.Via)
			return err
		})
	}
	c.w.record(op)
	c.after(op.Outcome)
}

func readList(ctx context.Context, rdb redis.UniversalClient, key, via string) ([]string, error) {
	switch via {
	case "eval":
		v, err := lrangeScript.Run(ctx, rdb, []string{key}).StringSlice()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		return v, err
	case "multi":
		var sc *redis.StringSliceCmd
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { sc = p.LRange(ctx, key, 0, -1); return nil })
		if err != nil {
			return nil, err
		}
		return sc.Val(), nil
	}
	return rdb.LRange(ctx, key, 0, -1).Result()
}

// lockRound tries one lock; if it gets it, it works under it (fenced
// writes to the lock's guard list, renewals when a third of the lease has
// passed), then unlocks. Everything is recorded in a Section.
func (c *client) lockRound(ctx context.Context) {
	lock := c.w.locks[c.rng.Intn(len(c.w.locks))]
	guard := lock + ":guard"
	channel := "redisson_lock__channel:" + lock
	lease := c.w.cfg.lease
	leaseMS := lease.Milliseconds()
	owner := fmt.Sprintf("c%d-%d", c.id, c.w.values.Add(1))
	now := c.w.clock.Now

	op := chaos.Op{Process: c.proc, Kind: "lock", F: "acquire", Key: lock, Node: c.node, Arg: owner}
	octx, cancel := c.opCtx(ctx)
	var pttl int64
	c.w.clock.Do(octx, &op, func(ctx context.Context) error {
		v, err := acquireScript.Run(ctx, c.rdb, []string{lock}, leaseMS, owner).Int64()
		pttl = v
		if errors.Is(err, redis.Nil) {
			op.Value = "acquired"
			return nil
		}
		if err == nil {
			op.Value = "busy"
		}
		return err
	})
	cancel()
	c.w.record(op)
	c.w.count("acquire " + op.Outcome.String() + " " + op.Value)
	if op.Outcome != chaos.OK || op.Value != "acquired" {
		if op.Outcome == chaos.OK && pttl < 0 {
			c.w.count("acquire saw a lock without expiry")
		}
		c.after(op.Outcome)
		if op.Outcome == chaos.OK {
			time.Sleep(time.Duration(5+c.rng.Intn(30)) * time.Millisecond)
		}
		return
	}
	s := chaos.Section{Lock: lock, Owner: owner, Process: c.proc, Node: c.node, AcqInvoke: op.Invoke,
		Start: op.Complete, LeaseStart: op.Invoke, Lease: int64(lease)}
	lost := func(at int64, what string) {
		if s.Lost == "" {
			s.Lost, s.LostAt = what, at
		}
	}
	// Mostly short holds (many hand-overs), some long ones that renew.
	hold := time.Duration(c.rng.Int63n(int64(300 * time.Millisecond)))
	if c.rng.Intn(4) == 0 {
		hold = time.Duration(c.rng.Int63n(int64(c.w.cfg.maxHold)))
	}
	until := time.Duration(now()) + hold
	for n := 0; time.Duration(now()) < until && s.Lost == "" && ctx.Err() == nil; n++ {
		if now()-s.LeaseStart > s.Lease/3 {
			r := chaos.Op{Process: c.proc, Kind: "lock", F: "renew", Key: lock, Node: c.node, Arg: owner}
			octx, cancel := c.opCtx(ctx)
			var v int64
			c.w.clock.Do(octx, &r, func(ctx context.Context) error {
				var err error
				v, err = renewScript.Run(ctx, c.rdb, []string{lock}, leaseMS, owner).Int64()
				r.Value = strconv.FormatInt(v, 10)
				return err
			})
			cancel()
			c.w.record(r)
			c.w.count("renew " + r.Outcome.String() + " " + r.Value)
			if r.Outcome == chaos.OK && v == 1 {
				s.LeaseStart = r.Invoke
				s.Renewals++
			} else if r.Outcome == chaos.OK {
				lost(r.Complete, "renewal answered 0 (not the owner)")
			}
		}
		if now() >= s.LeaseStart+s.Lease {
			break // the lease ran out: stop using the lock
		}
		g := chaos.Guard{Token: fmt.Sprintf("%s#%d", owner, n)}
		gop := chaos.Op{Process: c.proc, Kind: "lock", F: "guard", Key: guard, Node: c.node, Arg: g.Token}
		octx, cancel := c.opCtx(ctx)
		c.w.clock.Do(octx, &gop, func(ctx context.Context) error {
			v, err := guardScript.Run(ctx, c.rdb, []string{lock, guard}, owner, g.Token).Int64()
			g.Applied = v == 1
			gop.Value = strconv.FormatInt(v, 10)
			return err
		})
		cancel()
		g.Invoke, g.Complete, g.Outcome = gop.Invoke, gop.Complete, gop.Outcome
		s.Guards = append(s.Guards, g)
		c.w.record(gop)
		c.w.count("guard " + gop.Outcome.String() + " " + gop.Value)
		if gop.Outcome == chaos.OK && !g.Applied {
			lost(gop.Complete, "guarded write refused (not the owner)")
		}
		if gop.Outcome != chaos.OK {
			c.after(gop.Outcome)
		}
		time.Sleep(time.Duration(10+c.rng.Intn(90)) * time.Millisecond)
	}
	s.End = now()
	u := chaos.Op{Process: c.proc, Kind: "lock", F: "unlock", Key: lock, Node: c.node, Arg: owner}
	octx, cancel = c.opCtx(ctx)
	c.w.clock.Do(octx, &u, func(ctx context.Context) error {
		v, err := unlockScript.Run(ctx, c.rdb, []string{lock, channel}, 0, leaseMS, owner).Int64()
		if errors.Is(err, redis.Nil) {
			u.Value = "nil"
			return nil
		}
		u.Value = strconv.FormatInt(v, 10)
		return err
	})
	cancel()
	c.w.record(u)
	c.w.count("unlock " + u.Outcome.String() + " " + u.Value)
	s.UnlockOK = u.Outcome
	if u.Outcome == chaos.OK && u.Value == "nil" {
		lost(u.Complete, "unlock answered nil (not the owner)")
	}
	c.w.mu.Lock()
	c.w.sections = append(c.w.sections, s)
	c.w.mu.Unlock()
	c.after(u.Outcome)
}
