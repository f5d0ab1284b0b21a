// Package deadbolt starts a deadbolt node in-process: the embedded single
// node behind the deadbolt command, a member of a Raft cluster, and a test
// double for Go tests (see RunT and RunClusterT).
package deadbolt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/deadbolt/deadbolt/acl"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/httpapi"
	"github.com/deadbolt/deadbolt/server"
	"github.com/deadbolt/deadbolt/tlsconf"
	"github.com/deadbolt/deadbolt/transport"
)

// Config configures a node. The zero value serves 127.0.0.1:6379 from
// memory.
type Config struct {
	Addr        string // RESP address; "127.0.0.1:0" picks a free port
	RequirePass string // the default user's password until ACL changes it
	// ACLFile is an ACL file in Redis's format (--aclfile): its users are
	// the node's until the log sets others, ACL LOAD reads it and ACL SAVE
	// writes it. A file with an error stops Start with the file and line.
	ACLFile string
	// ProtectedMode is Redis's protected-mode: without RequirePass,
	// clients from other than 127.0.0.1 and ::1 are refused. The binary
	// turns it on by default, as Redis does; embedded nodes listen on
	// 127.0.0.1 and leave it off.
	ProtectedMode bool
	MaxClients    int
	MaxBulkLen    int64
	ScriptBudget  int64 // work units one Lua script may use; 0 for the default
	Logger        *slog.Logger
	Version       string
	// Clock is where time comes from; nil means the wall clock. Tests use
	// a *cluster.ManualClock (RunT does) to make TTLs run out at once.
	Clock cluster.Clock
	// MasterName is the name Sentinel clients ask for ("mymaster" if
	// empty); SentinelAddr, if set, is a second listener (such as
	// 127.0.0.1:26379) serving the same commands, for clients that expect
	// Sentinels on a port of their own.
	MasterName   string
	SentinelAddr string

	// Client TLS: TLSAddr, if set, serves TLS clients with TLS's settings
	// (Redis's tls-port; with an empty Addr, the only listener), and
	// TLSSentinelAddr serves the Sentinel commands over TLS.
	TLSAddr         string
	TLSSentinelAddr string
	TLS             tlsconf.Options

	// NotifyKeyspaceEvents, if set, is proposed at start as CONFIG SET
	// notify-keyspace-events would (replicated: it reaches every node).
	NotifyKeyspaceEvents string
	// MaxMemory, if above 0, is proposed at start as CONFIG SET maxmemory
	// would (replicated): the limit on the data's logical size, in bytes
	// (fsm/DESIGN.md, "maxmemory"). 0 leaves the log's value.
	MaxMemory int64

	// Raft. With neither RaftAddr nor DataDir the node is a single
	// in-memory node without a log.
	ID       string // node name; defaults to the RESP address
	RaftAddr string // Raft transport address
	// AnnounceAddr is the client address (host:port) published to the
	// other members and named in discovery replies and redirects, for a
	// node behind NAT or a container's port mapping; "" publishes the
	// listen address (with the Raft address's host when it listens on
	// 0.0.0.0 or ::; deadbolt_announce.go).
	AnnounceAddr      string
	DataDir           string         // log, stable store and snapshots
	Peers             []cluster.Peer // bootstrap configuration
	Join              string         // RESP address of a member to join through
	SnapshotThreshold uint64
	HeartbeatTimeout  time.Duration
	ElectionTimeout   time.Duration
	LeaderLease       time.Duration
	ReadMode          string // see cluster.Config.ReadMode
	CommandTimeout    time.Duration
	DiskStall         time.Duration // see cluster.Config.DiskStall
	MinFreeDisk       int64         // see cluster.Config.MinFreeDisk
	MaxEntryBytes     int64         // see cluster.Config.MaxEntryBytes
	PreserveDowngrade bool          // see cluster.Config.PreserveDowngrade
	RaftLog           io.Writer
	BeforeSync        func() error // test hook: see cluster.Config.BeforeSync
	// OnDiskFailure is called once when a write or fdatasync of the log
	// failed and the node stopped (see cluster.Config.OnDiskFailure).
	OnDiskFailure func(error)
	// ClusterSecret, shared by every member, authenticates each connection
	// between members (transport.SecretAuth) before anything on it is
	// read. Without it a node whose Raft address is not a loopback address
	// refuses to start unless InsecureCluster is set.
	ClusterSecret   []byte
	InsecureCluster bool
	// TLSCluster makes every connection between members mutual TLS
	// (transport.TLSAuth; Redis's tls-cluster): Raft, read-index rounds,
	// members' commands and forwarding, and --join, which then takes a
	// TLS client address. A member presents TLS's certificate and key,
	// or TLSClusterCertFile and TLSClusterKeyFile if set, and accepts only
	// peers whose certificate TLS's CAs signed. With ClusterSecret too, a
	// peer must pass both.
	TLSCluster            bool
	TLSClusterCertFile    string
	TLSClusterKeyFile     string
	TLSClusterKeyFilePass string // TLS.KeyFilePass if empty

	// Shutdown, if set, lets clients stop the node with SHUTDOWN: it is
	// called once when the first such command is accepted, and the
	// program should then call the node's Shutdown (which hands a Raft
	// leader's leadership over first) — from elsewhere, never from within
	// the call, which runs on the node's event loop. The client that sent
	// SHUTDOWN gets no reply; its connection closes when the node stops,
	// as with a Redis that exits. Without it (embedded nodes, RunT)
	// SHUTDOWN answers an error: the program that embeds a node decides
	// when it stops. The deadbolt binary sets it.
	Shutdown func()

	// HTTPAddr, if set, serves /metrics (Prometheus), /healthz, /readyz and
	// the status page (/, /events, /api/status, /api/locks)
	// on this address (package httpapi). It has no authentication: keep it
	// on a private address.
	HTTPAddr string

	// Restore, if set, is a backup (RAFT BACKUP, deadbolt backup) a new
	// cluster starts from: every node bootstrapped with Peers (or a lone
	// node with a DataDir) must be given the same one, and its DataDir
	// must be empty (or started from this same backup before: it then
	// starts from the state it holds). It needs Raft (RaftAddr or DataDir), and not Join: a
	// joining node gets its state from the leader.
	Restore []byte

	// ConfigParams are what CONFIG GET reports for Redis parameters set
	// at start that the server does not apply itself (the binary's
	// loglevel, dir, aclfile, tls-cluster).
	ConfigParams map[string]string

	network     *cluster.Network // RunClusterT's cuttable links
	noBootstrap bool             // RunClusterT bootstraps once all nodes listen
	segmentSize int64            // the log's segment size (tests on small file systems)
}

