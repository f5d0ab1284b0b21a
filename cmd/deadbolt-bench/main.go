// Command deadbolt-bench measures Redisson's lock+unlock pair against
// deadbolt and redis-server on the same machine in the same run.
//
// One operation is the pair a Redisson client sends for lock() then
// unlock(): EVALSHA of the lock script, then EVALSHA of the unlock script
// (which publishes to redisson_lock__channel:{name}). Each client has its
// own lock name and owner id, so every lock call succeeds: this measures
// the server's cost per script, not waiting for a contended lock.
//
// By default it starts deadbolt in-process (in memory, single node) and a
// redis-server without persistence, both on loopback. -deadbolt-addr and
// -redis-addr measure servers that are already running instead.
//
// With -cluster it measures the replicated systems instead (cluster.go):
// three bin/deadbolt processes in one Raft cluster with data on disk, one
// bin/deadbolt process alone with its data on disk (the cluster's bound
// on the same machine), redis-server with appendfsync always, and a
// three-member etcd cluster
// locked with client/v3/concurrency, and reports p99 acquire latency and
// the ratios that issue 3's targets are stated in.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/deadbolt/deadbolt"
	"github.com/deadbolt/deadbolt/tlsconf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "deadbolt-bench:", err)
		}
		os.Exit(1)
	}
}

