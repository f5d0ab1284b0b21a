// Command deadbolt is a lock server that speaks the Redis protocol.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/deadbolt/deadbolt"
	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/internal/gctune"
	"github.com/deadbolt/deadbolt/tlsconf"
	"github.com/deadbolt/deadbolt/transport"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage was printed
		}
		fmt.Fprintln(os.Stderr, errorLine(err))
		os.Exit(1)
	}
}

// errorLine is the process's last word for err: "deadbolt: " and the
// error, once (some of the library's errors start so already).
func errorLine(err error) string {
	if s := err.Error(); strings.HasPrefix(s, "deadbolt: ") {
		return s
	}
	return "deadbolt: " + err.Error()
}

// subcommands are deadbolt's commands other than serving ("deadbolt
// locks ...", "deadbolt backup ..."), each in a file of its own.
var subcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"locks": runLocks,
}

// run parses flags, starts a node and serves until ctx is done; or runs a
// subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if sub, ok := subcommands[args[0]]; ok {
			return sub(ctx, args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("deadbolt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr        = fs.String("addr", "127.0.0.1:6379", "RESP listen address `host:port`")
		requirepass = fs.String("requirepass", "", "require clients to AUTH with this `password` (the default ACL user's)")
		aclfile     = fs.String("aclfile", "", "ACL users from this `file`, in Redis's format (ACL LOAD reads it, ACL SAVE writes it)")
		maxClients  = fs.Int("maxclients", 10000, "maximum number of client connections")
		_           = newChoice(fs, "enable-debug-command", "no", "DEBUG (SLEEP, HELP): no refuses it, as Redis 7.0 does by default; yes allows it; local allows it from 127.0.0.1 and ::1 only", "no", "yes", "local")
		protected   = newChoice(fs, "protected-mode", "yes", "yes: without --requirepass, refuse clients from other than 127.0.0.1 and ::1, as Redis does; no: serve them", "yes", "no")
		maxBulk     = byteSize(512 << 20)
		maxMemory   = byteSize(0)
		_           = newChoice(fs, "maxmemory-policy", "noeviction", "accepted for redis.conf's sake: noeviction is the only policy (deadbolt evicts no key, such as a lock, to make room)", "noeviction")
		logLevel    = newChoice(fs, "log-level", "info", "log level: debug, info, warn, error", "debug", "info", "warn", "error")
		logFormat   = newChoice(fs, "log-format", "text", "log records as text (key=value) or json (one object a line)", "text", "json")
		configFile  = fs.String("config", "", "read directives from this redis.conf-style `file`: each flag is a directive of the same name (\"data-dir /var/lib/deadbolt\"); flags on the command line win")
		id          = fs.String("id", "", "this node's `name` in the cluster (default: the --addr value)")
		raftAddr    = fs.String("raft-addr", "", "Raft transport address `host:port`; with --data-dir or --peers the node runs Raft")
		announce    = fs.String("announce-addr", "", "the client address `host:port` the other members and discovery replies (ROLE, INFO replication, Sentinel, Cluster, redirects) give for this node, behind NAT or a container's port mapping; default: --addr, with --raft-addr's host when --addr listens on 0.0.0.0 or ::")
		dataDir     = fs.String("data-dir", "", "`directory` for the Raft log and snapshots; empty keeps everything in memory")
		peers       = fs.String("peers", "", "bootstrap a new cluster: `id1=raftaddr1,id2=raftaddr2,...` (same value on every node; ignored once --data-dir holds state)")
		join        = fs.String("join", "", "join a running cluster through a member's RESP `host:port`")
		restoreFile = fs.String("restore", "", "start a new cluster from this backup `file` (deadbolt backup): only into an empty --data-dir (one started from this same file starts from what it holds); every node of --peers gets the same file")
		snapEvery   = fs.Uint64("snapshot-threshold", 8192, "log entries between snapshots")
		heartbeat   = fs.Duration("heartbeat-timeout", 500*time.Millisecond, "Raft: how long a follower waits for the leader before an election")
		election    = fs.Duration("election-timeout", 500*time.Millisecond, "Raft: how long a candidate waits before a new election")
		lease       = fs.Duration("leader-lease", 250*time.Millisecond, "Raft: how long a leader stays leader without hearing from a quorum")
		readMode    = fs.String("read-mode", "readindex", "how a leader confirms reads without a log entry: `readindex` (a round to the voters, shared by concurrent reads) or lease (none while heartbeats a quorum accepted are younger than --heartbeat-timeout less 10% for clock drift; every node needs the same --heartbeat-timeout; docs/SAFETY.md)")
		diskStall   = fs.Duration("disk-stall-timeout", time.Second, "Raft: a leader whose own log sync has waited this long stops sending to its followers, so that they elect another (negative: never)")
		maxEntry    = newSizeText(fs, "max-entry-bytes", "1mb", "Raft: refuse a write (any command, MULTI/EXEC and scripts whole) whose log entry would be larger than this `size` (bytes, or with k, kb, m, mb, g, gb), before proposing or forwarding it, so that big values cannot exhaust the members' memory; the same on every node (the leader's decides); 0: no limit (not recommended)")
		minFreeDisk = newSizeText(fs, "min-free-disk", "64mb", "refuse writes (MISCONF) while the --data-dir file system has less free space than this `size` (bytes, or with k, kb, m, mb, g, gb as Redis reads memory sizes), so that the log's housekeeping still has room; 0: only once the disk is full")
		masterName  = fs.String("master-name", "mymaster", "the master `name` Sentinel clients ask for (the Raft leader)")
		sentinelAt  = fs.String("sentinel-addr", "", "also serve on this `host:port` (such as 127.0.0.1:26379), for clients that expect Sentinels on a port of their own")
		secretFile  = fs.String("cluster-secret-file", "", "`file` holding the cluster's shared secret (at least 16 bytes; the same on every member): every connection between members proves it before anything on it is read")
		insecure    = fs.Bool("insecure-cluster", false, "accept Raft connections from whoever can reach --raft-addr, without a cluster secret or TLS (needed for a non-loopback --raft-addr without --cluster-secret-file or --tls-cluster)")
		tlsCluster  = fs.Bool("tls-cluster", false, "TLS between members (Redis's tls-cluster): every connection between members is mutual TLS with --tls-cert-file/--tls-key-file (or --tls-cluster-cert-file/--tls-cluster-key-file), and a member accepts only peers whose certificate --tls-ca-cert-file/--tls-ca-cert-dir signed; --join then takes a member's TLS client address")
		tlsClCert   = fs.String("tls-cluster-cert-file", "", "TLS between members: this member's certificate chain (PEM `file`), presented to the others instead of --tls-cert-file; good for both server and client authentication")
		tlsClKey    = fs.String("tls-cluster-key-file", "", "TLS between members: the key of --tls-cluster-cert-file (PEM `file`, possibly encrypted)")
		tlsClPass   = fs.String("tls-cluster-key-file-pass", "", "TLS between members: the `passphrase` of an encrypted --tls-cluster-key-file (default: --tls-key-file-pass)")
		showVersion = fs.Bool("version", false, "print the version and exit")
		httpAddr    = fs.String("http-addr", "", "serve the status page (/), /metrics (Prometheus), /healthz, /readyz and /api/ over HTTP on `host:port` (default: off); no authentication, so keep it on a private address")
		tlsAddr     = fs.String("tls-addr", "", "also serve TLS clients on `host:port` (Redis's tls-port); with --addr \"\" only TLS")
		tlsSentinel = fs.String("tls-sentinel-addr", "", "serve the Sentinel commands over TLS on `host:port`")
		tlsOpts     tlsconf.Options
		notifyKS    = fs.String("notify-keyspace-events", "", "keyspace notifications' `classes` (Redis's letters, such as KEA or Ex); replicated to every node, like CONFIG SET")
		tlsPrefer   = newChoice(fs, "tls-prefer-server-ciphers", "no", "yes or no; accepted for Redis's sake: Go's TLS picks the cipher suite itself", "yes", "no")
		gcPercent   = fs.Int("gc-percent", 400, "Go garbage collector target, as GOGC (which wins when set): heap growth in `percent` between collections while the live heap is small (see --gc-headroom); higher trades memory for CPU")
		gcHeadroom  = newSizeText(fs, "gc-headroom", "64mb", "once the live heap passes --gc-headroom*100/--gc-percent, lower the collector's target after each collection so that it lets about this `size` of new allocation (down to 25%), and collect after a second without a collection, once quiet (under 1 MB allocated in a quarter second, no long KEYS/SCAN), when garbage is an eighth of the live heap: memory stays near the data with millions of keys; 0: a fixed --gc-percent")
		clockFile   = fs.String("clock-offset-file", "", "test only: add the offset in ms written in this `file` (re-read every 50 ms) to the node's clock, for fault injection")
		stallFile   = fs.String("disk-stall-file", "", "test only: while this `file` exists, every sync of the Raft log waits (a stalled disk, for fault injection)")
		failFile    = fs.String("disk-fail-file", "", "test only: while this `file` exists, every sync of the Raft log fails with EIO (a failing disk, for fault injection)")
	)
	preserveDown := fs.Bool("preserve-downgrade", false, "write only what the builds before 2026-11-26 07:15 read (snapshots without lock shapes), refuse ACL users and new replicated settings, and talk to members of those builds (which send no cluster id): set it on upgraded members while the cluster mixes builds, and while a downgrade must stay possible (docs/OPERATIONS.md, Upgrades)")
	fs.StringVar(&tlsOpts.CertFile, "tls-cert-file", "", "TLS: the server's certificate chain (PEM `file`)")
	fs.StringVar(&tlsOpts.KeyFile, "tls-key-file", "", "TLS: the certificate's private key (PEM `file`; PKCS#8, PKCS#1 or SEC1, possibly encrypted)")
	fs.StringVar(&tlsOpts.KeyFilePass, "tls-key-file-pass", "", "TLS: the `passphrase` of an encrypted --tls-key-file")
	fs.StringVar(&tlsOpts.CACertFile, "tls-ca-cert-file", "", "TLS: CA certificates that sign client certificates (PEM `file`)")
	fs.StringVar(&tlsOpts.CACertDir, "tls-ca-cert-dir", "", "TLS: a `directory` of CA certificate files")
	fs.StringVar(&tlsOpts.AuthClients, "tls-auth-clients", "yes", "TLS: yes (clients must present a certificate the CAs signed), optional (checked if given) or no")
	fs.StringVar(&tlsOpts.Protocols, "tls-protocols", "", "TLS: `versions` to accept, such as \"TLSv1.2 TLSv1.3\" (the default)")
	fs.StringVar(&tlsOpts.Ciphers, "tls-ciphers", "", "TLS 1.2 cipher suites, OpenSSL names separated by colons (default: Go's secure set)")
	fs.StringVar(&tlsOpts.Ciphersuites, "tls-ciphersuites", "", "TLS 1.3 cipher suites, checked (Go always offers its three TLS 1.3 suites)")
	fs.Var(&maxMemory, "maxmemory", "refuse Redis's denyoom commands (SET, HSET, ...: not DEL, EXPIRE or GET) once the data's logical size (INFO memory used_memory_logical, the same on every node) is over this many `bytes` (100mb, as redis.conf writes sizes, works too); 0: no limit. Replicated to every node, like CONFIG SET maxmemory")
	fs.Var(&maxBulk, "proto-max-bulk-len", "largest bulk argument a client may send, in `bytes` (512mb, as redis.conf writes sizes, works too)")
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *configFile != "" {
		cmdline := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { cmdline[f.Name] = true })
		if err := loadConfigFile(fs, *configFile, cmdline); err != nil {
			return err
		}
	}
	if *showVersion {
		fmt.Fprintln(stdout, "deadbolt", version)
		return nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("bad -log-level: %w", err)
	}
	logger := newLogger(stderr, *logFormat, level)
	headroom, err := parseSize(*gcHeadroom)
	if err != nil {
		return fmt.Errorf("--gc-headroom: %w", err)
	}
	if os.Getenv("GOGC") == "" {
		// A lock server's live heap is usually small; collecting less
		// often saves CPU on every request for a few times that memory.
		// A large one (millions of keys) is collected more often so that
		// it does not take several times its data (internal/gctune).
		if headroom > 0 && *gcPercent > 0 {
			defer gctune.Start(gctune.Policy{Max: *gcPercent, Min: min(25, *gcPercent), Headroom: uint64(headroom), Idle: time.Second}).Stop()
		} else {
			debug.SetGCPercent(*gcPercent)
		}
	}

	if *masterName == "" || strings.ContainsAny(*masterName, " \t\r\n") {
		return fmt.Errorf("bad --master-name %q: want a non-empty name without spaces", *masterName)
	}
	peerList, err := parsePeers(*peers)
	if err != nil {
		return err
	}
	if (*peers != "" || *join != "") && (*raftAddr == "" || *id == "") {
		return errors.New("--peers and --join need --id and --raft-addr")
	}
	if *join != "" && *dataDir == "" {
		return errors.New("--join needs --data-dir: a member that keeps nothing on disk would come back empty after a restart and join again under the same id")
	}
	tlsOpts.PreferServerCiphers = *tlsPrefer == "yes"
	if *addr == "" && *tlsAddr == "" {
		return errors.New("--addr \"\" serves no clients without --tls-addr")
	}
	if (*tlsClCert == "") != (*tlsClKey == "") {
		return errors.New("--tls-cluster-cert-file and --tls-cluster-key-file go together")
	}
	if (*tlsClCert != "" || *tlsClPass != "") && !*tlsCluster {
		return errors.New("--tls-cluster-cert-file, --tls-cluster-key-file and --tls-cluster-key-file-pass need --tls-cluster")
	}
	if *tlsCluster && *raftAddr == "" && *dataDir == "" {
		return errors.New("--tls-cluster needs a cluster member: --raft-addr or --data-dir")
	}
	var restore []byte
	if *restoreFile != "" {
		if restore, err = os.ReadFile(*restoreFile); err != nil {
			return fmt.Errorf("--restore: %w", err)
		}
		if _, err := cluster.CheckBackup(restore); err != nil {
			return fmt.Errorf("--restore %s: %w", *restoreFile, err)
		}
	}
	var secret []byte
	if *secretFile != "" {
		if secret, err = transport.LoadSecretFile(*secretFile); err != nil {
			return err
		}
	}
	// A client's SHUTDOWN ends serving as SIGTERM does.
	ctx, stopServing := context.WithCancelCause(ctx)
	defer stopServing(nil)
	var clock cluster.Clock // nil: the wall clock
	if *clockFile != "" {
		clock = watchClockOffset(ctx, *clockFile, logger)
	}
	var beforeSync func() error
	if *stallFile != "" {
		beforeSync = stallWhileExists(ctx, *stallFile, logger)
	}
	if *failFile != "" {
		beforeSync = failWhileExists(*failFile, beforeSync, logger)
	}
	minFree, err := parseSize(*minFreeDisk)
	if err != nil {
		return fmt.Errorf("--min-free-disk: %w", err)
	}
	if minFree == 0 {
		minFree = -1 // no threshold
	}
	maxEntryBytes, err := parseSize(*maxEntry)
	if err != nil {
		return fmt.Errorf("--max-entry-bytes: %w", err)
	}
	if maxEntryBytes == 0 {
		maxEntryBytes = -1 // no limit
	}
	node, err := deadbolt.Start(deadbolt.Config{
		Clock:                 clock,
		BeforeSync:            beforeSync,
		Addr:                  *addr,
		RequirePass:           *requirepass,
		ACLFile:               *aclfile,
		ProtectedMode:         *protected == "yes",
		MaxClients:            *maxClients,
		MaxBulkLen:            int64(maxBulk),
		Logger:                logger,
		Version:               version,
		ID:                    *id,
		RaftAddr:              *raftAddr,
		AnnounceAddr:          *announce,
		DataDir:               *dataDir,
		Peers:                 peerList,
		Join:                  *join,
		SnapshotThreshold:     *snapEvery,
		HeartbeatTimeout:      *heartbeat,
		ElectionTimeout:       *election,
		LeaderLease:           *lease,
		ReadMode:              *readMode,
		DiskStall:             *diskStall,
		MinFreeDisk:           minFree,
		MaxEntryBytes:         maxEntryBytes,
		PreserveDowngrade:     *preserveDown,
		MasterName:            *masterName,
		SentinelAddr:          *sentinelAt,
		TLSAddr:               *tlsAddr,
		TLSSentinelAddr:       *tlsSentinel,
		TLS:                   tlsOpts,
		NotifyKeyspaceEvents:  *notifyKS,
		MaxMemory:             int64(maxMemory),
		ClusterSecret:         secret,
		InsecureCluster:       *insecure,
		TLSCluster:            *tlsCluster,
		TLSClusterCertFile:    *tlsClCert,
		TLSClusterKeyFile:     *tlsClKey,
		TLSClusterKeyFilePass: *tlsClPass,
		Shutdown:              func() { stopServing(errShutdownCommand) },
		// A failed write or sync of the log: the node has stopped; the
		// process exits with the error, which names the file.
		OnDiskFailure: func(err error) { stopServing(&diskFailure{err}) },
		HTTPAddr:      *httpAddr,
		Restore:       restore,
		ConfigParams:  startupParams(fs, *logLevel, *dataDir, *aclfile, *tlsCluster),
	})
	if err != nil {
		return err
	}
	logger.Info("deadbolt ready", "addr", node.Addr(), "sentinel", node.SentinelAddr(), "version", version, "go", runtime.Version(),
		"raft", *raftAddr != "" || *dataDir != "", "id", *id, "raft_addr", *raftAddr, "data_dir", *dataDir, "peers", *peers, "join", *join,
		"members_authenticated", secret != nil || *tlsCluster, "members_tls", *tlsCluster, "read_mode", *readMode)
	if node.HTTPAddr() != "" {
		logger.Info("serving HTTP: the status page at /, /metrics, /healthz, /readyz, /api/status, /api/locks", "http_addr", node.HTTPAddr())
	}
	if node.TLSAddr() != "" || node.TLSSentinelAddr() != "" {
		logger.Info("serving TLS", "tls_addr", node.TLSAddr(), "tls_sentinel", node.TLSSentinelAddr(), "auth_clients", tlsOpts.AuthClients)
	}
	if node.TLSAddr() != "" || node.TLSSentinelAddr() != "" || *tlsCluster {
		go reloadOnHangup(ctx, node, logger)
	}
	<-ctx.Done()
	var df *diskFailure
	if errors.As(context.Cause(ctx), &df) {
		node.Close()
		return df
	}
	if errors.Is(context.Cause(ctx), errShutdownCommand) {
		logger.Info("shutting down: SHUTDOWN from a client")
	} else {
		logger.Info("shutting down")
	}
	// A leader hands over leadership before it stops.
	return node.Shutdown()
}