// Node is a running deadbolt node.
type Node struct {
	srv   *server.Server
	local *cluster.Local // single node without a log
	raft  *cluster.Node  // member of a Raft cluster
	clock *cluster.ManualClock
	done  chan error

	closeOnce sync.Once
	closeErr  error

	disc      *server.Discovery
	memberTLS *transport.TLSAuth // TLSCluster's, reloaded with the client TLS
	// extra are the listeners beside the main one: Sentinel, TLS, TLS
	// Sentinel, by the Config field that names each.
	extra map[string]*extraListener
	http  *httpapi.Endpoint // Config.HTTPAddr's; nil without
}

type extraListener struct {
	ln   net.Listener
	done chan error
}

// Start starts a node and returns once it listens.
func Start(cfg Config) (*Node, error) {
	hub := server.NewHub()
	n := &Node{done: make(chan error, 1)}
	if mc, ok := cfg.Clock.(*cluster.ManualClock); ok {
		n.clock = mc
	}
	tlsLoader, err := loadTLS(&cfg)
	if err != nil {
		return nil, err
	}
	users, err := initialUsers(cfg)
	if err != nil {
		return nil, err
	}
	scfg := server.Config{
		ACLFile:       cfg.ACLFile,
		TLS:           tlsLoader,
		TLSOnly:       cfg.TLSAddr != "" && cfg.Addr == "",
		Addr:          cmp.Or(cfg.Addr, cfg.TLSAddr),
		RequirePass:   cfg.RequirePass,
		ProtectedMode: cfg.ProtectedMode,
		MaxClients:    cfg.MaxClients,
		MaxBulkLen:    cfg.MaxBulkLen,
		Logger:        cfg.Logger,
		Version:       cfg.Version,
		Shutdown:      cfg.Shutdown,
		ConfigParams:  cfg.ConfigParams,
	}
	if err := checkAnnounce(cfg.AnnounceAddr); err != nil {
		return nil, fmt.Errorf("deadbolt: %w", err)
	}
	scfg.AnnounceAddr = cfg.AnnounceAddr
	if cfg.Restore != nil && (cfg.RaftAddr == "" && cfg.DataDir == "" || cfg.Join != "") {
		return nil, errors.New("deadbolt: a restore needs a new cluster member: --data-dir or --raft-addr, without --join (a joining node gets its state from the leader)")
	}
	var backend server.Backend
	if cfg.RaftAddr == "" && cfg.DataDir == "" {
		n.local = cluster.NewLocal(fsm.New(fsm.Options{ScriptBudget: cfg.ScriptBudget, Users: users, Logger: cfg.Logger, Listened: hub.Listened}), cfg.Clock, hub)
		backend = n.local
	} else {
		if cfg.RaftAddr == "" {
			cfg.RaftAddr = "127.0.0.1:0"
		}
		id := cfg.ID
		if id == "" {
			id = cfg.Addr
		}
		peers := cfg.Peers
		if len(peers) == 0 && cfg.Join == "" && !cfg.noBootstrap {
			// A lone node with a data directory: a one-voter cluster.
			peers = []cluster.Peer{{ID: id, RaftAddr: cfg.RaftAddr}}
		}
		var restore []byte
		if len(peers) > 0 {
			restore = cfg.Restore // RunClusterT restores once it knows the peers
		}
		auth, memberTLS, err := peerAuth(cfg)
		if err != nil {
			return nil, err
		}
		n.memberTLS = memberTLS
		var joinConn func(net.Conn) (net.Conn, error)
		if memberTLS != nil {
			joinConn = memberTLS.ClientTLS
		}
		rn, err := cluster.NewNode(cluster.Config{
			ID: id, RaftAddr: cfg.RaftAddr, DataDir: cfg.DataDir, Peers: peers,
			SnapshotThreshold: cfg.SnapshotThreshold, HeartbeatTimeout: cfg.HeartbeatTimeout,
			ElectionTimeout: cfg.ElectionTimeout, LeaderLease: cfg.LeaderLease,
			CommandTimeout: cfg.CommandTimeout, DiskStall: cfg.DiskStall, MinFreeDisk: cfg.MinFreeDisk, MaxEntryBytes: cfg.MaxEntryBytes, PreserveDowngrade: cfg.PreserveDowngrade, SegmentSize: cfg.segmentSize, Clock: cfg.Clock, ScriptBudget: cfg.ScriptBudget, Users: users,
			Logger: cfg.Logger, RaftLog: cfg.RaftLog, Deliver: hub, Password: cfg.RequirePass,
			Network: cfg.network, BeforeSync: cfg.BeforeSync, OnDiskFailure: cfg.OnDiskFailure, PeerAuth: auth, JoinConn: joinConn,
			Restore: restore, ReadMode: cfg.ReadMode,
		})
		if err != nil {
			return nil, err
		}
		n.raft = rn
		backend = rn
		scfg.MaxArgBytes = server.ArgLimit(rn.MaxEntryBytes()) // see server/toolarge.go
		scfg.Info = rn
		scfg.MembersOnly = auth != nil
	}
	n.srv = server.New(scfg, backend, hub)
	if n.raft != nil {
		n.raft.SetMemberServer(n.srv.ServeMember)
	}
	if err := n.srv.Listen(); err != nil {
		n.stopBackend()
		return nil, err
	}
	if n.raft != nil {
		n.raft.SetRESPAddr(announceAddr(cfg.AnnounceAddr, n.srv.Addr().String(), n.raft.RaftAddr()))
		if cfg.Join != "" {
			if err := n.raft.JoinVia(context.Background(), cfg.Join); err != nil {
				n.srv.Close()
				n.stopBackend()
				return nil, err
			}
		}
	}
	n.disc = n.srv.StartDiscovery(server.DiscoveryConfig{MasterName: cfg.MasterName})
	if err := n.listenExtra(cfg, tlsLoader != nil && cfg.Addr != ""); err != nil {
		n.stopDiscovery()
		n.srv.Close()
		n.stopBackend()
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		ep, err := httpapi.Start(httpapi.Config{Addr: cfg.HTTPAddr, Logger: cfg.Logger},
			httpapi.Source{Server: n.srv, Raft: n.raft, Local: n.local})
		if err != nil {
			n.stopDiscovery()
			n.srv.Close()
			n.stopBackend()
			return nil, fmt.Errorf("deadbolt: http-addr: %w", err)
		}
		n.http = ep
	}
	go func() { n.done <- n.srv.Serve() }()
	if cfg.NotifyKeyspaceEvents != "" || cfg.MaxMemory > 0 {
		if err := n.setSettings(cfg); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// stopDiscovery stops the leader watch and the listeners beside the main
// one.
func (n *Node) stopDiscovery() {
	n.disc.Close()
	for _, l := range n.extra {
		l.ln.Close()
		<-l.done
	}
}

// SentinelAddr is the address of the Sentinel listener, "" without one.
func (n *Node) SentinelAddr() string { return n.extraAddr("sentinel") }

func (n *Node) stopBackend() error {
	if n.local != nil {
		return n.local.Close()
	}
	return n.raft.Close()
}

// Addr is the node's RESP address, "host:port".
func (n *Node) Addr() string { return n.srv.Addr().String() }

// Port is the node's RESP port.
func (n *Node) Port() int { return n.srv.Addr().(*net.TCPAddr).Port }

// HTTPAddr is the address of the HTTP endpoint (Config.HTTPAddr), "" without one.
func (n *Node) HTTPAddr() string {
	if n.http == nil {
		return ""
	}
	return n.http.Addr()
}

// Raft is the node's Raft member, or nil for a single node without a log.
func (n *Node) Raft() *cluster.Node { return n.raft }

// Close stops the node at once (a crash, for a cluster member: no
// leadership hand-over). Calls after the first, and after Shutdown, return
// what the first returned.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var herr error
		if n.http != nil {
			herr = n.http.Close()
		}
		n.stopDiscovery()
		err := n.srv.Close()
		err = errors.Join(err, <-n.done)
		n.closeErr = errors.Join(herr, err, n.stopBackend())
	})
	return n.closeErr
}