type config struct {
	duration     time.Duration
	warmup       time.Duration
	clients      []int
	runs         int
	lease        time.Duration
	deadboltAddr string
	redisAddr    string
	redisServer  string
	tls          bool // also over TLS (RESP3)
	fcall        bool // also the pair as FCALL of a function library

	cluster     bool     // the replicated table instead of the single-node one
	systems     []string // with cluster: which of deadbolt, redis, etcd
	deadboltBin string
	etcdBin     string
	workDir     string
	memberProcs int

	pipeline      bool          // the pipeline table instead (pipeline.go)
	pipelineDepth int           // commands per pipeline
	baseBin       string        // with pipeline: another build to compare with
	longRead      bool          // the PING-during-KEYS/SCAN table instead (pipeline.go)
	keys          int           // with longRead: keys in the database
	longSystems   []string      // with longRead: which of memory, 3node, redis
	memory        bool          // the memory table instead (memory.go)
	memLocks      []int         // numbers of locks to load
	memLease      time.Duration // their lease
	memSettle     time.Duration // wait after the load before reading memory
	memRestart    int           // locks for the restart measurement (0: none)
	memArgs       []string      // extra bin/deadbolt arguments
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("deadbolt-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg     config
		clients string
	)
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "how long to measure each (server, clients) cell")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load before each cell")
	fs.StringVar(&clients, "clients", "1,16,64", "comma-separated numbers of concurrent clients")
	fs.IntVar(&cfg.runs, "runs", 1, "repeat the whole table this many times and report medians")
	fs.DurationVar(&cfg.lease, "lease", 30*time.Second, "lock lease sent to the lock script")
	fs.StringVar(&cfg.deadboltAddr, "deadbolt-addr", "", "measure the deadbolt at `host:port` instead of starting one in-process")
	fs.StringVar(&cfg.redisAddr, "redis-addr", "", "measure the redis-server at `host:port` instead of starting one")
	fs.StringVar(&cfg.redisServer, "redis-server", "redis-server", "redis-server `binary` to start")
	fs.BoolVar(&cfg.fcall, "fcall", false, "also measure the pair as FCALL of the scripts loaded as a function library (RESP3), on both servers")
	fs.BoolVar(&cfg.tls, "tls", false, "also measure both servers over TLS (RESP3, no client certificate), each started with a TLS port of its own (not with -deadbolt-addr or -redis-addr)")
	fs.BoolVar(&cfg.cluster, "cluster", false, "measure a three-node deadbolt cluster (bin/deadbolt processes, data on disk), a single bin/deadbolt with its data on disk, redis-server with appendfsync always and a three-member etcd cluster instead")
	systems := fs.String("systems", "deadbolt,deadbolt1,redis,etcd", "with -cluster: comma-separated systems to measure (deadbolt1: a single node with its data on disk; deadbolt-tls: the three nodes with --tls-cluster; deadbolt-secret: with --cluster-secret-file; deadbolt-lease: with --read-mode lease)")
	fs.StringVar(&cfg.deadboltBin, "deadbolt-bin", "bin/deadbolt", "with -cluster: deadbolt `binary` to start")
	fs.StringVar(&cfg.etcdBin, "etcd", "etcd", "with -cluster: etcd `binary` to start (Debian etcd-server)")
	fs.IntVar(&cfg.memberProcs, "member-procs", 1, "with -cluster: GOMAXPROCS of each deadbolt node and etcd member (0: Go's default, one per core); three members share this machine's cores, and with one each their runtimes do not spin for cores the others are using")
	fs.StringVar(&cfg.workDir, "work-dir", "", "with -cluster: `directory` under which the servers' data directories are made (default: $TMPDIR); it must be on a real disk for the fsync figures to mean anything")
	fs.BoolVar(&cfg.pipeline, "pipeline", false, "measure pipelines of SETs on one connection instead: a three-node cluster of -deadbolt-bin (leader and follower), of -base-bin if set, and redis-server")
	fs.IntVar(&cfg.pipelineDepth, "pipeline-depth", 1000, "with -pipeline: commands per pipeline")
	fs.StringVar(&cfg.baseBin, "base-bin", "", "with -pipeline: another deadbolt `binary` (say, a build of main) measured the same way, as the reference")
	fs.BoolVar(&cfg.longRead, "longread", false, "measure instead another client's PING latency during KEYS * and a full SCAN over -keys keys: one in-memory bin/deadbolt, a three-node cluster's leader, redis-server")
	fs.IntVar(&cfg.keys, "keys", 1_000_000, "with -longread: keys in the database")
	longSystems := fs.String("longread-systems", "memory,3node,redis", "with -longread: comma-separated systems to measure (memory: one in-memory bin/deadbolt; 3node: the leader of three; redis: redis-server)")
	fs.BoolVar(&cfg.memory, "memory", false, "measure memory instead: Redisson lock hashes loaded into bin/deadbolt (a single node in memory) and redis-server, then RSS and INFO used_memory of each")
	memLocks := fs.String("memory-locks", "500000", "with -memory: comma-separated numbers of locks")
	fs.DurationVar(&cfg.memLease, "memory-lease", 10*time.Minute, "with -memory: the locks' lease (PEXPIRE)")
	fs.DurationVar(&cfg.memSettle, "memory-settle", 2*time.Second, "with -memory: wait this long after the load before reading memory")
	fs.IntVar(&cfg.memRestart, "memory-restart", 0, "with -memory: also time the restart of a single node with its data on disk holding this many locks, from its snapshot (0: no)")
	memArgs := fs.String("deadbolt-args", "", "with -memory: extra space-separated bin/deadbolt arguments (such as --gc-percent 100)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.pipelineDepth < 1 || cfg.keys < 1 {
		return cfg, errors.New("-pipeline-depth and -keys must be positive")
	}
	cfg.memArgs = strings.Fields(*memArgs)
	for f := range strings.SplitSeq(*memLocks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("-memory-locks: %q is not a positive number", f)
		}
		cfg.memLocks = append(cfg.memLocks, n)
	}
	for f := range strings.SplitSeq(*systems, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains([]string{"deadbolt", "deadbolt1", "deadbolt-tls", "deadbolt-secret", "deadbolt-lease", "redis", "etcd"}, f) {
			return cfg, fmt.Errorf("-systems: %q is not deadbolt, deadbolt1, deadbolt-tls, deadbolt-secret, deadbolt-lease, redis or etcd", f)
		}
		cfg.systems = append(cfg.systems, f)
	}
	for f := range strings.SplitSeq(*longSystems, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains([]string{"memory", "3node", "redis"}, f) {
			return cfg, fmt.Errorf("-longread-systems: %q is not memory, 3node or redis", f)
		}
		cfg.longSystems = append(cfg.longSystems, f)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for f := range strings.SplitSeq(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("-clients: %q is not a positive number", f)
		}
		cfg.clients = append(cfg.clients, n)
	}
	if cfg.memberProcs < 0 {
		return cfg, errors.New("-member-procs must not be negative")
	}
	if cfg.duration <= 0 || cfg.runs < 1 || cfg.warmup < 0 {
		return cfg, errors.New("-duration and -runs must be positive, -warmup not negative")
	}
	return cfg, nil
}

