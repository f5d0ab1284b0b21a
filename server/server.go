package server

import (
	"context"
	"crypto/tls"
	"errors"
	"github.com/deadbolt/deadbolt/acl"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
	"github.com/deadbolt/deadbolt/tlsconf"
)

// Backend applies keyspace commands: directly on a single node, through
// the Raft log in a cluster. An error means the command's outcome is
// unknown to this node; it is sent to the client as an error reply (see
// ReplyError).
type Backend interface {
	Apply(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
	Read(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
	KeyVersion(ctx context.Context, db int, key string) (uint64, error)
}

// ReplyError is an error that knows its Redis error reply, such as
// "TRYAGAIN ..." or "CLUSTERDOWN ...".
type ReplyError interface {
	error
	RedisError() string
}

// Config is a server's configuration. The zero value of each field means
// Redis's default.
type Config struct {
	Addr        string // listen address; "127.0.0.1:6379" if empty
	RequirePass string // password for AUTH; empty means none
	// Users are the ACL users of a backend that holds none itself
	// (UsersReader); nil for the default user with RequirePass.
	Users *acl.Users
	// ACLFile is the file ACL LOAD reads and ACL SAVE writes (--aclfile);
	// "" for none.
	ACLFile        string
	MaxClients     int   // 10000
	MaxBulkLen     int64 // proto-max-bulk-len, 512 MiB
	MaxQueryBuffer int64 // client-query-buffer-limit, 1 GiB
	// MaxArgBytes, if positive, bounds a client's bulk argument: a larger
	// one is dropped as it arrives, never buffered whole, and its request
	// refused (toolarge.go). A cluster node sets it a little above its
	// --max-entry-bytes, since no write with such an argument fits an entry.
	MaxArgBytes int64
	// PubSubOutputLimit closes a subscriber whose unsent output grows past
	// it (client-output-buffer-limit pubsub hard limit, 32 MiB).
	PubSubOutputLimit int
	CommandTimeout    time.Duration // how long a command may wait for the backend; 10 s
	Logger            *slog.Logger
	Version           string // deadbolt's own version, reported by INFO
	// ConfigParams are what CONFIG GET reports for parameters set at
	// start that the server does not apply itself: Redis's (loglevel,
	// dir, aclfile, tls-cluster), until CONFIG SET changes them, and
	// deadbolt's own (the binary's other flags: data-dir, raft-addr, ...),
	// which CONFIG GET shows and CONFIG SET refuses (config_own.go).
	ConfigParams map[string]string
	// AnnounceAddr, if set, is the address a single node (no Raft) names
	// for itself in Sentinel and Cluster replies; a member publishes its
	// own through the log instead (cluster.Node.SetRESPAddr).
	AnnounceAddr string
	// Info adds sections to INFO (replication, cluster); optional.
	Info InfoProvider
	// ProtectedMode is Redis's protected-mode: without a password, clients
	// from other than 127.0.0.1 and ::1 are refused (protected.go).
	ProtectedMode bool
	// MembersOnly: the cluster's members authenticate each other, so the
	// commands only members send are refused on client connections
	// (member.go).
	MembersOnly bool
	// TLS is the client TLS configuration (tls.go); nil without TLS.
	TLS *tlsconf.Loader
	// TLSOnly: Addr serves TLS (deadbolt --tls-addr without --addr).
	TLSOnly bool
	// Shutdown, if set, is called when a client's SHUTDOWN is accepted
	// (once, however many clients send it; cmd_shutdown.go). It must not
	// wait for the server to stop: it runs on the event loop or on a
	// command's goroutine, which Close waits for. The program then stops
	// the server, whose closing closes the connection that sent SHUTDOWN
	// (it gets no reply). Without it SHUTDOWN answers an error.
	Shutdown func()
}

// InfoProvider supplies INFO fields the server cannot know by itself.
type InfoProvider interface {
	// Replication returns the "# Replication" section's lines.
	Replication() []string
	// Role returns the ROLE reply.
	Role() resp.Reply
}

func (c *Config) defaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:6379"
	}
	if c.MaxClients == 0 {
		c.MaxClients = 10000
	}
	if c.MaxBulkLen == 0 {
		c.MaxBulkLen = resp.DefaultMaxBulkLen
	}
	if c.MaxQueryBuffer == 0 {
		c.MaxQueryBuffer = 1 << 30
	}
	if c.PubSubOutputLimit == 0 {
		c.PubSubOutputLimit = 32 << 20
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Version == "" {
		c.Version = "dev"
	}
}

// RedisVersion is the Redis version deadbolt presents itself as (HELLO,
// INFO redis_version): clients pick features by it.
const RedisVersion = "7.0.15"

// Server serves RESP clients.
type Server struct {
	cfg     Config
	backend Backend
	hub     *Hub
	ln      net.Listener
	start   time.Time

	mu      sync.Mutex
	conns   map[uint64]*conn
	closed  bool
	nextID  atomic.Uint64
	wg      sync.WaitGroup
	stats   stats
	runID   string
	lastErr error
	tlsAddr atomic.Value // string: the TLS listener's address (tls-port)

	// loop serves the connections when the backend never waits (see
	// loop_linux.go); started with the first connection.
	loop       *eventLoop
	noLoop     bool
	loopFailed bool

	adm      adminState   // CLIENT, CONFIG, WAIT, SAVE (cmd_admin.go)
	aclLog   aclLog       // ACL LOG (acl_log.go)
	cmdStats commandStats // cmdstats.go
	errStats errorStats
	ops      opsSampler
	slow     slowLog // slowlog.go
}

type stats struct {
	connections atomic.Int64 // total accepted
	rejected    atomic.Int64
	tlsFailures atomic.Int64 // TLS handshakes that failed
	commands    atomic.Int64
}

// New returns a server for backend. The Hub must be the same one the
// backend delivers published messages to.
func New(cfg Config, backend Backend, hub *Hub) *Server {
	cfg.defaults()
	s := &Server{
		cfg:     cfg,
		backend: backend,
		hub:     hub,
		conns:   make(map[uint64]*conn),
		start:   time.Now(),
		runID:   newRunID(),
	}
	s.initAdmin()
	s.slow.records.logger = cfg.Logger
	return s
}

// Listen opens the server's address.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	s.ln = ln
	if s.cfg.TLSOnly {
		s.tlsAddr.Store(ln.Addr().String())
		s.ln = tlsListener{Listener: ln, config: s.cfg.TLS.Config()}
	}
	return nil
}

