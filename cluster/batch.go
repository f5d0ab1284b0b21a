package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Group commit. Every log entry costs the same whatever it carries: a
// raft future, msgpack encoding for the transport, a write and an fsync
// of the log store on every node. So the leader's proposer packs all
// commands that are waiting when it is ready to propose into one entry (a version-2 envelope), with at most
// batchInflight entries proposed and not yet answered. Under load the
// commands that arrive while those are being committed form the next
// entry; a lone command is proposed at once, on its own, as a version-1
// entry, so one client waits no longer than before. A caller either waits
// for its result (propose) or hands a callback (submit: the event loop's
// writes, which no goroutine waits for).

// Batching bounds.
const (
	batchMaxCommands = 512       // commands per entry
	batchMaxBytes    = 256 << 10 // bytes of envelopes per entry (a larger command goes alone)
	// batchInflight is how many entries may be proposed and not yet
	// answered. On a 2-core machine one was best: more entries in flight
	// mean smaller entries, and each entry's fsyncs cost CPU on every node
	// (at 64 clients, 2 in flight gave about 20 % fewer pairs per second
	// than 1, 4 and 8 fewer still).
	batchInflight = 1
)

// applyFunc proposes one log entry (raft.Raft.Apply; tests substitute it).
type applyFunc func(data []byte, timeout time.Duration) raft.ApplyFuture

// proposal is one command waiting for its entry.
type proposal struct {
	env []byte // its version-1 envelope, time stamp included
	// group, if set, holds instead the envelopes of a connection's
	// pipelined writes (pipeline.go), in order: they go into one entry
	// together, and the outcome carries one result per command.
	group [][]byte
	done  chan outcome // buffered: the answer never waits for the caller
	// cb, if set, takes the answer instead of done (submit), once:
	// answered guards it, since the sweeper may answer first.
	cb func(outcome)
	// applyDone, if set, takes the answer instead, through
	// Node.applyOutcome (StartApply): the proposal carries the command's
	// callback itself, which saves the closure cb would be, one heap
	// object for every command the leader's clients send.
	applyDone func(fsm.Result, error)
	node      *Node
	answered  atomic.Bool
	at        time.Time // when it was queued (submit)
	// Under proposer.mu:
	taken     bool // in an entry handed to raft
	abandoned bool // its caller gave up before it was taken
}

type outcome struct {
	res   fsm.Result
	group []fsm.Result // a group proposal's results, one per command
	err   error
}

// inflightEntry is a proposed entry whose future has not been read.
type inflightEntry struct {
	props []*proposal
	f     raft.ApplyFuture
}

// proposer is a node's group commit. It runs for the node's whole life;
// on a follower raft refuses its entries at once (ErrNotLeader).
type proposer struct {
	apply       applyFunc
	timeout     time.Duration // how long raft may take to accept an entry
	maxCommands int
	maxBytes    int

	mu     sync.Mutex
	queue  []*proposal
	closed bool

	flyMu  sync.Mutex
	flying []inflightEntry // proposed, not yet answered by the completer; for the sweeper

	wake     chan struct{}      // a proposal was queued (capacity 1)
	slots    chan struct{}      // one per entry in flight
	inflight chan inflightEntry // flusher → completer, in proposal order
	stop     <-chan struct{}
	done     chan struct{} // closed when the completer has answered everything
	// noSpace, if set, turns a log store's failure for want of space
	// (the entry was not stored) into the error its commands get.
	noSpace func(error) error
}

func newProposer(apply applyFunc, timeout time.Duration, inflight int, stop <-chan struct{}) *proposer {
	inflight = max(inflight, 1)
	return &proposer{
		apply: apply, timeout: timeout, maxCommands: batchMaxCommands, maxBytes: batchMaxBytes,
		wake:     make(chan struct{}, 1),
		slots:    make(chan struct{}, inflight),
		inflight: make(chan inflightEntry, inflight),
		stop:     stop,
		done:     make(chan struct{}),
	}
}

// start runs the proposer's two goroutines: the flusher (counted in wg,
// it ends with stop) and the completer, which ends once every entry the
// flusher proposed has been answered. Raft answers those when it shuts
// down at the latest, and a node shuts raft down only after wg is done.
func (p *proposer) start(wg *sync.WaitGroup) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.flushLoop()
	}()
	go func() {
		defer wg.Done()
		p.sweepLoop()
	}()
	go p.completeLoop()
}