// target is one server being measured.
type target struct {
	name, addr, about string
	// proto is the RESP version the clients speak: 2, 3, or 0 for
	// go-redis's default (HELLO 3).
	proto int
	// tls, when set, is the clients' TLS configuration.
	tls *tls.Config
	// fcall: the pair as FCALL of a function library instead of EVALSHA.
	fcall bool
	// inProcess is set when the server runs in this process, whose CPU
	// time then includes the load generator's.
	inProcess bool
	// pids, when set, are the server processes whose CPU time (from
	// /proc) counts for cpu/op instead of INFO cpu.
	pids []int
	// leader, when set, finds the address to measure before each cell
	// (the cluster's leader, which may have changed).
	leader func(ctx context.Context) (string, error)
	// members, for a deadbolt cluster, are its members' RESP addresses
	// (leader changes are counted on them: stability.go).
	members []string
	// measure measures the target; nil means the Redisson scripts.
	measure func(ctx context.Context, t target, clients int, cfg config) (cell, error)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.pipeline {
		return runPipeline(ctx, cfg, stdout, stderr)
	}
	if cfg.longRead {
		return runLongRead(ctx, cfg, stdout, stderr)
	}
	if cfg.cluster {
		return runCluster(ctx, cfg, stdout, stderr)
	}
	if cfg.memory {
		return runMemory(ctx, cfg, stdout, stderr)
	}

	if cfg.tls && (cfg.deadboltAddr != "" || cfg.redisAddr != "") {
		return errors.New("-tls starts both servers itself: leave out -deadbolt-addr and -redis-addr")
	}
	var certFile, keyFile string
	var trust *tls.Config
	if cfg.tls {
		dir, err := os.MkdirTemp("", "deadbolt-bench-tls-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if certFile, keyFile, trust, err = benchCert(dir); err != nil {
			return err
		}
	}
	db := target{name: "deadbolt", addr: cfg.deadboltAddr, about: "external"}
	dbTLS := ""
	if db.addr == "" {
		dc := deadbolt.Config{Addr: "127.0.0.1:0"}
		if cfg.tls {
			dc.TLSAddr = "127.0.0.1:0"
			dc.TLS = tlsconf.Options{CertFile: certFile, KeyFile: keyFile, AuthClients: "no"}
		}
		n, err := deadbolt.Start(dc)
		if err != nil {
			return fmt.Errorf("start deadbolt: %w", err)
		}
		defer n.Close()
		db.addr, db.about, db.inProcess, dbTLS = n.Addr(), "in-process, in memory, "+runtime.Version(), true, n.TLSAddr()
	}
	rd := target{name: "redis", addr: cfg.redisAddr, about: "external"}
	rdTLS := ""
	if rd.addr == "" {
		args := redisNoPersistence
		if cfg.tls {
			port, err := freeLoopbackPort()
			if err != nil {
				return err
			}
			rdTLS = "127.0.0.1:" + strconv.Itoa(port)
			args = append(slices.Clone(args), "--tls-port", strconv.Itoa(port), "--tls-cert-file", certFile,
				"--tls-key-file", keyFile, "--tls-auth-clients", "no")
		}
		addr, stop, err := startRedis(ctx, cfg.redisServer, args)
		if err != nil {
			return err
		}
		defer stop()
		rd.addr, rd.about = addr, "child process, --save '' --appendonly no"
	}
	if v, err := redisVersion(ctx, rd.addr); err == nil {
		rd.about = "redis " + v + ", " + rd.about
	}
	// Each server over RESP2 (as Redisson and redis-py speak) and over
	// RESP3 (go-redis v9, ioredis 6, Lettuce).
	var targets []target
	for _, t := range []target{db, rd} {
		for _, proto := range []int{2, 3} {
			v := t
			v.proto, v.name = proto, fmt.Sprintf("%s-resp%d", t.name, proto)
			targets = append(targets, v)
		}
	}
	if cfg.fcall {
		for i := range 2 {
			v := targets[2*i+1] // the same server over RESP3
			v.name, v.fcall = strings.TrimSuffix(v.name, "-resp3")+"-fcall", true
			targets = append(targets, v)
		}
	}
	if cfg.tls {
		for i, a := range []string{dbTLS, rdTLS} {
			v := targets[2*i+1] // the same server over RESP3
			v.name, v.addr, v.tls = strings.TrimSuffix(v.name, "-resp3")+"-tls", a, trust
			targets = append(targets, v)
		}
	}

	fmt.Fprintf(stdout, "op: Redisson lock+unlock pair (EVALSHA lock script, EVALSHA unlock script); each client its own lock name and owner id\n")
	fmt.Fprintf(stdout, "%v per cell after %v warm-up, %d run(s), servers alternating; GOMAXPROCS=%d, %d CPUs\n",
		cfg.duration, cfg.warmup, cfg.runs, runtime.GOMAXPROCS(0), runtime.NumCPU())
	for _, t := range targets {
		fmt.Fprintf(stdout, "%-8s %s (%s)\n", t.name, t.addr, t.about)
	}
	fmt.Fprintln(stdout)

	results, err := measureAll(ctx, cfg, targets, stderr)
	if err != nil {
		return err
	}
	return report(stdout, cfg, results)
}

