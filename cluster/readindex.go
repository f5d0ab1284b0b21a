package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Reads without a log entry (ReadIndex, the Raft thesis §6.4).
//
// A read on a leader of several voters notes the leader's commit index when
// it arrives, then asks every voter: "are you still in my term, following
// me?" The question is sent after the read arrived, so a quorum of "yes"
// (this node counting as one) shows that no other leader had been elected
// when the read arrived: a newer leader needs a quorum of votes in a higher
// term, and a voter that has seen a higher term never says yes to a lower
// one (terms only grow). The read then waits until this node has applied the
// noted index and is served from its own state machine. Reads that arrive
// while a round is in flight share the next round, so a round's cost (one
// message to each voter and its answer) is paid once for many reads.
//
// raft's VerifyLeader would count answers to messages sent before the read
// arrived (see readIndex); these rounds travel on connections of their own,
// opened through the same stream layer as raft's (so they pass the same
// authentication and the same test network), and told apart from raft's by
// their first byte.

// A request is round (8 bytes), term (8), the length of the leader's id
// (1) and the id; the answer is the round (8) and 1 for yes, 0 for no.

// serveConfirm answers a leader's confirmation requests on c until it
// closes: yes while this node's current term is the asker's and it follows
// the asker (or knows no leader yet in that term).
func (n *Node) serveConfirm(c net.Conn) {
	if !n.confirm.serving(c, true) {
		c.Close()
		return
	}
	defer n.confirm.serving(c, false)
	defer c.Close()
	rd := bufio.NewReader(c)
	var hdr [17]byte
	id := make([]byte, confirmMaxID)
	var ans [9]byte
	for {
		if _, err := io.ReadFull(rd, hdr[:]); err != nil {
			return
		}
		l := int(hdr[16])
		if _, err := io.ReadFull(rd, id[:l]); err != nil {
			return
		}
		term := binary.BigEndian.Uint64(hdr[8:16])
		n.confirm.answers.Add(1)
		if h := n.confirm.hold.Load(); h != nil {
			<-*h // a test's stalled follower
		}
		copy(ans[:8], hdr[:8])
		ans[8] = 0
		if n.follows(string(id[:l]), term) {
			ans[8] = 1
		}
		if _, err := c.Write(ans[:]); err != nil {
			return
		}
	}
}

// follows reports whether this node is in term and has no leader but id.
func (n *Node) follows(id string, term uint64) bool {
	r := n.raftRef.Load()
	if r == nil || n.toldRemoved.Load() {
		return false
	}
	select {
	case <-n.stop:
		return false
	default:
	}
	if r.CurrentTerm() != term || r.State() == raft.Leader {
		return false
	}
	_, leader := r.LeaderWithID()
	if leader != "" && string(leader) != id {
		return false
	}
	// The term may have moved while the leader was read: check again.
	return r.CurrentTerm() == term
}

// confirmer runs a leader's confirmation rounds, one at a time; the reads
// waiting when a round starts share it (batcher).
type confirmer struct {
	n     *Node
	dial  func(raft.ServerAddress, time.Duration) (net.Conn, error)
	batch batcher[confirmWaiter]

	mu     sync.Mutex
	peers  map[raft.ServerAddress]*confirmPeer
	served map[net.Conn]bool // connections this node answers on
	closed bool
	lease  *leaseState // --read-mode lease (lease.go); nil otherwise

	// Used by the rounds' goroutine only (one round at a time, ordered
	// by batch.mu): the voters that said yes in the last round, in the
	// order they answered, asked first in the next (the others after
	// them: a voter that did not answer, said no or was not asked); and
	// the recent time a yes took to come back (an average of the answers
	// that completed a quorum, each timed from its own request, so that
	// the hedge's own wait never feeds it), from which the wait before
	// asking the others is set.
	order []raft.ServerAddress
	rtt   time.Duration

	// timeout bounds the wait for one voter's answer (the heartbeat
	// timeout; a test may set it before the first read).
	timeout time.Duration
	// asked counts the requests this node sent as a leader, answers
	// those it answered as a follower;
	// while hold is set, a test's stand-in for a paused process, they
	// are answered only once it is closed.
	asked   atomic.Uint64
	answers atomic.Uint64
	hold    atomic.Pointer[chan struct{}]
}