// errShutdownCommand is why run stops serving when a client sent SHUTDOWN.
var errShutdownCommand = errors.New("a client sent SHUTDOWN")

// diskFailure is why run stops when a write or sync of the log failed.
type diskFailure struct{ err error }

func (d *diskFailure) Error() string {
	if errors.Is(d.err, cluster.ErrNewerEnvelope) {
		return fmt.Sprintf("stopped: %v", d.err) // cluster/upgrade.go
	}
	return fmt.Sprintf("stopped: %v; restart the node: it reads its log again and catches up from the leader", d.err)
}

func (d *diskFailure) Unwrap() error { return d.err }

// failWhileExists makes every sync of the log fail with EIO while path
// exists (test only), after next (the stall hook) if set.
func failWhileExists(path string, next func() error, logger *slog.Logger) func() error {
	return func() error {
		if next != nil {
			if err := next(); err != nil {
				return err
			}
		}
		if _, err := os.Stat(path); err == nil {
			logger.Warn("disk failing: a log sync fails with EIO (test only)", "file", path)
			return syscall.EIO
		}
		return nil
	}
}

// parsePeers parses "id1=addr1,id2=addr2".
func parsePeers(s string) ([]cluster.Peer, error) {
	if s == "" {
		return nil, nil
	}
	var out []cluster.Peer
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("bad --peers entry %q: want id=host:port", part)
		}
		if seen[id] {
			return nil, fmt.Errorf("--peers names %q twice", id)
		}
		seen[id] = true
		out = append(out, cluster.Peer{ID: id, RaftAddr: addr})
	}
	return out, nil
}