// measureAll measures every target with every number of clients, cfg.runs
// times, rotating the targets' order from one cell to the next and from
// one run to the next. results[clients][target] holds one cell per run.
func measureAll(ctx context.Context, cfg config, targets []target, stderr io.Writer) (map[int]map[string][]cell, error) {
	results := map[int]map[string][]cell{}
	leaders := map[string]string{} // the last leader address seen, by target
	for r := range cfg.runs {
		for i, n := range cfg.clients {
			order := slices.Clone(targets)
			k := (r + i) % len(order)
			order = append(order[k:], order[:k]...)
			for _, t := range order {
				if t.leader != nil {
					addr, err := t.leader(ctx)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", t.name, err)
					}
					if was := cmp.Or(leaders[t.name], t.addr); addr != was {
						fmt.Fprintf(stderr, "%s: leader moved from %s to %s\n", t.name, was, addr)
					}
					t.addr, leaders[t.name] = addr, addr
				}
				m := t.measure
				if m == nil {
					m = measure
				}
				c, err := m(ctx, t, n, cfg)
				if err != nil {
					return nil, fmt.Errorf("%s, %d clients: %w", t.name, n, err)
				}
				fmt.Fprintf(stderr, "run %d/%d  %-16s clients=%-3d %s\n", r+1, cfg.runs, t.name, n, c)
				if c.firstFail != nil {
					fmt.Fprintf(stderr, "  failures: %v\n", c.firstFail)
				}
				if results[n] == nil {
					results[n] = map[string][]cell{}
				}
				results[n][t.name] = append(results[n][t.name], c)
			}
		}
	}
	return results, nil
}

func report(w io.Writer, cfg config, results map[int]map[string][]cell) error {
	if cfg.runs > 1 {
		fmt.Fprintf(w, "medians of %d runs, each column separately\n", cfg.runs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tresp\tclients\tops/s\tp50\tp99\tcpu/op\t")
	variants := []string{"2", "3"}
	if cfg.tls {
		variants = append(variants, "tls")
	}
	if cfg.fcall {
		variants = append(variants, "fcall")
	}
	key := func(server, v string) string {
		if v == "tls" || v == "fcall" {
			return server + "-" + v
		}
		return server + "-resp" + v
	}
	row := func(name, proto string, n int, a, b cell) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", name, proto, n,
			ratio(a.opsPerSec, b.opsPerSec), ratio(float64(a.p50), float64(b.p50)),
			ratio(float64(a.p99), float64(b.p99)), ratio(float64(a.cpuPerOp), float64(b.cpuPerOp)))
	}
	for _, n := range cfg.clients {
		d, r := map[string]cell{}, map[string]cell{}
		for _, v := range variants {
			d[v], r[v] = median(results[n][key("deadbolt", v)]), median(results[n][key("redis", v)])
			for _, s := range []struct {
				name string
				c    cell
			}{{"deadbolt", d[v]}, {"redis", r[v]}} {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t\n", s.name, v, n, s.c.opsPerSec, us(s.c.p50), us(s.c.p99), cpu(s.c.cpuPerOp))
			}
		}
		for _, v := range variants {
			row("deadbolt/redis", v, n, d[v], r[v])
		}
		row("deadbolt", "3/2", n, d["3"], d["2"])
		if cfg.tls {
			row("deadbolt", "tls/3", n, d["tls"], d["3"])
		}
		if cfg.fcall {
			row("deadbolt", "fcall/3", n, d["fcall"], d["3"])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "cpu/op: the server process's CPU time (INFO cpu) per pair; - for a server in this process")
	fmt.Fprintln(w, "resp 3/2: deadbolt over RESP3 against deadbolt over RESP2; tls: RESP3 over TLS; tls/3: deadbolt over TLS against deadbolt over plain RESP3; fcall: the pair as FCALL (RESP3); fcall/3: FCALL against EVALSHA on deadbolt")
	for _, n := range cfg.clients {
		for server, cells := range results[n] {
			if f := median(cells).failed; f > 0 {
				fmt.Fprintf(w, "%s, %d clients: a median of %d pairs failed (left out of the figures; stderr has the errors)\n", server, n, f)
			}
		}
	}
	return nil
}

// cpu formats a server CPU time per operation, "-" if unknown.
func cpu(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return us(d)
}

// us formats a latency in microseconds.
func us(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
}