// propose queues env and waits for its result. A command its caller gives
// up on before it was proposed is dropped (ErrNotLeader: nothing was
// proposed); one already proposed may still be applied (ErrUnknownOutcome).
// Either way the other commands of its entry are not affected.
func (p *proposer) propose(ctx context.Context, env []byte) (fsm.Result, error) {
	o := p.await(ctx, &proposal{env: env, done: make(chan outcome, 1)})
	return o.res, o.err
}

// await queues pr, whose done channel is set, and waits for its outcome
// as propose does.
func (p *proposer) await(ctx context.Context, pr *proposal) outcome {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return outcome{err: ErrNotLeader}
	}
	p.queue = append(p.queue, pr)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	select {
	case o := <-pr.done:
		return o
	case <-ctx.Done():
	}
	p.mu.Lock()
	taken := pr.taken
	if !taken {
		pr.abandoned = true
	}
	p.mu.Unlock()
	if !taken {
		return outcome{err: ErrNotLeader}
	}
	select {
	case o := <-pr.done: // answered meanwhile
		return o
	default:
		return outcome{err: ErrUnknownOutcome}
	}
}

// submit queues env and returns at once; cb gets the outcome, exactly
// once, on one of the proposer's goroutines (so it must not block): the
// entry's, ErrNotLeader if the proposer stops first, or the sweeper's
// after the timeout (sweepLoop).
func (p *proposer) submit(env []byte, cb func(outcome)) {
	p.enqueue(&proposal{env: env, cb: cb, at: time.Now()})
}

// enqueue queues pr, whose callback is set, as submit does.
func (p *proposer) enqueue(pr *proposal) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pr.deliver(outcome{err: ErrNotLeader})
		return
	}
	p.queue = append(p.queue, pr)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// deliver hands pr its outcome; a callback gets only the first.
func (pr *proposal) deliver(o outcome) {
	if pr.async() {
		if pr.answered.CompareAndSwap(false, true) {
			if pr.applyDone != nil {
				pr.node.applyOutcome(pr, o)
			} else {
				pr.cb(o)
			}
		}
		return
	}
	pr.done <- o
}

// async tells whether pr was submitted with a callback rather than a
// channel (submit, StartApply).
func (pr *proposal) async() bool { return pr.cb != nil || pr.applyDone != nil }

// sweepLoop bounds how long a submitted command waits, as a waiting
// caller's context does for propose: one still queued after the timeout
// is dropped and answered ErrNotLeader (nothing was proposed, so nothing
// applied; the caller may retry it), one in an entry raft has not answered
// after the timeout gets ErrUnknownOutcome. Raft answers every entry when
// it loses leadership, so this matters when it does not: a leader whose
// disk stalls, say. The entry's real answer, when it comes, is dropped.
func (p *proposer) sweepLoop() {
	every := min(max(p.timeout/10, 10*time.Millisecond), time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.sweep(time.Now())
	}
}

// sweep answers the submitted commands that have waited longer than the
// timeout at now.
func (p *proposer) sweep(now time.Time) {
	var late []*proposal
	p.mu.Lock()
	for _, pr := range p.queue {
		if pr.async() && !pr.abandoned && now.Sub(pr.at) > p.timeout {
			pr.abandoned = true
			late = append(late, pr)
		}
	}
	p.mu.Unlock()
	for _, pr := range late {
		pr.deliver(outcome{err: ErrNotLeader})
	}
	late = late[:0]
	p.flyMu.Lock()
	for _, e := range p.flying {
		if first := e.props[0]; first.async() && now.Sub(first.at) <= p.timeout {
			break // queued in order: the rest are younger
		}
		for _, pr := range e.props {
			if pr.async() && !pr.answered.Load() && now.Sub(pr.at) > p.timeout {
				late = append(late, pr)
			}
		}
	}
	p.flyMu.Unlock()
	for _, pr := range late {
		pr.deliver(outcome{err: ErrUnknownOutcome})
	}
}

// take removes the next entry's worth of proposals from the queue.
func (p *proposer) take() []*proposal {
	p.mu.Lock()
	defer p.mu.Unlock()
	var (
		out        []*proposal
		size, cmds int
		i          int
	)
	for i = 0; i < len(p.queue); i++ {
		pr := p.queue[i]
		if pr.abandoned {
			continue
		}
		n, b := pr.commands()
		if len(out) > 0 && (cmds+n > p.maxCommands || size+b > p.maxBytes) {
			break
		}
		pr.taken = true
		out = append(out, pr)
		size += b
		cmds += n
	}
	rest := copy(p.queue, p.queue[i:])
	clear(p.queue[rest:])
	p.queue = p.queue[:rest]
	return out
}

