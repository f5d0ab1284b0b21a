package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/deadbolt/deadbolt/acl"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// Member is one server in the Raft configuration.
type Member struct {
	ID       string
	RaftAddr string
	RESPAddr string // "" until the member registered it
	Voter    bool
	Leader   bool
	// Health is this node's view of the member: "ok" when it heard from
	// it within two election timeouts (or it is this node), "unreachable"
	// when not, "unknown" when this node has no way to tell (a follower
	// hears only from the leader).
	Health string
	// Contact is how long ago this node last heard from the member (0 for
	// itself), -1 when unknown or never.
	Contact time.Duration
}

// Members returns the current configuration with client addresses.
func (n *Node) Members() ([]Member, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	_, leader := n.raft.LeaderWithID()
	contacts := n.contacts(leader)
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	var out []Member
	for _, s := range f.Configuration().Servers {
		addr, _ := n.state.NodeAddr(string(s.ID))
		m := Member{
			ID: string(s.ID), RaftAddr: string(s.Address), RESPAddr: addr,
			Voter: s.Suffrage == raft.Voter, Leader: s.ID == leader,
			Health: "unknown", Contact: -1,
		}
		if d, ok := contacts[s.ID]; ok {
			m.Contact, m.Health = d, "ok"
			if d < 0 || d > 2*n.cfg.ElectionTimeout {
				m.Health = "unreachable"
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// contacts returns how long ago this node heard from each member it can
// tell about: itself (0); on the leader, every other voter (its answers
// to AppendEntries, -1 for never); on a follower, the leader.
func (n *Node) contacts(leader raft.ServerID) map[raft.ServerID]time.Duration {
	out := map[raft.ServerID]time.Duration{raft.ServerID(n.cfg.ID): 0}
	now := time.Now()
	if n.raft.State() == raft.Leader {
		for id, d := range n.RaftMetrics().Followers {
			out[raft.ServerID(id)] = d
		}
		return out
	}
	if leader != "" {
		if lc := n.raft.LastContact(); !lc.IsZero() {
			out[leader] = now.Sub(lc)
		} else {
			out[leader] = -1
		}
	}
	return out
}

// Leader returns the leader's id and client address, if known.
func (n *Node) Leader() (id, respAddr string, ok bool) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", "", false
	}
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	addr, _ := n.state.NodeAddr(string(lid))
	return string(lid), addr, true
}

// AddVoter adds a voter. Only the leader can; others return ErrNotLeader.
func (n *Node) AddVoter(id, raftAddr string) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	f := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.CommandTimeout)
	if err := f.Error(); err != nil {
		return fmt.Errorf("cluster: add voter %s: %w", id, membershipErr(err))
	}
	// Committed may still mean not on this leader's disk (durable.go).
	if err := n.waitDurable(f.Index()); err != nil {
		return fmt.Errorf("cluster: add voter %s: %w", id, err)
	}
	return nil
}

// RemoveServer removes a member and forgets its client address. Only the
// leader can. An id that is not a member is an error (raft would accept
// it and change nothing, so a mistyped id would look removed).
func (n *Node) RemoveServer(id string) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	members, err := n.Members()
	if err != nil {
		return fmt.Errorf("cluster: remove %s: %w", id, err)
	}
	i := slices.IndexFunc(members, func(m Member) bool { return m.ID == id })
	if i < 0 {
		return fmt.Errorf("cluster: remove %s: no member has that id (RAFT MEMBERS lists them)", id)
	}
	addr := members[i].RaftAddr
	f := n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.CommandTimeout)
	if err := f.Error(); err != nil {
		return fmt.Errorf("cluster: remove %s: %w", id, membershipErr(err))
	}
	if err := n.waitDurable(f.Index()); err != nil {
		return fmt.Errorf("cluster: remove %s: %w", id, err)
	}
	if id == n.cfg.ID {
		// The leader removed itself and has stepped down. Being removed,
		// it cannot propose forgetting its own address (a stale entry is
		// harmless: addresses are looked up by member id, and set again
		// if the id rejoins), and it needs no telling.
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.CommandTimeout)
	defer cancel()
	if _, err := n.Apply(ctx, fsm.ForgetCommand(id)); err != nil {
		return err
	}
	// The removed node may never see the configuration that drops it (the
	// leader stops replicating to it), so tell it directly. Best effort: a
	// node that does not hear it finds no leader and serves nothing.
	if addr != "" {
		r, err := n.memberRoundTrip(ctx, addr, [][]byte{[]byte("RAFT"), []byte("REMOVED"), []byte(id)})
		if err != nil || r.Type == resp.Error {
			n.cfg.Logger.Warn("telling a removed node failed", "id", id, "err", err, "reply", r.String())
		}
	}
	return nil
}