// confirmWaiter is a read waiting for a round: the term its leader was
// in when it arrived, and what to tell.
type confirmWaiter struct {
	term uint64
	done func(error)
}

type confirmPeer struct {
	mu sync.Mutex // one request at a time
	c  net.Conn
	rd *bufio.Reader
	// The answer awaited, as much of it as has been read (a wait cut
	// short by the hedge resumes where it stopped).
	ans [9]byte
	got int
}

// errNotConfirmed: a quorum did not confirm this node's leadership in time.
var errNotConfirmed = errors.New("cluster: leadership not confirmed")

func newConfirmer(n *Node, dial func(raft.ServerAddress, time.Duration) (net.Conn, error)) *confirmer {
	c := &confirmer{n: n, dial: dial, peers: map[raft.ServerAddress]*confirmPeer{}, served: map[net.Conn]bool{},
		timeout: n.cfg.HeartbeatTimeout}
	c.batch.round = c.runBatch
	return c
}

// serving adds c to the connections this node answers on (false once the
// node is closed), or takes it out.
func (c *confirmer) serving(conn net.Conn, add bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !add {
		delete(c.served, conn)
		return true
	}
	if c.closed {
		return false
	}
	c.served[conn] = true
	return true
}

// confirm returns nil once a quorum of voters, asked after the call began,
// said this node leads them in term.
func (c *confirmer) confirm(ctx context.Context, term uint64) error {
	ch := make(chan error, 1)
	c.enqueue(term, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue has the next round, begun after this call, tell done its
// outcome, on the confirmer's goroutine.
func (c *confirmer) enqueue(term uint64, done func(error)) {
	if !c.batch.add(confirmWaiter{term, done}) {
		done(ErrShutdown)
	}
}

// runBatch runs a round for the reads waiting. A round asks about the
// newest term among its reads; a read that arrived in an older term (this
// node has led again since) is told its leadership was not confirmed.
func (c *confirmer) runBatch(round uint64, batch []confirmWaiter) {
	var term uint64
	for _, w := range batch {
		term = max(term, w.term)
	}
	err := c.run(round, term)
	for _, w := range batch {
		if w.term != term {
			w.done(errNotConfirmed)
			continue
		}
		w.done(err)
	}
}

// Hedging: a round first asks only as many voters as a quorum needs
// besides this node (one of two followers), the one that answered first
// last time first; the others are asked too if one of those says no or
// fails, or if no quorum has answered after hedgeAfter. Every voter asked
// is asked after the reads arrived, so any quorum of yes confirms them, as
// when all are asked at once. Asking fewer costs the followers less (each
// answer is a wake-up and two system calls on a machine the members
// share) and leaves the cores to the leader and its clients.
const (
	hedgeMin  = time.Millisecond // the least wait before asking the rest
	hedgeRTTs = 4                // times the recent round time
)

// hedgeAfter is how long a round waits for its first voters' answers
// before it asks the rest.
func (c *confirmer) hedgeAfter() time.Duration {
	return min(max(hedgeMin, hedgeRTTs*c.rtt), c.timeout)
}

// run asks other voters, after the call began, until a quorum said yes
// (this node counting as one) or every voter answered.
func (c *confirmer) run(round, term uint64) error {
	f := c.n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	var others []raft.ServerAddress
	voters, yes := 0, 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if string(s.ID) == c.n.cfg.ID {
			yes++
			continue
		}
		others = append(others, s.Address)
	}
	rank := func(a raft.ServerAddress) int {
		if i := slices.Index(c.order, a); i >= 0 {
			return i
		}
		return len(c.order)
	}
	slices.SortStableFunc(others, func(a, b raft.ServerAddress) int { return rank(a) - rank(b) })
	need := voters/2 + 1
	if yes >= need {
		return nil
	}
	if yes == 0 {
		return errNotConfirmed // not a voter of its own configuration
	}
	timeout := c.timeout
	type answer struct {
		addr raft.ServerAddress
		yes  bool
		took time.Duration // from this request's start to its answer
	}
	// learn notes the voters that made the quorum, in the order they
	// said yes, and the time the last one's yes took.
	learn := func(said []raft.ServerAddress, took time.Duration) {
		// The next round asks these voters first, and its hedge waits a
		// few of the recent answers' times (a hedged round's too: were
		// only quick rounds counted, a machine whose answers all take
		// longer than the hedge would ask every voter every time). One
		// slow answer moves the average by at most a bounded step, so a
		// single spike does not set the hedge for the rounds after it.
		c.order = said
		if c.rtt > 0 {
			took = min(took, 2*c.rtt+hedgeMin)
		}
		c.rtt = (3*c.rtt + took) / 4
	}
	var (
		answers           chan answer
		asked, pending    int
		first             raft.ServerAddress
		firstP            *confirmPeer // first's answer, still awaited after the hedge
		t0                time.Time
		hedgeNow, refused bool
	)
	if need-yes == 1 {
		// One yes makes the quorum (three voters): the round asks the
		// first voter itself, without a goroutine, a channel or a timer
		// of its own; the hedge is the deadline of that wait.
		first, t0 = others[0], time.Now()
		asked++
		c.asked.Add(1)
		p := c.send(first, round, term, timeout)
		if p != nil {
			yes, done := p.await(round, t0.Add(c.hedgeAfter()), false)
			switch {
			case done && yes:
				learn([]raft.ServerAddress{first}, time.Since(t0))
				return nil
			case done:
				refused = true
			default:
				firstP, hedgeNow = p, true
			}
		} else {
			refused = true
		}
	}
	answers = make(chan answer, len(others))
	if firstP != nil {
		// No answer within the hedge: it is awaited on a goroutine, up
		// to the round's timeout, while the others are asked.
		pending++
		go func() {
			yes, _ := firstP.await(round, t0.Add(timeout), true)
			answers <- answer{first, yes, time.Since(t0)}
		}()
	}
	ask := func(k int) {
		for ; k > 0 && asked < len(others); k-- {
			addr := others[asked]
			asked++
			pending++
			c.asked.Add(1)
			go func() {
				t0 := time.Now()
				ok := c.ask(addr, round, term, timeout)
				answers <- answer{addr, ok, time.Since(t0)}
			}()
		}
	}
	switch {
	case hedgeNow:
		ask(len(others))
	case refused:
		ask(1) // another voter in the first's place
	default:
		ask(need - yes)
	}
	hedge := time.NewTimer(c.hedgeAfter())
	defer hedge.Stop()
	var said []raft.ServerAddress // the voters that said yes, in order
	for pending > 0 {
		select {
		case a := <-answers:
			pending--
			if !a.yes {
				ask(1) // another voter in its place
				continue
			}
			said = append(said, a.addr)
			if yes++; yes >= need {
				learn(said, a.took)
				return nil
			}
		case <-hedge.C:
			ask(len(others))
		}
	}
	return errNotConfirmed
}

// ask sends one request to addr over its connection (opened on first use,
// dropped on any error) and reports whether the answer was yes.
//
// A voter whose answer to an earlier round is still awaited (a paused or
// unreachable process) counts as a no at once: the round asks another
// rather than queue behind it. After close it asks nobody.
func (c *confirmer) ask(addr raft.ServerAddress, round, term uint64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	p := c.send(addr, round, term, timeout)
	if p == nil {
		return false
	}
	yes, _ := p.await(round, deadline, true)
	return yes
}

// send sends round's request to addr (as ask) and returns its peer,
// locked until await has its answer; nil for a no (a voter already
// awaited, a failed dial or write, a closed confirmer).
func (c *confirmer) send(addr raft.ServerAddress, round, term uint64, timeout time.Duration) *confirmPeer {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	p := c.peers[addr]
	if p == nil {
		p = &confirmPeer{}
		c.peers[addr] = p
	}
	c.mu.Unlock()
	if !p.mu.TryLock() {
		return nil
	}
	// close may have run between the two locks: then it has passed p,
	// and a connection dialed now would never be closed.
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		p.mu.Unlock()
		return nil
	}
	if p.c == nil {
		conn, err := c.dial(addr, timeout)
		if err != nil {
			p.mu.Unlock()
			return nil
		}
		if _, err := conn.Write([]byte{confirmMagic}); err != nil {
			conn.Close()
			p.mu.Unlock()
			return nil
		}
		p.c, p.rd = conn, bufio.NewReader(conn)
	}
	id := c.n.cfg.ID
	req := make([]byte, 17, 17+len(id))
	binary.BigEndian.PutUint64(req[:8], round)
	binary.BigEndian.PutUint64(req[8:16], term)
	req[16] = byte(len(id))
	req = append(req, id...)
	p.c.SetDeadline(time.Now().Add(timeout))
	if _, err := p.c.Write(req); err != nil {
		p.drop()
		p.mu.Unlock()
		return nil
	}
	p.got = 0
	return p
}