// flushLoop proposes entries while there are commands waiting and a slot
// free; waiting for a slot is what lets commands gather.
func (p *proposer) flushLoop() {
	defer func() {
		p.mu.Lock()
		p.closed = true
		left := p.queue
		p.queue = nil
		p.mu.Unlock()
		for _, pr := range left {
			pr.deliver(outcome{err: ErrNotLeader}) // never proposed
		}
		close(p.inflight)
	}()
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		}
		for {
			select {
			case <-p.stop:
				return
			case p.slots <- struct{}{}:
			}
			props := p.take()
			if len(props) == 0 {
				<-p.slots
				break
			}
			e := inflightEntry{props: props, f: p.apply(entryData(props), p.timeout)}
			p.flyMu.Lock()
			p.flying = append(p.flying, e)
			p.flyMu.Unlock()
			p.inflight <- e
		}
	}
}

// entryData is the log entry for props: a lone command's own envelope,
// or a batch.
func entryData(props []*proposal) []byte {
	if len(props) == 1 && props[0].group == nil {
		return props[0].env
	}
	size := 1 + 10
	envs := make([][]byte, 0, len(props))
	for _, pr := range props {
		if pr.group != nil {
			for _, e := range pr.group {
				envs = append(envs, e)
				size += 10 + len(e)
			}
			continue
		}
		envs = append(envs, pr.env)
		size += 10 + len(pr.env)
	}
	return AppendBatch(make([]byte, 0, size), envs...)
}

// completeLoop hands each proposed entry's results to its callers, one
// result each, in order.
func (p *proposer) completeLoop() {
	defer close(p.done)
	for e := range p.inflight {
		err := e.f.Error()
		var resp interface{}
		if err == nil {
			resp = e.f.Response()
		}
		p.flyMu.Lock()
		n := copy(p.flying, p.flying[1:])
		p.flying[n] = inflightEntry{}
		p.flying = p.flying[:n]
		p.flyMu.Unlock()
		<-p.slots
		if p.noSpace != nil && isNoSpace(err) {
			err = p.noSpace(err)
		}
		answer(e.props, resp, err)
	}
}

// answer translates one entry's outcome for each of its commands.
func answer(props []*proposal, resp interface{}, err error) {
	if err != nil {
		err = proposeError(err)
		for _, pr := range props {
			pr.deliver(outcome{err: err})
		}
		return
	}
	var rs []fsm.Result
	switch r := resp.(type) {
	case fsm.Result:
		rs = []fsm.Result{r}
	case []fsm.Result:
		rs = r
	}
	if n := countCommands(props); n > 0 && n == len(rs) {
		for _, pr := range props {
			if pr.group != nil {
				k := len(pr.group)
				pr.deliver(outcome{group: rs[:k:k]})
				rs = rs[k:]
				continue
			}
			pr.deliver(outcome{res: rs[0]})
			rs = rs[1:]
		}
		return
	}
	// Not what this node's state machine returns: applied, result unknown.
	for _, pr := range props {
		pr.deliver(outcome{err: ErrUnknownOutcome})
	}
}

// commands returns how many commands pr carries and their envelopes' size.
func (pr *proposal) commands() (n, size int) {
	if pr.group == nil {
		return 1, len(pr.env)
	}
	for _, e := range pr.group {
		size += len(e)
	}
	return len(pr.group), size
}

// countCommands is how many commands an entry of props carries.
func countCommands(props []*proposal) int {
	n := 0
	for _, pr := range props {
		c, _ := pr.commands()
		n += c
	}
	return n
}

// proposeError translates raft's answer to a proposed entry: refused
// before it entered the log (retryable), or possibly in the log.
func proposeError(err error) error {
	var re replyError
	switch {
	case errors.As(err, &re):
		return err // already translated (a full disk: MISCONF)
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrEnqueueTimeout):
		return ErrNotLeader
	default:
		// ErrLeadershipLost, ErrRaftShutdown, ErrAbortedByRestore, a log
		// store failure: the entry may be committed later by another leader.
		return ErrUnknownOutcome
	}
}