// Addr is the address the server listens on (after Listen).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve() error {
	var tempDelay time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				time.Sleep(tempDelay)
				continue
			}
			return err
		}
		tempDelay = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
		tc.SetKeepAlivePeriod(5 * time.Minute)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxClients {
		s.mu.Unlock()
		s.refuse(nc, "-ERR max number of clients reached\r\n")
		return
	}
	if s.refusedByProtectedMode(nc.RemoteAddr()) {
		s.mu.Unlock()
		s.refuse(nc, msgProtected)
		return
	}
	lp, fd := s.eventLoopLocked(nc)
	c := newConn(s, nc, s.nextID.Add(1), lp, fd)
	s.conns[c.id] = c
	s.wg.Add(1)
	if lp != nil {
		// Posted under s.mu: Close, which posts the loop's stop under
		// s.mu too, cannot slip in between and strand the connection.
		lp.post(loopTask{kind: taskAdd, c: c})
	}
	s.mu.Unlock()
	s.stats.connections.Add(1)
	if lp != nil {
		return
	}
	go s.serveConn(c)
}

// refuse answers a connection the server does not take with msg and
// closes it. A TLS client gets it after its handshake, as Redis sends it,
// on a goroutine of its own bounded by the handshake's time: never under
// s.mu, where a client that stalls its handshake would stop the server.
func (s *Server) refuse(nc net.Conn, msg string) {
	s.stats.rejected.Add(1)
	if _, ok := nc.(*tls.Conn); !ok {
		nc.Write([]byte(msg))
		nc.Close()
		return
	}
	go func() {
		nc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
		nc.Write([]byte(msg))
		nc.Close()
	}()
}