// await reads the answer to the request send sent, until deadline. If
// the deadline passes first and final is false, it returns done false,
// with p still locked and its connection kept: a later await goes on
// reading the same answer. Otherwise p is unlocked, done is true and yes
// reports a yes to round.
func (p *confirmPeer) await(round uint64, deadline time.Time, final bool) (yes, done bool) {
	p.c.SetReadDeadline(deadline)
	n, err := io.ReadFull(p.rd, p.ans[p.got:])
	p.got += n
	if err != nil && !final && errors.Is(err, os.ErrDeadlineExceeded) {
		return false, false
	}
	defer p.mu.Unlock()
	if err != nil || binary.BigEndian.Uint64(p.ans[:8]) != round || p.ans[8] != 1 {
		// A no comes from a voter in another term or following another
		// leader, or from a node that is stopping: the next round dials
		// again, and reaches whatever listens at addr then.
		p.drop()
		return false, true
	}
	return true, true
}

// drop closes p's connection; p.mu is held.
func (p *confirmPeer) drop() {
	p.c.Close()
	p.c, p.rd = nil, nil
}

// close drops every connection, those it asks on and those it answers on.
func (c *confirmer) close() {
	c.batch.close()
	c.mu.Lock()
	c.closed = true
	for conn := range c.served {
		conn.Close()
	}
	peers := c.peers
	c.peers = map[raft.ServerAddress]*confirmPeer{}
	c.mu.Unlock()
	for _, p := range peers {
		// A round in flight holds p.mu until its deadline at most.
		p.mu.Lock()
		if p.c != nil {
			p.c.Close()
			p.c, p.rd = nil, nil
		}
		p.mu.Unlock()
	}
}

