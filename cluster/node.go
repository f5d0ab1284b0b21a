package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/transport"
)

// Peer is a voter named at bootstrap.
type Peer struct {
	ID       string
	RaftAddr string
}

// Config configures a Raft node.
type Config struct {
	ID       string // unique node name
	RaftAddr string // address the Raft transport binds and advertises
	RESPAddr string // this node's client address, published to the others
	DataDir  string // log, stable store and snapshots; "" keeps all in memory
	// Peers bootstraps a new cluster (every node gets the same list,
	// itself included). Ignored once DataDir holds state.
	Peers []Peer

	SnapshotThreshold uint64        // entries between snapshots (8192)
	SnapshotInterval  time.Duration // how often to check the threshold (10 s)
	TrailingLogs      uint64        // entries kept after a snapshot (10240)
	HeartbeatTimeout  time.Duration // 1 s; tests use less
	ElectionTimeout   time.Duration // 1 s
	LeaderLease       time.Duration // 500 ms
	CommandTimeout    time.Duration // how long a command waits for a leader and a commit (5 s)
	Clock             Clock
	ScriptBudget      int64
	// Users are the ACL users until the log sets others (--requirepass,
	// --aclfile); nil for the default user alone.
	Users    *acl.Users
	Logger   *slog.Logger
	RaftLog  io.Writer // raft's own log; discarded if nil
	Deliver  Deliverer // this node's pub/sub hub
	Password string    // AUTH for forwarding to other nodes' client ports
	Network  *Network  // test hook: links that tests can cut
	// PeerAuth authenticates every connection on the Raft address (raft's,
	// read-index rounds', members' commands') before anything on it is
	// read: the cluster secret, mutual TLS, or both; nil trusts whoever
	// connects (--insecure-cluster).
	PeerAuth transport.PeerAuth
	// JoinConn, if set, wraps each connection JoinVia opens to a member's
	// client address before anything is sent (TLS, with --tls-cluster).
	JoinConn func(net.Conn) (net.Conn, error)
	// DiskStall: a leader whose own log sync has waited longer stops
	// sending to its followers, so that they elect another (durable.go).
	// 0: 1 s; negative: never.
	DiskStall time.Duration
	// MinFreeDisk: with less space free on the data directory's file
	// system the leader refuses client writes with a MISCONF error
	// (diskspace.go). 0: DefaultMinFreeDisk; negative: no threshold
	// (writes are refused only once an append fails for want of space).
	MinFreeDisk int64
	// MaxEntryBytes bounds a write's log entry: a larger one is refused
	// before it is proposed or forwarded (bigentry.go). 0:
	// DefaultMaxEntryBytes; negative: no limit of this node's own.
	MaxEntryBytes int64
	// PreserveDowngrade: write only what an older build reads (upgrade.go):
	// snapshots at version 2 at most, and refuse commands needing log
	// envelope version 3 or new replicated state (ACL users).
	PreserveDowngrade bool
	// SegmentSize is the size of the log's segment files (raftlog;
	// 0: its default). For tests on small file systems.
	SegmentSize int64
	// BeforeSync is a test hook: it runs before each sync of the log, and
	// its error fails the sync (a stalled or failing disk).
	BeforeSync func() error
	// OnDiskFailure, if set, is called once, after the node has stopped,
	// when a write or fdatasync of its log failed (diskfail.go). The
	// deadbolt binary exits.
	OnDiskFailure func(error)
	// ReadMode is how a leader confirms a read: ReadModeIndex ("" too),
	// a round to the voters per batch of reads, or ReadModeLease (lease.go).
	ReadMode string
	// Restore, if set, is a backup (Node.Backup) the new node starts
	// from, with Peers as the configuration (backup.go). A node whose
	// data directory holds state refuses it.
	Restore []byte
}