// serveConn is a connection's goroutine, where the event loop does not
// serve it; s.wg counts it.
func (s *Server) serveConn(c *conn) {
	ok := c.handshake()
	if ok && s.tlsToLoop(c) {
		return // the loop serves it, and forgets it when it closes
	}
	defer s.wg.Done()
	if ok {
		c.serve()
	} else {
		c.nc.Close()
	}
	s.mu.Lock()
	delete(s.conns, c.id)
	s.mu.Unlock()
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.adm.cancel() // ends WAIT and DEBUG SLEEP
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for _, c := range s.conns {
		c.abort()
	}
	if s.loop != nil {
		s.loop.post(loopTask{kind: taskStop})
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// Synchronous is implemented by backends whose methods return without
// waiting for anything but the state machine's own lock (the single
// node). Their connections are served by one event loop where the
// platform has one.
type Synchronous interface {
	Synchronous() bool
}

// AsyncApplier is implemented by backends whose writes wait for
// replication (the cluster node). Their connections are served by the
// event loop too: a write outside MULTI starts with StartApply and its
// connection waits, without a goroutine, for done; every other command of
// theirs, which may wait inside the backend, runs on a goroutine of its
// own while its connection waits.
type AsyncApplier interface {
	// StartApply begins applying cmd and reports whether it could without
	// waiting; if so, done is called exactly once, from another
	// goroutine, with the outcome. cmd's arguments are not used after
	// StartApply returns.
	StartApply(cmd fsm.Command, done func(fsm.Result, error)) bool
}

// GroupApplier is implemented by an AsyncApplier that can commit a
// connection's pipelined writes together (the cluster node): in order,
// each seeing the effect of those before it, with one result each.
type GroupApplier interface {
	// StartApplyGroup begins applying cmds as one group and reports
	// whether it could without waiting; if so, done is called exactly
	// once, from another goroutine, with one result per command or one
	// error for them all. cmds are not used after it returns.
	StartApplyGroup(cmds []fsm.Command, done func([]fsm.Result, error)) bool
	// ApplyGroup applies cmds as one group, waiting.
	ApplyGroup(ctx context.Context, cmds []fsm.Command) ([]fsm.Result, error)
}

// LongReader is implemented by a Synchronous backend that can tell a read
// that takes long (KEYS over a large database): the event loop runs it on
// a goroutine of its own, so that other clients are served meanwhile.
type LongReader interface {
	LongRead(cmd fsm.Command) bool
}

// AsyncReader is implemented by backends whose reads wait (the cluster
// node, for a confirmation of its leadership). A read outside MULTI on
// the event loop starts with StartRead, and its connection waits, without
// a goroutine, for done.
type AsyncReader interface {
	// StartRead begins serving a read-only cmd and reports whether it
	// could without waiting; if so, done is called exactly once, from
	// another goroutine, with the outcome. cmd's arguments stay valid
	// until then (the connection reads no further request meanwhile).
	StartRead(cmd fsm.Command, done func(fsm.Result, error)) bool
}

// eventLoopLocked returns the event loop, starting it the first time,
// and the socket of nc taken over for it; nil without a loop. s.mu held.
func (s *Server) eventLoopLocked(nc net.Conn) (*eventLoop, int) {
	if s.loopLocked() == nil {
		return nil, -1
	}
	fd, err := detach(nc)
	if err != nil {
		return nil, -1
	}
	return s.loop, fd
}

// loopLocked returns the event loop, starting it the first time, or nil
// where connections have goroutines of their own; s.mu is held.
func (s *Server) loopLocked() *eventLoop {
	if s.loop == nil {
		sb, ok := s.backend.(Synchronous)
		ok = ok && sb.Synchronous()
		if _, async := s.backend.(AsyncApplier); async {
			ok = true
		}
		if s.noLoop || s.loopFailed || !ok {
			return nil
		}
		lp, err := newEventLoop(s)
		if err != nil {
			s.cfg.Logger.Warn("server: no event loop; a goroutine per connection instead", "err", err)
			s.loopFailed = true
			return nil
		}
		s.loop = lp
		s.wg.Add(1)
		go lp.run()
	}
	return s.loop
}

// clients returns the open connections ordered by id.
func (s *Server) clients() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		out = append(out, c)
	}
	sortConns(out)
	return out
}