// membershipErr says so when a configuration change failed after it was
// appended to the log: a later leader may still commit it (the chaos test
// saw a removal answered with this error take effect seconds later).
func membershipErr(err error) error {
	if errors.Is(err, raft.ErrLeadershipLost) {
		return fmt.Errorf("%w; the change may still take effect (RAFT MEMBERS shows the configuration)", err)
	}
	return err
}

// MarkRemoved is called on a node that the leader removed: it stops
// serving and stops its Raft instance so that it cannot disturb the
// cluster with elections.
func (n *Node) MarkRemoved(id string) bool {
	if id != n.cfg.ID {
		return false
	}
	n.toldRemoved.Store(true)
	go n.raft.Shutdown()
	return true
}

// TransferLeadership asks raft to hand leadership to another voter.
func (n *Node) TransferLeadership() error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	n.timeline.handingOver(true)
	err := n.raft.LeadershipTransfer().Error()
	if err != nil {
		n.timeline.handingOver(false)
	}
	return err
}

// AppliedIndex is the index of the last entry this node applied.
func (n *Node) AppliedIndex() uint64 { return n.fsm.appliedIndex() }

// AppliedCommand is the command a leader sends followers to learn how far
// they have applied (for WAIT).
const AppliedCommand = "deadbolt.applied"

// Wait is WAIT: it blocks until numReplicas followers have applied every
// write acknowledged so far, or timeout passes (0: no limit but ctx), and
// returns how many have. A follower asks the leader, which counts its
// followers.
func (n *Node) Wait(ctx context.Context, numReplicas int, timeout time.Duration) (int, error) {
	if n.IsLeader() {
		return n.waitIndex(ctx, n.AppliedIndex(), numReplicas, timeout), nil
	}
	addr, ok := n.leaderRaftAddr()
	if !ok {
		return 0, nil
	}
	ms := strconv.FormatInt(timeout.Milliseconds(), 10)
	r, err := n.memberRoundTrip(ctx, addr, [][]byte{[]byte("WAIT"), []byte(strconv.Itoa(numReplicas)), []byte(ms)})
	if err != nil || r.Type != resp.Int {
		return 0, nil
	}
	return int(r.Int), nil
}

// WaitAOF is WAITAOF: a node with a data directory has every acknowledged
// write in its fsynced log before it is acknowledged, so local is 1; the
// replicas are counted as for WAIT (a follower stores an entry before it
// acknowledges it).
func (n *Node) WaitAOF(ctx context.Context, numLocal, numReplicas int, timeout time.Duration) (int, int, error) {
	local := 0
	if n.cfg.DataDir != "" {
		local = 1
	} else if numLocal > 0 {
		return 0, 0, replyError{"ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."}
	}
	reps, err := n.Wait(ctx, numReplicas, timeout)
	return local, reps, err
}