func (c *Config) defaults() {
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = 10 * time.Second
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = time.Second
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = time.Second
	}
	if c.LeaderLease == 0 {
		c.LeaderLease = 500 * time.Millisecond
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = 5 * time.Second
	}
	if c.DiskStall == 0 {
		c.DiskStall = time.Second
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if c.MinFreeDisk == 0 {
		c.MinFreeDisk = DefaultMinFreeDisk
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.RaftLog == nil {
		c.RaftLog = io.Discard
	}
}

// Node is one member of a Raft cluster. It satisfies the server's Backend:
// writes are committed on a quorum before they are answered, reads are
// linearizable, and a follower forwards both to the leader.
type Node struct {
	cfg   Config
	raft  *raft.Raft
	fsm   *raftFSM
	state *fsm.FSM
	users func() *acl.Users // the state machine's ACL users, any goroutine
	// overMaxmemory reports the state machine's out-of-memory state, any
	// goroutine (refuseForMemory).
	overMaxmemory func() bool
	transport     *raft.NetworkTransport
	// raftRef is raft once NewRaft has returned, for the log store's
	// goroutine; durable is the log store if it defers syncs.
	raftRef atomic.Pointer[raft.Raft]
	durable durability
	disk    *diskWatch // the data directory's free space; nil without one
	closers []io.Closer
	fwd     *forwarder // to a member's client port: RAFT JOIN (--join)
	member  *forwarder // to a member's Raft address: the members' commands (member.go)
	prop    *proposer
	confirm *confirmer       // read-index rounds (readindex.go)
	fread   *readIndexClient // a follower's read points (followerread.go)

	tmu      sync.Mutex
	lead     leaderTime
	lastProp time.Time // when this leader last proposed anything

	// toldRemoved: the leader said this node was removed (RAFT REMOVED), and
	// its Raft instance is shut down. outOfConfig: the newest configuration
	// this node has lacks it, having once had it. Either means removed().
	// inConfig: membershipLoop last saw this node in its configuration.
	toldRemoved atomic.Bool
	outOfConfig atomic.Bool
	inConfig    atomic.Bool
	respAddr    atomic.Pointer[string]
	memberServe atomic.Pointer[func(net.Conn)]
	stallWarned atomic.Int64           // when diskStalled last logged, Unix ns
	clusterID   atomic.Pointer[string] // the cluster's id, nil while unknown (clusterid.go)
	cidMu       sync.Mutex             // adoptClusterID
	hello       *clusterHello          // the members' handshake (clusterid.go)
	dials       *dialRecord            // how this node's last dial of each raft address ended (noquorum.go)
	cidErr      atomic.Pointer[error]  // the log's cluster id is not the data directory's (refuseClusterID)
	cidStop     atomic.Bool            // refuseClusterID's stop was claimed
	built       atomic.Bool            // NewNode is about to return
	logStore    *raftlog.Store         // nil with the log in memory
	catchUp     *catchUp               // the log lost synced entries (catchup.go); nil if not
	metrics     nodeMetrics            // metrics.go
	timeline    timeline               // leader and membership events (timeline.go)
	// lastHandOver: when handOverForSpace last asked the others, on
	// leaderDuties' goroutine only.
	lastHandOver time.Time

	// events is closed, and replaced, at each leadership event: a leader
	// becomes known here, or this node becomes a ready leader. Commands
	// waiting for a leader (route) wake on it.
	evMu   sync.Mutex
	events chan struct{}

	stop     chan struct{}
	wg       sync.WaitGroup
	shutOnce sync.Once
	// raftStop begins raft's shutdown once (stablefail.go); raftShut is
	// its future.
	raftStop sync.Once
	raftShut raft.Future
}

// NewNode starts a Raft node. It does not wait for a leader.
func NewNode(cfg Config) (*Node, error) {
	cfg.defaults()
	if cfg.ID == "" || cfg.RaftAddr == "" {
		return nil, errors.New("cluster: a node needs an ID and a Raft address")
	}
	if err := checkReadMode(cfg.ReadMode); err != nil {
		return nil, err
	}
	if len(cfg.ID) > confirmMaxID {
		return nil, fmt.Errorf("cluster: a node id has at most %d bytes", confirmMaxID)
	}
	n := &Node{cfg: cfg, stop: make(chan struct{})}
	n.SetRESPAddr(cfg.RESPAddr)
	n.state = fsm.New(fsm.Options{ScriptBudget: cfg.ScriptBudget, Users: cfg.Users, Logger: cfg.Logger, Listened: listened(cfg.Deliver)})
	n.users = n.state.UsersFunc()
	n.overMaxmemory = n.state.OverMaxmemoryFunc()
	n.fsm = newRaftFSM(n.state, cfg.Deliver)
	n.fsm.metrics = &n.metrics
	n.fsm.snapshotMax = snapshotMax(cfg.PreserveDowngrade)
	n.fsm.onNewer = n.formatRefused
	n.fsm.onClusterID = n.adoptClusterID
	n.fwd = newForwarder(cfg.CommandTimeout)
	n.fwd.password = cfg.Password
	n.member = newForwarder(cfg.CommandTimeout) // dials through the stream layer (demux)
	if cfg.Network != nil {
		n.fwd.dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return cfg.Network.dial(ctx, cfg.ID, addr)
		}
	}
	if cfg.JoinConn != nil {
		dial := n.fwd.dial
		n.fwd.dial = func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := dial(ctx, addr)
			if err != nil {
				return nil, err
			}
			wc, err := cfg.JoinConn(c)
			if err != nil {
				c.Close()
				return nil, err
			}
			return wc, nil
		}
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLease
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.MaxAppendEntries = 32 // and at most maxAppendBytes (bigentry.go)
	rc.BatchApplyCh = true
	rc.ShutdownOnRemove = false
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft:" + cfg.ID, Output: cfg.RaftLog, Level: hclog.Info})

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
		err    error
	)
	if cfg.DataDir == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = validLogs{LogStore: mem}, mem, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, err
		}
		writeID, err := checkIdentity(cfg.DataDir, cfg.ID) // identity.go
		if err != nil {
			return nil, err
		}
		cid, err := readClusterID(cfg.DataDir) // clusterid.go
		if err != nil {
			return nil, err
		}
		if cid != "" {
			n.clusterID.Store(&cid)
		}
		store, st, closer, err := openLogStore(cfg.DataDir, rc.Logger, raftlog.Options{BeforeSync: cfg.BeforeSync, SegmentSize: cfg.SegmentSize, OnFailure: n.diskFailed, RepairLost: true, Logger: cfg.Logger})
		if err != nil {
			return nil, storeError(err, cfg.ID, cfg.DataDir)
		}
		n.closers = append(n.closers, closer)
		stable = st
		failed := new(atomic.Pointer[error])
		cache := newLogCache(validLogs{store, failed}, logCacheSize, logCacheBytes)
		logs = cache
		if rl, ok := store.(*raftlog.Store); ok {
			// The leader's appends are synced while it replicates them
			// (durable.go); a follower's before it acknowledges them.
			rl.DeferSyncWhen(func() bool {
				r := n.raftRef.Load()
				return r != nil && r.State() == raft.Leader
			})
			n.durable = rl
			n.logStore = rl
			stable = stableGuard{rl, n} // stablefail.go
			n.fsm.durable = rl
			logs = heldLogs{cache, rl, failed, func() { n.disk.appendNoSpace() }}
			if lost := rl.Lost(); lost != nil {
				n.startCatchUp(rl, lost) // catchup.go
			}
		}
		var log reserver
		if rl, ok := store.(*raftlog.Store); ok {
			log = rl
		}
		n.disk = newDiskWatch(cfg.DataDir, max(cfg.MinFreeDisk, 0), log)
		var floor func() uint64
		if rl, ok := store.(*raftlog.Store); ok {
			floor = rl.Floor
		}
		if err := checkData(cfg.DataDir, cfg.ID, store, floor, cfg.Logger); err != nil {
			n.closeStores()
			return nil, err
		}
		snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, rc.Logger)
		if err != nil {
			n.closeStores()
			return nil, fmt.Errorf("cluster: open snapshot store: %w", err)
		}
		if writeID {
			if err := writeIdentity(cfg.DataDir, cfg.ID); err != nil {
				n.closeStores()
				return nil, err
			}
		}
	}
	if last, err := logs.LastIndex(); err == nil {
		n.fsm.replayUntil = last
	}

	addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		n.closeStores()
		return nil, fmt.Errorf("cluster: raft address: %w", err)
	}
	if cfg.Network != nil {
		ln, lerr := net.Listen("tcp", cfg.RaftAddr)
		if lerr != nil {
			n.closeStores()
			return nil, fmt.Errorf("cluster: raft transport: %w", lerr)
		}
		cfg.Network.Register(ln.Addr().String(), cfg.ID)
		stream := n.demux(&streamLayer{Listener: ln, nw: cfg.Network, id: cfg.ID})
		n.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: stream, MaxPool: 8, Timeout: 5 * time.Second, Logger: rc.Logger,
		})
	} else {
		var advertise net.Addr = addr
		if addr.Port == 0 {
			advertise = nil // the listener's own address
		}
		var stream *tcpStream
		if stream, err = listenTCP(cfg.RaftAddr, advertise); err == nil {
			n.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
				Stream: n.demux(stream), MaxPool: 8, Timeout: 5 * time.Second, Logger: rc.Logger,
			})
		}
	}
	if err != nil {
		n.closeStores()
		return nil, fmt.Errorf("cluster: raft transport: %w", err)
	}

	hasState, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		n.transport.Close()
		n.closeStores()
		return nil, err
	}
	if cfg.Restore != nil {
		if err := n.restoreBackup(hasState, snaps); err != nil {
			n.transport.Close()
			n.closeStores()
			return nil, err
		}
		hasState = true
	}
	// Always wrapped: it also notes the followers' answers (metrics.go).
	var trans raft.Transport = &durableTransport{NetworkTransport: n.transport, stall: cfg.DiskStall,
		onStall: n.diskStalled, contact: n.metrics.noteContact, ack: n.leaseAck, transfer: n.leaseTransfer}
	if n.durable != nil {
		trans.(*durableTransport).d = n.durable
	}
	if n.catchUp != nil {
		dt := trans.(*durableTransport)
		dt.catchUp, dt.filtered = n.catchUp, make(chan raft.RPC)
		go n.catchUp.filter(n.transport.Consumer(), dt.filtered, n.stop)
	}
	n.fsm.snaps = newOpenedSnaps(snaps) // Restore learns the snapshot's index
	n.raft, err = raft.NewRaft(rc, n.fsm, logs, stable, n.fsm.snaps, trans)
	if err != nil {
		n.transport.Close()
		n.closeStores()
		return nil, fmt.Errorf("cluster: start raft: %w", err)
	}
	n.raftRef.Store(n.raft)
	if n.logStore != nil {
		// A failed save of the term while raft started (stablefail.go).
		if err := n.logStore.Failed(); err != nil {
			n.Close()
			return nil, err
		}
	}
	if err := n.soleVoterLost(); err != nil {
		n.Close()
		return nil, err
	}
	n.prop = newProposer(n.raft.Apply, cfg.CommandTimeout, batchInflight, n.stop)
	if n.disk != nil {
		n.prop.noSpace = n.disk.noSpace
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.disk.run(n.stop, n.cfg.Logger, n.cfg.ID)
		}()
	}
	n.prop.start(&n.wg)
	if !hasState && len(cfg.Peers) > 0 {
		if err := n.Bootstrap(cfg.Peers); err != nil {
			n.Close()
			return nil, err
		}
	}
	n.wg.Add(6)
	go n.watchQuorum()
	go n.watchLeadership()
	go n.leaderDuties()
	go n.membershipLoop()
	go n.watchLeaders()
	go n.watchLeaderGone()
	if n.disk != nil {
		n.wg.Add(1)
		go n.watchPeerDisks() // diskquorum.go
	}
	// A cluster id refused while starting (refuseClusterID) is this
	// call's error.
	n.built.Store(true)
	if p := n.cidErr.Load(); p != nil && n.cidStop.CompareAndSwap(false, true) {
		n.Close()
		return nil, *p
	}
	return n, nil
}

