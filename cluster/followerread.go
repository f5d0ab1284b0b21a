package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Follower reads (the Raft thesis §6.4, served by a follower).
//
// A read sent to a follower is served from the follower's own state
// machine, not forwarded. The follower asks the leader for a read point:
// the leader notes its commit index when the request arrives, confirms
// its leadership as it does for its own reads (a round to the voters,
// readindex.go; or its lease, lease.go), and answers the noted index with
// its clock at the time of the answer. The follower waits until it has
// applied that index and runs the read there, at the leader's time.
//
// Why it is linearizable: the noted index covers every write acknowledged
// before the read began (the leader is ready, so its commit index covers
// everything committed before it led, and the confirmation shows that no
// newer leader existed when the request arrived). The follower applies
// only committed entries, so its state at the applied index, which may be
// later still, is one that held at some moment during the read.
//
// Expiry: the state machine's clock comes from the log, and between two
// entries it lags the leader's clock (by up to tickInterval on an idle
// leader). A read served at the follower's own log time would see a lock
// whose lease has run out as still held. The leader's answer carries its
// clock, read after the confirmation (as a leader-side read stamps its
// time after the round), so the follower judges expiry at a time taken
// during the read, as the leader would have; fsm.Read uses the state
// machine's own clock if that is later (an entry stamped after the answer,
// applied before the read: also a time during the read).
//
// Nothing here trusts the follower's own view beyond the leader's address:
// a follower cut off from the leader gets no answer; one that asks a node
// that no longer leads gets a no, from the failed round, and tries again
// at the next leader (route). Terms need no check at the follower: the
// answer's safety rests on the leader's round, which is in the leader's
// term and asked after the request arrived.
//
// Concurrent reads on a follower share one request: the reads waiting
// when a request is sent share its answer, as the leader's reads share a
// round.
//
// The asking follower vouches for the leader: its request says "I am in
// term T and follow you", checked after the reads it carries began. That
// is a confirmation as good as a round's answer: a voter that had voted
// for a newer leader before the reads began would be in a higher term (a
// term only grows). So when the leader and the asking follower make a
// quorum (three voters), the leader answers at once, without a round: one
// round trip for the follower's reads. With more voters it still runs its
// round.
//
// A request on a read-index connection (readIndexMagic) is a sequence
// number (8 bytes), the follower's term (8), the length of its id (1) and
// the id; the answer is the sequence number (8), 1 for a read point or 0
// for not the leader (1), the index (8) and the leader's time in ms (8).

const readIndexAnswer = 25

// errNoFollowerReads: the leader closed a new read-index connection
// without answering, as a node from before follower reads does (it takes
// the first byte for raft's). The read is forwarded instead.
var errNoFollowerReads = errors.New("cluster: the leader does not answer read-index requests")

// readPoint is where and when a read is served.
type readPoint struct {
	index uint64
	time  int64
}

// leaderReadPoint has done told, from another goroutine, the read point
// of a read that arrives now on this leader: its commit index now, and
// its time once its leadership is confirmed. It returns false, having
// done nothing, if this node is not a ready leader.
//
// voucher, if not empty, is a voter that said, after the read began, that
// it follows this node in vterm: with this node it may make a quorum.
func (n *Node) leaderReadPoint(voucher string, vterm uint64, done func(readPoint, error)) bool {
	if n.removed() {
		return false
	}
	n.tmu.Lock()
	ready, term := n.lead.ready, n.lead.term
	n.tmu.Unlock()
	if !ready || n.raft.State() != raft.Leader {
		return false
	}
	index := n.raft.CommitIndex()
	answer := func(err error) {
		if err != nil {
			done(readPoint{}, err)
			return
		}
		ts, ok := n.leaderNow()
		if !ok {
			done(readPoint{}, ErrNotLeader)
			return
		}
		done(readPoint{index, ts}, nil)
	}
	if n.confirm.leased(term) || voucher != "" && vterm == term && n.vouchedQuorum(voucher, term) {
		go answer(nil)
		return true
	}
	n.confirm.enqueue(term, answer)
	return true
}

// vouchedQuorum reports whether this node, still leading in term, and
// voucher, a voter other than itself, are a quorum of the voters.
func (n *Node) vouchedQuorum(voucher string, term uint64) bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	voters, yes := 0, 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if string(s.ID) == n.cfg.ID || string(s.ID) == voucher {
			yes++
		}
	}
	if voucher == n.cfg.ID || yes < voters/2+1 {
		return false
	}
	// Checked now, after the request arrived: this node has not moved to
	// a newer term (it would have, to vote for another).
	return n.raft.State() == raft.Leader && n.raft.CurrentTerm() == term
}