// waitIndex blocks until at least want followers have applied the entry
// at index, or timeout passes, and returns how many have. Only the leader
// counts; elsewhere it returns 0.
func (n *Node) waitIndex(ctx context.Context, index uint64, want int, timeout time.Duration) int {
	if !n.IsLeader() {
		return 0
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		got := n.countApplied(ctx, index)
		if got >= want || ctx.Err() != nil {
			return got
		}
		select {
		case <-ctx.Done():
			return got
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (n *Node) countApplied(ctx context.Context, index uint64) int {
	members, err := n.Members()
	if err != nil {
		return 0
	}
	type answer struct{ ok bool }
	ch := make(chan answer, len(members))
	asked := 0
	for _, m := range members {
		if m.ID == n.cfg.ID || m.RaftAddr == "" {
			continue
		}
		asked++
		go func(addr string) {
			qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			r, err := n.memberRoundTrip(qctx, addr, [][]byte{[]byte(AppliedCommand)})
			if err != nil {
				ch <- answer{}
				return
			}
			v, _ := strconv.ParseUint(string(r.Str), 10, 64)
			ch <- answer{ok: r.Type == resp.Bulk && v >= index}
		}(m.RaftAddr)
	}
	got := 0
	for i := 0; i < asked; i++ {
		if (<-ch).ok {
			got++
		}
	}
	return got
}

// Role is the ROLE reply: master with its replicas, or slave of the
// leader.
func (n *Node) Role() resp.Reply {
	members, _ := n.Members()
	if n.IsLeader() {
		var reps []resp.Reply
		for _, m := range members {
			if m.ID == n.cfg.ID || m.RESPAddr == "" {
				continue
			}
			host, port := splitHostPort(m.RESPAddr)
			reps = append(reps, resp.ArrayReply(resp.BulkString(host), resp.BulkString(port), resp.BulkString("0")))
		}
		return resp.ArrayReply(resp.BulkString("master"), resp.IntReply(int64(n.AppliedIndex())), resp.ArrayReply(reps...))
	}
	host, port := "", "0"
	state := "connect"
	if _, addr, ok := n.Leader(); ok && addr != "" {
		host, port = splitHostPort(addr)
		state = "connected"
	}
	p, _ := strconv.Atoi(port)
	return resp.ArrayReply(resp.BulkString("slave"), resp.BulkString(host), resp.IntReply(int64(p)),
		resp.BulkString(state), resp.IntReply(int64(n.AppliedIndex())))
}

// Replication returns the lines of INFO's replication section.
func (n *Node) Replication() []string {
	members, _ := n.Members()
	applied := strconv.FormatUint(n.AppliedIndex(), 10)
	if n.IsLeader() {
		lines := []string{"role:master"}
		var slaves []string
		for _, m := range members {
			if m.ID == n.cfg.ID || m.RESPAddr == "" {
				continue
			}
			host, port := splitHostPort(m.RESPAddr)
			slaves = append(slaves, fmt.Sprintf("slave%d:ip=%s,port=%s,state=online,offset=%s,lag=0", len(slaves), host, port, applied))
		}
		lines = append(lines, "connected_slaves:"+strconv.Itoa(len(slaves)))
		lines = append(lines, slaves...)
		return append(lines, "master_failover_state:no-failover", "master_replid:"+n.cfg.ID,
			"master_repl_offset:"+applied)
	}
	host, port, status := "", "0", "down"
	if _, addr, ok := n.Leader(); ok && addr != "" {
		host, port = splitHostPort(addr)
		status = "up"
	}
	return []string{"role:slave", "master_host:" + host, "master_port:" + port,
		"master_link_status:" + status, "master_last_io_seconds_ago:0", "master_sync_in_progress:0",
		"slave_read_repl_offset:" + applied, "slave_repl_offset:" + applied, "slave_priority:100",
		"slave_read_only:1", "replica_announced:1", "connected_slaves:0",
		"master_failover_state:no-failover", "master_repl_offset:" + applied}
}

func splitHostPort(addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "0"
	}
	return h, p
}

// TransferIfLeader hands leadership to another voter if this node leads
// and has one (a sole voter has nobody to hand it to: nil).
func (n *Node) TransferIfLeader() error {
	if n.raft.State() != raft.Leader || n.soleVoter() {
		return nil
	}
	n.timeline.handingOver(true)
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		n.timeline.handingOver(false)
		return fmt.Errorf("cluster: leadership hand-over: %w", err)
	}
	n.cfg.Logger.Info("cluster: leadership handed over", "id", n.cfg.ID)
	return nil
}

// Snapshot takes a snapshot now.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// Save is SAVE and BGSAVE: a Raft snapshot of this node's state, which
// also lets the log be compacted; nothing new since the last one is no
// error.
func (n *Node) Save(context.Context) error {
	if err := n.Snapshot(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return err
	}
	return nil
}

// JoinCommand asks a member to add a voter: RAFT JOIN <id> <raft address>.
// A member that is not the leader answers "TRYAGAIN ... leader at <addr>".
const leaderAtPrefix = "TRYAGAIN not the leader; leader at "

// NotLeaderReply is the answer of a follower to an admin command only the
// leader can run; it names the leader's client address when known.
func (n *Node) NotLeaderReply() resp.Reply {
	if _, addr, ok := n.Leader(); ok && addr != "" {
		return resp.Err(leaderAtPrefix + addr)
	}
	return resp.Err(ErrNoLeader.msg)
}

// JoinVia asks the cluster that the member at addr belongs to to add this
// node as a voter, following redirects to the leader. A redirect that
// leads nowhere (a leader gone since, or, with TLS, a leader's address
// that serves no TLS) sends the next try back to addr.
func (n *Node) JoinVia(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 4*n.cfg.CommandTimeout)
	defer cancel()
	seed := addr
	for {
		r, err := n.roundTrip(ctx, addr, [][]byte{[]byte("RAFT"), []byte("JOIN"), []byte(n.cfg.ID), []byte(n.RaftAddr())})
		switch {
		case err != nil && certificateRefused(err):
			// The seed or this node refused the other's certificate:
			// trying again cannot change that.
			return fmt.Errorf("cluster: join via %s: %w", addr, err)
		case err != nil && addr == seed && notTLS(err):
			// With --tls-cluster, the seed given is a port that answers
			// in plain text (its --addr, not its --tls-addr): trying
			// again cannot change that either.
			return fmt.Errorf("cluster: join via %s: %w", addr, err)
		case err != nil && addr != seed:
			addr = seed // after the pause below
		case err == nil && r.Type == resp.Status:
			return nil
		case err == nil && r.Type == resp.Error && strings.HasPrefix(string(r.Str), leaderAtPrefix):
			addr = strings.TrimPrefix(string(r.Str), leaderAtPrefix)
			continue
		case err == nil && r.Type == resp.Error && !strings.HasPrefix(string(r.Str), "TRYAGAIN"):
			return fmt.Errorf("cluster: join via %s: %s", addr, r.Str)
		}
		select {
		case <-ctx.Done():
			last := string(r.Str)
			if err != nil {
				last = err.Error()
			}
			return fmt.Errorf("cluster: join via %s: %w (last: %s)", addr, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (n *Node) roundTrip(ctx context.Context, addr string, args [][]byte) (resp.Reply, error) {
	return n.fwd.roundTrip(ctx, addr, args)
}

// KeyspaceStats counts a database's keys and those with a deadline on
// this node (INFO keyspace).
func (n *Node) KeyspaceStats(db int) (keys, expires int) {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.Stats(db)
}

// ScriptCount is the number of cached scripts (INFO memory).
func (n *Node) ScriptCount() int {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.ScriptCount()
}

// Term is the Raft term this node is in. It grows with every election, so
// it serves as the configuration epoch that Sentinel and Cluster clients
// see.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// leaderPoll is how often OnLeaderChange looks for a change that Raft did
// not announce: a leader whose client address becomes known later.
const leaderPoll = 50 * time.Millisecond

// OnLeaderChange calls fn, on a goroutine of its own, with the leader this
// node knows of and its client address: once for the leader known when it
// is called (as soon as there is one), then each time a different leader
// or address becomes known. A period without a leader (an election) is
// not reported. Calls do not overlap; none starts after stop returns or
// once the node is closing. stop waits for a call in progress, so it must
// not be called from fn.
func (n *Node) OnLeaderChange(fn func(id, respAddr string)) (stop func()) {
	wake := make(chan raft.Observation, 1)
	obs := raft.NewObserver(wake, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaderPoll)
		defer t.Stop()
		var lastID, lastAddr string
		for {
			select {
			case <-quit:
				return
			case <-n.stop:
				return
			default:
			}
			if id, addr, ok := n.Leader(); ok && addr != "" && (id != lastID || addr != lastAddr) {
				lastID, lastAddr = id, addr
				fn(id, addr)
			}
			select {
			case <-quit:
				return
			case <-n.stop:
				return
			case <-wake:
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.raft.DeregisterObserver(obs)
			close(quit)
			<-done
		})
	}
}

// LogicalMemory returns this node's state machine's logical size and
// maxmemory (INFO memory, MULTI's queueing).
func (n *Node) LogicalMemory() (used, limit int64) {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.LogicalMemory()
}

// StateSnapshot writes this node's state machine as a snapshot and
// returns the log index it has applied: two nodes at the same index must
// write the same bytes (tests compare replicas with it).
func (n *Node) StateSnapshot(w interface{ Write([]byte) (int, error) }) (uint64, error) {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.fsm.applied, n.state.Snapshot(w)
}

// OverMaxmemory reports whether this node's state machine was over
// maxmemory after its last command; no lock (MULTI's queueing asks it).
func (n *Node) OverMaxmemory() bool { return n.overMaxmemory() }

// refuseForMemory refuses, on the leader, a command its state machine
// would refuse for memory (fsm.MemoryRefusal) without proposing it: a
// refused write then costs no log entry. Everything this leader has
// acknowledged is applied here, so no write is refused that a DEL already
// acknowledged made room for. Free unless the state machine is over the
// limit.
func (n *Node) refuseForMemory(cmd fsm.Command) (fsm.Result, bool) {
	if !n.overMaxmemory() {
		return fsm.Result{}, false
	}
	n.fsm.mu.Lock()
	r, ok := n.state.MemoryRefusal(cmd)
	n.fsm.mu.Unlock()
	return fsm.Result{Reply: r, DB: cmd.DB}, !ok
}

// Setting returns a replicated setting's value as this node has applied
// it (CONFIG GET).
func (n *Node) Setting(name string) string {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.Setting(name)
}

// Stopped is closed when the node stops.
func (n *Node) Stopped() <-chan struct{} { return n.stop }

// Users returns the ACL users as this node has applied them; no lock: the
// state machine publishes them atomically.
func (n *Node) Users() *acl.Users { return n.users() }

// WaitApplied returns once this node has applied the entry at index (a
// change made through the log that the client will read back here, such
// as CONFIG SET or ACL SETUSER sent to a follower).
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.fsm.waitApplied(ctx, index)
}

// certificateRefused reports whether a TLS handshake failed on a
// certificate: the peer's alert, or this side's verification.
// notTLS reports whether err is a TLS handshake's with a peer that does
// not speak TLS.
func notTLS(err error) bool {
	var rec tls.RecordHeaderError
	return errors.As(err, &rec)
}

func certificateRefused(err error) bool {
	var verify *tls.CertificateVerificationError
	var op *net.OpError
	// crypto/tls reports an alert the peer sent as a "remote error".
	return errors.As(err, &verify) || errors.As(err, &op) && op.Op == "remote error"
}
