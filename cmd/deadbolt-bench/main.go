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
package main

import (
	"context"
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
	if err := fs.Parse(args); err != nil {
		return cfg, err
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
	if cfg.duration <= 0 || cfg.runs < 1 || cfg.warmup < 0 {
		return cfg, errors.New("-duration and -runs must be positive, -warmup not negative")
	}
	return cfg, nil
}

// target is one server being measured.
type target struct {
	name, addr, about string
	// inProcess is set when the server runs in this process, whose CPU
	// time then includes the load generator's.
	inProcess bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}

	db := target{name: "deadbolt", addr: cfg.deadboltAddr, about: "external"}
	if db.addr == "" {
		n, err := deadbolt.Start(deadbolt.Config{Addr: "127.0.0.1:0"})
		if err != nil {
			return fmt.Errorf("start deadbolt: %w", err)
		}
		defer n.Close()
		db.addr, db.about, db.inProcess = n.Addr(), "in-process, in memory, "+runtime.Version(), true
	}
	rd := target{name: "redis", addr: cfg.redisAddr, about: "external"}
	if rd.addr == "" {
		addr, stop, err := startRedis(ctx, cfg.redisServer)
		if err != nil {
			return err
		}
		defer stop()
		rd.addr, rd.about = addr, "child process, --save '' --appendonly no"
	}
	if v, err := redisVersion(ctx, rd.addr); err == nil {
		rd.about = "redis " + v + ", " + rd.about
	}
	targets := []target{db, rd}

	fmt.Fprintf(stdout, "op: Redisson lock+unlock pair (EVALSHA lock script, EVALSHA unlock script); each client its own lock name and owner id\n")
	fmt.Fprintf(stdout, "%v per cell after %v warm-up, %d run(s), servers alternating; GOMAXPROCS=%d, %d CPUs\n",
		cfg.duration, cfg.warmup, cfg.runs, runtime.GOMAXPROCS(0), runtime.NumCPU())
	for _, t := range targets {
		fmt.Fprintf(stdout, "%-8s %s (%s)\n", t.name, t.addr, t.about)
	}
	fmt.Fprintln(stdout)

	// results[clients][server] holds one cell per run.
	results := map[int]map[string][]cell{}
	for r := range cfg.runs {
		for i, n := range cfg.clients {
			order := slices.Clone(targets)
			if (r+i)%2 == 1 {
				slices.Reverse(order)
			}
			for _, t := range order {
				c, err := measure(ctx, t, n, cfg)
				if err != nil {
					return fmt.Errorf("%s, %d clients: %w", t.name, n, err)
				}
				fmt.Fprintf(stderr, "run %d/%d  %-8s clients=%-3d %s\n", r+1, cfg.runs, t.name, n, c)
				if results[n] == nil {
					results[n] = map[string][]cell{}
				}
				results[n][t.name] = append(results[n][t.name], c)
			}
		}
	}
	return report(stdout, cfg, results)
}

func report(w io.Writer, cfg config, results map[int]map[string][]cell) error {
	if cfg.runs > 1 {
		fmt.Fprintf(w, "medians of %d runs, each column separately\n", cfg.runs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tclients\tops/s\tp50\tp99\tcpu/op\t")
	ratio := func(a, b float64) string {
		if a == 0 || b == 0 {
			return "-"
		}
		return strconv.FormatFloat(a/b, 'f', 2, 64)
	}
	for _, n := range cfg.clients {
		d := median(results[n]["deadbolt"])
		r := median(results[n]["redis"])
		fmt.Fprintf(tw, "deadbolt\t%d\t%.0f\t%s\t%s\t%s\t\n", n, d.opsPerSec, us(d.p50), us(d.p99), cpu(d.cpuPerOp))
		fmt.Fprintf(tw, "redis\t%d\t%.0f\t%s\t%s\t%s\t\n", n, r.opsPerSec, us(r.p50), us(r.p99), cpu(r.cpuPerOp))
		fmt.Fprintf(tw, "deadbolt/redis\t%d\t%s\t%s\t%s\t%s\t\n", n,
			ratio(d.opsPerSec, r.opsPerSec), ratio(float64(d.p50), float64(r.p50)),
			ratio(float64(d.p99), float64(r.p99)), ratio(float64(d.cpuPerOp), float64(r.cpuPerOp)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "cpu/op: the server process's CPU time (INFO cpu) per pair; - for a server in this process")
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