// serveReadIndex answers a follower's read-index requests on c until it
// closes.
func (n *Node) serveReadIndex(c net.Conn) {
	if !n.confirm.serving(c, true) {
		c.Close()
		return
	}
	defer n.confirm.serving(c, false)
	defer c.Close()
	rd := bufio.NewReader(c)
	var wmu sync.Mutex
	var req [17]byte
	id := make([]byte, confirmMaxID)
	for {
		if _, err := io.ReadFull(rd, req[:]); err != nil {
			return
		}
		l := int(req[16])
		if _, err := io.ReadFull(rd, id[:l]); err != nil {
			return
		}
		seq, vterm, voucher := binary.BigEndian.Uint64(req[:8]), binary.BigEndian.Uint64(req[8:16]), string(id[:l])
		reply := func(rp readPoint, err error) {
			var ans [readIndexAnswer]byte
			binary.BigEndian.PutUint64(ans[:8], seq)
			if err == nil {
				ans[8] = 1
				binary.BigEndian.PutUint64(ans[9:17], rp.index)
				binary.BigEndian.PutUint64(ans[17:25], uint64(rp.time))
			}
			wmu.Lock()
			defer wmu.Unlock()
			c.SetWriteDeadline(time.Now().Add(n.cfg.HeartbeatTimeout))
			c.Write(ans[:])
		}
		if !n.leaderReadPoint(voucher, vterm, reply) {
			reply(readPoint{}, ErrNotLeader)
		}
	}
}

// readIndexClient is a follower's side: one request to the leader at a
// time, shared by the reads waiting when it is sent (batcher).
type readIndexClient struct {
	n     *Node
	dial  func(raft.ServerAddress, time.Duration) (net.Conn, error)
	batch batcher[func(readPoint, error)]

	// The connection to the leader, used by the batch's goroutine only
	// (close takes cmu too).
	cmu      sync.Mutex
	c        net.Conn
	rd       *bufio.Reader
	addr     raft.ServerAddress
	answered bool // an answer came on c
	seq      uint64
	// old: leaders that closed a new connection unanswered (an older
	// build), and when; reads are forwarded to them for oldLeaderFor
	// without dialing again (each dial costs the old node a raft error).
	old map[raft.ServerAddress]time.Time
}

// oldLeaderFor is how long a leader that does not answer read-index
// requests gets forwarded reads before it is asked again (it may have
// been upgraded).
const oldLeaderFor = 30 * time.Second

func newReadIndexClient(n *Node, dial func(raft.ServerAddress, time.Duration) (net.Conn, error)) *readIndexClient {
	r := &readIndexClient{n: n, dial: dial}
	r.batch.round = r.runBatch
	return r
}

// enqueue has the next request, sent after this call, tell done its
// answer, on the client's goroutine.
func (r *readIndexClient) enqueue(done func(readPoint, error)) {
	if !r.batch.add(done) {
		done(readPoint{}, ErrShutdown)
	}
}

// runBatch asks the leader for one read point for the reads waiting.
func (r *readIndexClient) runBatch(_ uint64, batch []func(readPoint, error)) {
	var (
		rp  readPoint
		err = error(ErrNoLeader)
	)
	if addr, term, ok := r.n.followedLeader(); ok {
		rp, err = r.ask(raft.ServerAddress(addr), term)
	}
	for _, done := range batch {
		done(rp, err)
	}
}

