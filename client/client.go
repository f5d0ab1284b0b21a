package client

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults, equal to Redisson's.
const (
	// DefaultWatchdogTimeout is the lease of a lock taken without one; the
	// watchdog renews it every third of it (Redisson's lockWatchdogTimeout).
	DefaultWatchdogTimeout = 30 * time.Second
	// DefaultUnlockLatchTTL is how long the unlock latch key lives
	// (Redisson: (timeout 3000 + retryInterval 1500) × retryAttempts 3 ms).
	DefaultUnlockLatchTTL = 13500 * time.Millisecond
	// DefaultFairLockWaitTimeout is how long a fair lock waiter keeps its
	// place in the queue beyond the waiter before it (Redisson's
	// threadWaitTime, 5 minutes).
	DefaultFairLockWaitTimeout = 5 * time.Minute
	// DefaultFallbackInterval bounds a wait for a wake-up message when no
	// TTL says when to look again (semaphores, latches): a lost message
	// costs at most this long.
	DefaultFallbackInterval = 10 * time.Second
)

// Client is the entry point: it wraps a go-redis client, names this
// process (a UUID, the first half of every owner id), shares one pub/sub
// connection among all waiters, and runs the watchdogs of locks held
// without a lease. A Client is safe for concurrent use; create one per
// process and one object handle per owner.
type Client struct {
	rdb redis.UniversalClient
	cfg config

	threads atomic.Int64 // last thread id handed out
	sub     *pubsub
	renew   *renewals

	closeOnce sync.Once
	done      chan struct{}
}

type config struct {
	id               string
	watchdog         time.Duration
	latchTTL         time.Duration
	fairWait         time.Duration
	fallback         time.Duration
	publish          string
	pingInterval     time.Duration
	subscribeTimeout time.Duration
}

// Option changes how a Client behaves.
type Option func(*config)

// WithID sets the client id, the "<uuid>" half of owner ids, instead of a
// random UUID. Two processes must never share an id.
func WithID(id string) Option { return func(c *config) { c.id = id } }

// WithWatchdogTimeout sets the lease of locks taken without one; the
// watchdog renews them every d/3.
func WithWatchdogTimeout(d time.Duration) Option { return func(c *config) { c.watchdog = d } }

// WithUnlockLatchTTL sets the PX of the unlock latch key.
func WithUnlockLatchTTL(d time.Duration) Option { return func(c *config) { c.latchTTL = d } }

// WithFairLockWaitTimeout sets how long a fair lock waiter may stay silent
// beyond the waiter ahead of it before others evict it from the queue.
func WithFairLockWaitTimeout(d time.Duration) Option { return func(c *config) { c.fairWait = d } }

// WithFallbackInterval bounds waits for wake-up messages that have no TTL
// to fall back on (semaphores, latches).
func WithFallbackInterval(d time.Duration) Option { return func(c *config) { c.fallback = d } }

// New wraps rdb. The Client does not own rdb: Close leaves it open.
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	cfg := config{
		watchdog:         DefaultWatchdogTimeout,
		latchTTL:         DefaultUnlockLatchTTL,
		fairWait:         DefaultFairLockWaitTimeout,
		fallback:         DefaultFallbackInterval,
		publish:          "PUBLISH",
		pingInterval:     10 * time.Second,
		subscribeTimeout: 7500 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.id == "" {
		cfg.id = newUUID()
	}
	if cfg.watchdog < 3*time.Millisecond {
		cfg.watchdog = 3 * time.Millisecond
	}
	if cfg.latchTTL < time.Millisecond {
		cfg.latchTTL = time.Millisecond
	}
	if cfg.fallback <= 0 {
		cfg.fallback = DefaultFallbackInterval
	}
	c := &Client{rdb: rdb, cfg: cfg, done: make(chan struct{})}
	c.sub = newPubSub(c)
	c.renew = newRenewals(c)
	return c
}

// ID is the client id, the "<uuid>" half of this client's owner ids.
func (c *Client) ID() string { return c.cfg.id }

// Redis returns the wrapped go-redis client.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// Close stops every watchdog (the locks they renewed expire after their
// lease, as when a process dies), wakes every waiter with ErrClosed and
// closes the pub/sub connection. It does not unlock anything and does
// not close the go-redis client.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.renew.stopAll()
		c.sub.close()
	})
	return nil
}

func (c *Client) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Owner identifies who holds a lock, in Redisson's layout
// "<client uuid>:<thread id>". Go has no thread ids, so an Owner is a value
// the caller holds: every lock handle carries one, and everything done
// through handles with the same Owner is done by the same "thread" (it
// re-enters the locks it holds). The zero Owner is not valid.
type Owner struct {
	uuid   string
	thread int64
}

// NewOwner returns a fresh owner of this client: its thread id was never
// handed out before by this Client.
func (c *Client) NewOwner() Owner {
	return Owner{uuid: c.cfg.id, thread: c.threads.Add(1)}
}

// OwnerOf builds the owner "<uuid>:<thread>", to act as a given Redisson
// thread or to rebuild an owner from its parts.
func OwnerOf(uuid string, thread int64) Owner { return Owner{uuid: uuid, thread: thread} }

// String is the owner id as it is stored in lock hashes:
// "<uuid>:<thread id>".
func (o Owner) String() string { return o.uuid + ":" + strconv.FormatInt(o.thread, 10) }

// UUID is the client id half of the owner.
func (o Owner) UUID() string { return o.uuid }

// Thread is the thread id half of the owner.
func (o Owner) Thread() int64 { return o.thread }

// IsZero reports whether o is the zero Owner.
func (o Owner) IsZero() bool { return o.uuid == "" && o.thread == 0 }

// LockOption configures a lock handle.
type LockOption func(*lockConfig)

type lockConfig struct {
	owner Owner
}

// WithOwner makes a handle act for o instead of a fresh owner. Handles
// with the same owner re-enter each other's locks.
func WithOwner(o Owner) LockOption { return func(c *lockConfig) { c.owner = o } }

func (c *Client) lockConfig(opts []LockOption) lockConfig {
	var lc lockConfig
	for _, o := range opts {
		o(&lc)
	}
	if lc.owner.IsZero() {
		lc.owner = c.NewOwner()
	}
	return lc
}

// prefixName puts prefix before an object name the way Redisson does, so
// that the derived key or channel hashes to the object's cluster slot:
// "prefix:{name}", or "prefix:name" when name already has a hash tag.
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// suffixName puts a suffix after an object name, keeping the hash tag:
// "{name}:suffix", or "name:suffix" when name already has a hash tag.
func suffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("client: crypto/rand: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ms renders a duration as whole milliseconds, at least 1.
func ms(d time.Duration) int64 {
	m := d.Milliseconds()
	if m < 1 {
		return 1
	}
	return m
}

// nowMillis is the client's wall clock in Unix milliseconds, as Redisson
// passes it to fair lock and permit semaphore scripts.
func nowMillis() int64 { return time.Now().UnixMilli() }

// run runs a script: EVALSHA first, EVAL when the server does not know it.
func (c *Client) run(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.Run(ctx, c.rdb, keys, args...)
}