// Shutdown stops the node gracefully: a leader hands leadership to another
// voter first. The node stops even if the hand-over fails (its error is
// returned): the others elect a leader when this one has gone quiet.
func (n *Node) Shutdown() error {
	var err error
	if n.raft != nil {
		err = n.raft.TransferIfLeader()
	}
	return errors.Join(err, n.Close())
}

// Advance moves the node's clock forward, so that keys whose TTL runs out
// within d expire now, and runs active expiry on a single node. It needs a
// node started by RunT or with a *cluster.ManualClock.
func (n *Node) Advance(d time.Duration) {
	if n.clock == nil {
		panic("deadbolt: Advance needs a node with a ManualClock")
	}
	n.clock.Advance(d)
	if n.local != nil {
		n.local.Expire()
	}
}

// RunT starts an in-memory node on 127.0.0.1 with a free port, for one
// test, and stops it when the test ends. Time is real time, and Advance
// moves it forward.
func RunT(tb testing.TB, opts ...func(*Config)) *Node {
	tb.Helper()
	cfg := Config{Addr: "127.0.0.1:0", Clock: &cluster.ManualClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := Start(cfg)
	if err != nil {
		tb.Fatalf("deadbolt: start: %v", err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Errorf("deadbolt: close: %v", err)
		}
	})
	return n
}