// diskStalled is told each time the transport refuses to send because
// this node's log sync is stalled; it logs at most once a second.
func (n *Node) diskStalled(wait time.Duration) {
	now := time.Now().UnixNano()
	last := n.stallWarned.Load()
	if now-last < int64(time.Second) || !n.stallWarned.CompareAndSwap(last, now) {
		return
	}
	n.cfg.Logger.Warn("the log's sync is stalled: not sending to the followers, so that they elect another leader", "waited", wait.Round(time.Millisecond))
}

func (n *Node) closeStores() {
	for _, c := range n.closers {
		c.Close()
	}
	n.closers = nil
}

// Bootstrap makes peers the first configuration of a new cluster. It is a
// no-op on a node that already has state.
func (n *Node) Bootstrap(peers []Peer) error {
	var servers []raft.Server
	for _, p := range peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
	}
	err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if errors.Is(err, raft.ErrNotVoter) {
		ids := make([]string, len(peers))
		for i, p := range peers {
			ids[i] = p.ID
		}
		return fmt.Errorf("cluster: bootstrap: this node's id %q is not one of --peers' (%s): every node of a new cluster is given the same --peers, its own --id among them; a node added to a running cluster uses --join instead", n.cfg.ID, strings.Join(ids, ", "))
	}
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	return nil
}

