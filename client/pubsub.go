package client

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The pub/sub wake-up helper. Waiters never poll: a goroutine that could
// not take an object subscribes to the object's channel, makes its attempt
// again (the subscription is confirmed first, so nothing published after
// that attempt can be missed), then sleeps until a message, a timer (the
// holder's TTL, when known) or its context says to look again.
//
// One *redis.PubSub connection per Client carries every channel. Each
// channel has one entry, shared by the local waiters on it and reference
// counted: SUBSCRIBE goes out with the first waiter, UNSUBSCRIBE after the
// last. An entry behaves like Redisson's per-lock semaphore: a message
// adds wake-up permits ("0" on a lock channel: one waiter; "1", a write
// unlock: all waiters; any message on a semaphore or latch channel: all
// waiters), and a permit that arrives while its waiter is between an
// attempt and its sleep is kept, so a wake-up is never lost.
//
// Subscriptions are confirmed with a PING carrying a unique payload, sent
// on the pub/sub connection right after the SUBSCRIBE: its PONG proves the
// server processed the SUBSCRIBE. After a reconnect (go-redis resubscribes
// by itself) every waiter is woken, since messages may have been missed.

// wakePolicy says how many waiters a message wakes.
type wakePolicy int

const (
	wakeLock wakePolicy = iota // "1" wakes every waiter, anything else one
	wakeAll                    // every message wakes every waiter
)

type pubsub struct {
	c *Client

	mu      sync.Mutex
	ps      *redis.PubSub
	gen     int // which ps the reader serves
	entries map[string]*subEntry
	pending map[string]*subEntry // ping payload → entry awaiting confirmation
	ops     []subOp
	kick    chan struct{}
	seq     uint64
	closed  bool

	lastRecv time.Time
	lastPing time.Time
	started  bool
}

type subOp struct {
	subscribe bool
	channel   string
	e         *subEntry
}

type subEntry struct {
	channel   string
	policy    wakePolicy
	refs      int
	permits   int
	waiting   int
	signal    chan struct{} // closed and replaced on every release
	ready     chan struct{} // closed once the SUBSCRIBE is confirmed
	confirmed bool
	marker    string
	markerAt  time.Time
}

func newPubSub(c *Client) *pubsub {
	return &pubsub{
		c:       c,
		entries: make(map[string]*subEntry),
		pending: make(map[string]*subEntry),
		kick:    make(chan struct{}, 1),
	}
}

// subscription is one waiter's hold on a channel entry.
type subscription struct {
	p    *pubsub
	e    *subEntry
	once sync.Once
}

// subscribe joins the channel's entry and waits until the server has
// confirmed the subscription, for at most the subscribe timeout: after it
// the waiter goes on anyway, with timers as its fallback.
func (p *pubsub) subscribe(ctx context.Context, channel string, policy wakePolicy) (*subscription, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if !p.started {
		p.started = true
		go p.worker()
	}
	e := p.entries[channel]
	if e == nil {
		e = &subEntry{channel: channel, policy: policy, signal: make(chan struct{}), ready: make(chan struct{})}
		p.entries[channel] = e
		p.ops = append(p.ops, subOp{subscribe: true, channel: channel, e: e})
		p.poke()
	}
	e.refs++
	ready := e.ready
	p.mu.Unlock()

	s := &subscription{p: p, e: e}
	t := time.NewTimer(p.c.cfg.subscribeTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return s, nil
	case <-t.C:
		return s, nil
	case <-ctx.Done():
		s.close()
		return nil, ctx.Err()
	case <-p.c.done:
		s.close()
		return nil, ErrClosed
	}
}

func (p *pubsub) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// close leaves the entry; the last waiter out unsubscribes.
func (s *subscription) close() {
	s.once.Do(func() {
		p := s.p
		p.mu.Lock()
		defer p.mu.Unlock()
		s.e.refs--
		if s.e.refs == 0 && p.entries[s.e.channel] == s.e {
			delete(p.entries, s.e.channel)
			if s.e.marker != "" {
				delete(p.pending, s.e.marker)
				s.e.marker = ""
			}
			if !p.closed {
				p.ops = append(p.ops, subOp{channel: s.e.channel})
				p.poke()
			}
		}
	})
}

// wait sleeps until a wake-up permit, d (when d > 0), ctx or Close. It
// returns nil on a permit or when d ran out.
func (s *subscription) wait(ctx context.Context, d time.Duration) error {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	p, e := s.p, s.e
	for {
		p.mu.Lock()
		if e.permits > 0 {
			e.permits--
			p.mu.Unlock()
			return nil
		}
		sig := e.signal
		e.waiting++
		p.mu.Unlock()

		var err error
		woken := false
		select {
		case <-sig:
			woken = true
		case <-timeout:
		case <-ctx.Done():
			err = ctx.Err()
		case <-p.c.done:
			err = ErrClosed
		}
		p.mu.Lock()
		e.waiting--
		p.mu.Unlock()
		if !woken {
			return err
		}
	}
}

// release adds n permits (at most one per subscribed waiter) and wakes the
// sleepers to compete for them. Callers hold p.mu.
func (e *subEntry) release(n int) {
	if n <= 0 {
		return
	}
	e.permits += n
	if e.permits > e.refs {
		e.permits = e.refs
	}
	close(e.signal)
	e.signal = make(chan struct{})
}

// deliver handles a message on the entry's channel. Callers hold p.mu.
func (e *subEntry) deliver(payload string) {
	switch {
	case e.policy == wakeLock && payload != "1":
		e.release(1)
	default:
		e.release(max(e.waiting, 1))
	}
}