// ask sends one request to the leader at addr and waits for its answer:
// a round may be under way when the request arrives, and the next one
// takes at most its hedge plus a heartbeat timeout (readindex.go), so four
// heartbeat timeouts cover both; past them the read falls back to Read.
func (r *readIndexClient) ask(addr raft.ServerAddress, term uint64) (readPoint, error) {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	timeout := 4 * r.n.cfg.HeartbeatTimeout
	if t, ok := r.old[addr]; ok && time.Since(t) < oldLeaderFor {
		return readPoint{}, errNoFollowerReads
	}
	if r.c != nil && r.addr != addr {
		r.drop()
	}
	if r.c == nil {
		conn, err := r.dial(addr, timeout)
		if err != nil {
			return readPoint{}, ErrNoLeader
		}
		if _, err := conn.Write([]byte{readIndexMagic}); err != nil {
			conn.Close()
			return readPoint{}, ErrNoLeader
		}
		r.c, r.rd, r.addr, r.answered = conn, bufio.NewReader(conn), addr, false
	}
	r.seq++
	id := r.n.cfg.ID
	req := make([]byte, 17, 17+len(id))
	binary.BigEndian.PutUint64(req[:8], r.seq)
	binary.BigEndian.PutUint64(req[8:16], term)
	req[16] = byte(len(id))
	req = append(req, id...)
	var ans [readIndexAnswer]byte
	r.c.SetDeadline(time.Now().Add(timeout))
	_, err := r.c.Write(req)
	if err == nil {
		_, err = io.ReadFull(r.rd, ans[:])
	}
	if err != nil {
		// Closed unanswered (not timed out): with the request unread, the
		// close may come as a reset.
		fresh := !r.answered && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
		r.drop()
		if fresh {
			if r.old == nil {
				r.old = map[raft.ServerAddress]time.Time{}
			}
			r.old[addr] = time.Now()
			return readPoint{}, errNoFollowerReads
		}
		return readPoint{}, ErrNoLeader
	}
	r.answered = true
	delete(r.old, addr)
	if binary.BigEndian.Uint64(ans[:8]) != r.seq {
		r.drop()
		return readPoint{}, ErrNoLeader
	}
	if ans[8] != 1 {
		return readPoint{}, ErrNotLeader
	}
	return readPoint{index: binary.BigEndian.Uint64(ans[9:17]), time: int64(binary.BigEndian.Uint64(ans[17:25]))}, nil
}

// followedLeader returns the Raft address of the leader this follower
// follows and its current term, read so that the two go together (the
// term read again after the leader); term is 0 (vouching for nothing) if
// it moved in between.
func (n *Node) followedLeader() (string, uint64, bool) {
	term := n.raft.CurrentTerm()
	addr, ok := n.leaderRaftAddr()
	if !ok {
		return "", 0, false
	}
	if n.raft.CurrentTerm() != term || n.raft.State() != raft.Follower {
		term = 0
	}
	return addr, term, true
}

func (r *readIndexClient) drop() {
	if r.c != nil {
		r.c.Close()
		r.c, r.rd = nil, nil
	}
}

func (r *readIndexClient) close() {
	r.batch.close()
	// A request in flight holds cmu until its deadline at most.
	r.cmu.Lock()
	r.drop()
	r.cmu.Unlock()
}

// followerRead serves a read on this follower, whose leader is at addr:
// at a read point from the leader, once applied here.
func (n *Node) followerRead(ctx context.Context, addr string, cmd fsm.Command) (fsm.Result, error) {
	type answer struct {
		rp  readPoint
		err error
	}
	ch := make(chan answer, 1)
	n.fread.enqueue(func(rp readPoint, err error) { ch <- answer{rp, err} })
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		return fsm.Result{}, ErrNoLeader
	}
	if errors.Is(a.err, errNoFollowerReads) {
		return n.member.forward(ctx, addr, modeRead, cmd)
	}
	if a.err != nil {
		return fsm.Result{}, a.err
	}
	if err := n.fsm.waitApplied(ctx, a.rp.index); err != nil {
		return fsm.Result{}, ErrNoLeader
	}
	return n.readAt(a.rp.time, cmd), nil
}

// startFollowerRead is StartRead on a follower that knows its leader.
func (n *Node) startFollowerRead(cmd fsm.Command, done func(fsm.Result, error)) bool {
	if n.fread == nil {
		return false
	}
	if _, ok := n.leaderRaftAddr(); !ok {
		return false
	}
	n.fread.enqueue(func(rp readPoint, err error) { n.serveAtPoint(rp, err, cmd, done) })
	return true
}

// readAt runs a read on this node's state machine at time ts (the
// leader's, from a read point).
func (n *Node) readAt(ts int64, cmd fsm.Command) fsm.Result {
	n.fsm.mu.Lock()
	if w := n.state.BeginWalk(ts, cmd); w != nil {
		// A long read, in steps (fsm.Walk): applying goes on meanwhile.
		n.fsm.mu.Unlock()
		return w.Run(&n.fsm.mu)
	}
	defer n.fsm.mu.Unlock()
	return n.state.Read(ts, cmd)
}