// SetRESPAddr sets the client address this node publishes (once the
// server listens, when it was started on port 0).
func (n *Node) SetRESPAddr(addr string) {
	n.respAddr.Store(&addr)
	if n.cfg.Network != nil && addr != "" {
		n.cfg.Network.Register(addr, n.cfg.ID)
	}
}

// RESPAddr is the client address this node publishes.
func (n *Node) RESPAddr() string { return *n.respAddr.Load() }

// ID is the node's name.
func (n *Node) ID() string { return n.cfg.ID }

// RaftAddr is the address of the node's Raft transport.
func (n *Node) RaftAddr() string { return string(n.transport.LocalAddr()) }

// IsLeader reports whether this node is the leader and ready to serve.
func (n *Node) IsLeader() bool {
	n.tmu.Lock()
	defer n.tmu.Unlock()
	return n.lead.ready && n.raft.State() == raft.Leader
}

// Close stops the node without handing over leadership.
func (n *Node) Close() error {
	var err error
	n.shutOnce.Do(func() {
		close(n.stop)
		n.wg.Wait()
		err = n.shutdownRaft(n.raft).Error()
		n.fwd.close()
		n.member.close()
		if n.confirm != nil {
			n.confirm.close()
		}
		if n.fread != nil {
			n.fread.close()
		}
		n.transport.Close()
		n.closeStores()
		n.state.Close()
	})
	return err
}

// Shutdown hands leadership to another voter if this node leads, then
// stops it: the graceful path for SIGTERM.
func (n *Node) Shutdown() error {
	if n.raft.State() == raft.Leader {
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.cfg.Logger.Warn("leadership transfer failed", "err", err)
		}
	}
	return n.Close()
}

// LockStats returns this node's lock counters (FSM.LockStats), one entry
// per fsm.LockKind: what it saw happen to locks as it applied the log.
func (n *Node) LockStats() []fsm.LockKindStats {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.LockStats()
}