// worker sends SUBSCRIBE/UNSUBSCRIBE in the order they were decided,
// re-sends unanswered confirmation PINGs, and checks the connection's
// health.
func (p *pubsub) worker() {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.kick:
		case <-tick.C:
		case <-p.c.done:
			return
		}
		p.mu.Lock()
		ops := p.ops
		p.ops = nil
		p.mu.Unlock()
		for _, op := range ops {
			p.apply(op)
		}
		p.maintain()
	}
}

func (p *pubsub) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// conn returns the pub/sub connection, creating it and its reader.
func (p *pubsub) conn() (*redis.PubSub, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0
	}
	if p.ps == nil {
		p.ps = p.c.rdb.Subscribe(context.Background())
		p.gen++
		p.lastRecv = time.Now()
		p.lastPing = time.Time{}
		go p.reader(p.ps, p.gen)
	}
	return p.ps, p.gen
}

func (p *pubsub) apply(op subOp) {
	ps, _ := p.conn()
	if ps == nil {
		return
	}
	ctx, cancel := p.opContext()
	defer cancel()
	if !op.subscribe {
		// A write error still updates go-redis's channel set, which is
		// what it resubscribes after a reconnect.
		_ = ps.Unsubscribe(ctx, op.channel)
		return
	}
	p.mu.Lock()
	live := p.entries[op.channel] == op.e
	p.mu.Unlock()
	if !live {
		return // every waiter left before the SUBSCRIBE went out
	}
	_ = ps.Subscribe(ctx, op.channel)
	p.confirm(ps, op.e)
}

// confirm sends a PING whose PONG marks e confirmed.
func (p *pubsub) confirm(ps *redis.PubSub, e *subEntry) {
	p.mu.Lock()
	if e.confirmed || p.closed || p.entries[e.channel] != e {
		p.mu.Unlock()
		return
	}
	if e.marker != "" {
		delete(p.pending, e.marker)
	}
	p.seq++
	e.marker = "deadbolt-client-sub-" + strconv.FormatUint(p.seq, 10)
	e.markerAt = time.Now()
	p.pending[e.marker] = e
	marker := e.marker
	p.mu.Unlock()
	ctx, cancel := p.opContext()
	defer cancel()
	_ = ps.Ping(ctx, marker)
}

// maintain re-sends confirmation PINGs that got no answer within a second
// and, when the connection has been silent through a whole ping interval
// although we pinged it, replaces it.
func (p *pubsub) maintain() {
	p.mu.Lock()
	if p.ps == nil || p.closed {
		p.mu.Unlock()
		return
	}
	ps := p.ps
	now := time.Now()
	var stale []*subEntry
	for _, e := range p.pending {
		if now.Sub(e.markerAt) > time.Second {
			stale = append(stale, e)
		}
	}
	interval := p.c.cfg.pingInterval
	dead := !p.lastPing.IsZero() && p.lastRecv.Before(p.lastPing) && now.Sub(p.lastPing) > interval
	ping := !dead && now.Sub(p.lastRecv) > interval && now.Sub(p.lastPing) > interval
	if ping {
		p.lastPing = now
	}
	p.mu.Unlock()

	if dead {
		p.reset()
		return
	}
	for _, e := range stale {
		p.confirm(ps, e)
	}
	if ping {
		ctx, cancel := p.opContext()
		_ = ps.Ping(ctx, "deadbolt-client-health")
		cancel()
	}
}

// reset replaces a connection that stopped answering: a new PubSub,
// every live channel subscribed again, every waiter woken.
func (p *pubsub) reset() {
	p.mu.Lock()
	old := p.ps
	p.ps = nil
	var live []*subEntry
	for _, e := range p.entries {
		e.confirmed = false
		live = append(live, e)
		e.release(max(e.waiting, 1))
	}
	p.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	for _, e := range live {
		p.apply(subOp{subscribe: true, channel: e.channel, e: e})
	}
}

// reader receives from one PubSub until it is closed or replaced.
func (p *pubsub) reader(ps *redis.PubSub, gen int) {
	backoff := 50 * time.Millisecond
	for {
		msg, err := ps.Receive(context.Background())
		p.mu.Lock()
		if p.closed || p.gen != gen {
			p.mu.Unlock()
			return
		}
		if err != nil {
			// Messages may have been missed while the connection was
			// down: every waiter looks again.
			for _, e := range p.entries {
				e.release(max(e.waiting, 1))
			}
			p.mu.Unlock()
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			select {
			case <-time.After(backoff):
			case <-p.c.done:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		p.lastRecv = time.Now()
		switch m := msg.(type) {
		case *redis.Message:
			if e := p.entries[m.Channel]; e != nil {
				e.deliver(m.Payload)
			}
		case *redis.Subscription:
			// A (re)subscription: wake current sleepers, which may have
			// missed messages while it was not in place.
			if e := p.entries[m.Channel]; e != nil && m.Kind == "subscribe" && e.waiting > 0 {
				e.release(e.waiting)
			}
		case *redis.Pong:
			if e := p.pending[m.Payload]; e != nil {
				delete(p.pending, m.Payload)
				if !e.confirmed {
					e.confirmed = true
					e.marker = ""
					select {
					case <-e.ready:
					default:
						close(e.ready)
					}
				}
			}
		}
		p.mu.Unlock()
	}
}

func (p *pubsub) close() {
	p.mu.Lock()
	p.closed = true
	ps := p.ps
	p.ps = nil
	p.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}