// The drivers answer what the server asks of them.
var (
	_ server.Backend       = (*cluster.Local)(nil)
	_ server.Backend       = (*cluster.Node)(nil)
	_ server.Waiter        = (*cluster.Node)(nil)
	_ server.Saver         = (*cluster.Node)(nil)
	_ server.AppliedWaiter = (*cluster.Node)(nil)
	_ server.InMemory      = (*cluster.Local)(nil)
	_ server.AOFWaiter     = (*cluster.Node)(nil)
	_ server.InfoProvider  = (*cluster.Node)(nil)
	_ server.KeyspaceStats = (*cluster.Node)(nil)
	_ server.KeyspaceStats = (*cluster.Local)(nil)
	_ server.MemberAsker   = (*cluster.Node)(nil)
	_ server.GroupApplier  = (*cluster.Node)(nil)
	_ server.LongReader    = (*cluster.Local)(nil)
)

// initialUsers are the ACL users a node starts with: --requirepass as the
// default user's password, then --aclfile's users, which replace them all
// (a file without the default user gets Redis's: nopass), as Redis loads
// them. Once an ACL change is in the log, the log's users are in force.
func initialUsers(cfg Config) (*acl.Users, error) {
	users := acl.NewUsers().WithDefaultPassword(cfg.RequirePass)
	if cfg.ACLFile == "" {
		return users, nil
	}
	text, err := os.ReadFile(cfg.ACLFile)
	if err != nil {
		return nil, fmt.Errorf("deadbolt: --aclfile: %w", err)
	}
	users, err = acl.ParseFile(cfg.ACLFile, string(text))
	if err != nil {
		// ParseFile's text is ACL LOAD's, as Redis words it; at the
		// start there are no rules in force to keep, and the node
		// does not start.
		msg := strings.TrimSpace(strings.TrimSuffix(err.Error(), acl.LoadRefusedWarning))
		return nil, fmt.Errorf("deadbolt: --aclfile %s: %s (the node does not start)", cfg.ACLFile, msg)
	}
	return users, nil
}