// StartRead serves a read-only command as Read does, without waiting
// (server.AsyncReader): on a ready leader it joins the next confirmation
// round (or, with a lease, needs none); on a follower that knows its
// leader it joins the next read-point request (followerread.go). done gets
// the result, exactly once, from another goroutine. A read that could not
// be served so goes through Read on a goroutine, which waits for a leader
// as a waiting caller's would. It returns false, having done nothing, on a
// removed node, a leader not ready yet or a follower that knows no leader.
// cmd's arguments must stay valid until done.
func (n *Node) StartRead(cmd fsm.Command, done func(fsm.Result, error)) bool {
	if n.removed() {
		return false
	}
	if n.leaderReadPoint("", 0, func(rp readPoint, err error) { n.serveAtPoint(rp, err, cmd, done) }) {
		return true
	}
	if n.raft.State() == raft.Leader {
		return false // not ready yet
	}
	return n.startFollowerRead(cmd, done)
}

// serveAtPoint serves cmd at rp once applied, on the caller's goroutine
// if it already is; on error it goes through Read.
func (n *Node) serveAtPoint(rp readPoint, err error, cmd fsm.Command, done func(fsm.Result, error)) {
	if err == nil && n.fsm.appliedIndex() >= rp.index {
		if n.longRead(cmd) { // not on the goroutine that answers reads
			go func() { done(n.readAt(rp.time, cmd), nil) }()
			return
		}
		done(n.readAt(rp.time, cmd), nil)
		return
	}
	go func() {
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.CommandTimeout)
			err = n.fsm.waitApplied(ctx, rp.index)
			cancel()
			if err == nil {
				done(n.readAt(rp.time, cmd), nil)
				return
			}
		}
		// Not served here (no leader, a leader that changed, an old
		// leader): Read tries again as a waiting caller would.
		done(n.Read(context.Background(), cmd))
	}()
}

// readNow runs a read on this leader's state machine, at the leader's time.
func (n *Node) readNow(cmd fsm.Command) (fsm.Result, error) {
	ts, ok := n.stamp()
	if !ok {
		return fsm.Result{}, ErrNotLeader
	}
	return n.readAt(ts, cmd), nil
}

// longRead reports whether cmd is a long read (fsm.Walk), which does not
// run on the goroutine that answers confirmed reads.
func (n *Node) longRead(cmd fsm.Command) bool {
	if !fsm.MayBeLongRead(cmd.Args) {
		return false
	}
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.LongRead(cmd)
}