// offsetClock is the wall clock plus an offset (test only). time.Time.Add
// moves the monotonic reading too, so elapsed times measured on this clock
// jump with the offset: the worst case, a clock deadbolt cannot tell apart
// from real time passing.
type offsetClock struct{ off atomic.Int64 } // nanoseconds

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// watchClockOffset returns a clock whose offset follows the integer (ms) in
// path, re-read every 50 ms; a missing or malformed file means no change.
func watchClockOffset(ctx context.Context, path string, logger *slog.Logger) *offsetClock {
	c := &offsetClock{}
	read := func() {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return
		}
		if old := c.off.Swap(ms * int64(time.Millisecond)); old != ms*int64(time.Millisecond) {
			logger.Warn("clock offset changed (test only)", "offset_ms", ms, "was_ms", old/int64(time.Millisecond))
		}
	}
	read()
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return c
}

// stallWhileExists returns a hook that holds each sync of the log while
// path exists (test only), polling every 20 ms; it lets go when ctx ends.
func stallWhileExists(ctx context.Context, path string, logger *slog.Logger) func() error {
	return func() error {
		for waited := false; ; waited = true {
			if _, err := os.Stat(path); err != nil {
				if waited {
					logger.Warn("disk stall over (test only)")
				}
				return nil
			}
			if !waited {
				logger.Warn("disk stalled: log syncs wait (test only)", "file", path)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// usage prints what deadbolt is, examples, and the flags, the test-only
// ones apart.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, `deadbolt: a lock server that speaks the Redis protocol, replicated with Raft.

Examples:
  deadbolt                                   a single node on 127.0.0.1:6379, in memory
  deadbolt --data-dir /var/lib/deadbolt      a single node that keeps its data on disk
  deadbolt --id n1 --addr 10.0.0.1:6379 --raft-addr 10.0.0.1:7000 \
           --data-dir /var/lib/deadbolt --cluster-secret-file /etc/deadbolt/secret \
           --peers n1=10.0.0.1:7000,n2=10.0.0.2:7000,n3=10.0.0.3:7000 \
           --requirepass PASSWORD              one member of a three-node cluster
  deadbolt --id n4 ... --join 10.0.0.1:6379    a new member, through any member's client port
  deadbolt backup --addr 10.0.0.1:6379 --out deadbolt.backup
                                             a backup of the cluster's state (RAFT BACKUP)
  deadbolt --id n1 ... --peers ... --restore deadbolt.backup
                                             a new cluster that starts from it (the same file
                                             on every node, empty data directories)
  deadbolt --config /etc/deadbolt/deadbolt.conf
                                             flags as redis.conf-style directives
  deadbolt --id n1 ... --tls-cluster --tls-addr 10.0.0.1:6380 --tls-cert-file n1.crt \
           --tls-key-file n1.key --tls-ca-cert-file ca.crt
                                             members speak mutual TLS to each other (and a
                                             new member's --join takes a --tls-addr)
  deadbolt locks --addr 10.0.0.2:6379        list the locks held (any member; --help for its flags)

Flags:
`)
	var testOnly []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, "test only:") {
			testOnly = append(testOnly, f)
			return
		}
		printFlag(w, f)
	})
	fmt.Fprintln(w, "\nFor fault-injection tests only:")
	for _, f := range testOnly {
		printFlag(w, f)
	}
}

func printFlag(w io.Writer, f *flag.Flag) {
	name, text := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if name != "" {
		line += " " + name
	}
	fmt.Fprintln(w, line)
	if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
		text += " (default " + f.DefValue + ")"
	}
	fmt.Fprintln(w, "    \t"+text)
}

// reloadOnHangup reloads the TLS certificates on every SIGHUP, as after a
// renewal; a failed reload keeps the ones in force.
func reloadOnHangup(ctx context.Context, node *deadbolt.Node, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := node.ReloadTLS(); err != nil {
				logger.Error("TLS reload failed; the certificates in force stay", "err", err)
			} else {
				logger.Info("TLS certificates reloaded")
			}
		}
	}
}

// parseSize reads a size as Redis reads memory sizes in its configuration:
// a number of bytes, or with a unit: k, m, g (powers of 1000) or kb, mb,
// gb (powers of 1024), in any case.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}}
	num, mult := strings.ToLower(strings.TrimSpace(s)), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size (bytes, or a number with k, kb, m, mb, g or gb)", s)
	}
	return n * mult, nil
}
