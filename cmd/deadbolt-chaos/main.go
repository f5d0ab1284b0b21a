// Command deadbolt-chaos is a Jepsen-style fault-injection test of
// deadbolt: it runs N real deadbolt processes, each on a host of its own
// (a network namespace), drives ten clients doing Redisson-style locking,
// a register and a list through EVAL and MULTI/EXEC, and injects faults
// (kills, pauses, partitions, leader clock jumps, a leader's stalled disk,
// membership changes, snapshots, restarts, full disks on a tmpfs per node,
// failing log syncs, damaged files) alone and together. After healing it checks
// linearizability (porcupine), mutual exclusion, that nothing acknowledged
// was lost, that every node's state is the same, and that no node logged
// a panic or a race; it exits 1 on any violation. With --target redis it
// runs the lock workload against redis-server with a replica and three
// Sentinels instead, and reports how often two clients held one lock;
// given disk nemeses (--nemesis disk-full,corrupt-file,disk-eio), both
// servers keep an AOF on a tmpfs of their own (with disk-eio, through a
// FUSE loopback) and those faults hit the primary.
//
// It needs root (network namespaces) and iproute2. Run it as
// `make chaos` (DURATION=30m for a long run).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

type config struct {
	bin, out, target  string
	oldBin            string
	nodes, clients    int
	readers           int
	locks             int
	duration, quiet   time.Duration
	lease, maxHold    time.Duration
	opTimeout         time.Duration
	keyEpoch          time.Duration
	keysPerEpoch      int
	checkTimeout      time.Duration
	seed              int64
	snapshotThreshold int
	nodeFlags         string
	only              string
	limit             time.Duration
	insecure          bool
	tlsCluster        bool
	dataTmpfs         int64
	redisFsync        string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	redis.SetLogger(quietLogger{}) // dial failures are expected: nodes are down on purpose
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "deadbolt-chaos:", err)
		if code == 0 {
			code = 2
		}
	}
	os.Exit(code)
}

func parse(args []string, stderr io.Writer) (config, string, error) {
	fs := flag.NewFlagSet("deadbolt-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.bin, "bin", "bin/deadbolt-race", "deadbolt `binary` to test (build it with -race to catch races)")
	fs.StringVar(&c.target, "target", "deadbolt", "what to test: deadbolt, or redis (redis-server + replica + 3 redis-sentinel)")
	fs.StringVar(&c.out, "out", "", "`directory` for logs, data and the history (default: a new directory under $TMPDIR)")
	fs.IntVar(&c.nodes, "nodes", 3, "deadbolt nodes (3 or 5)")
	fs.IntVar(&c.clients, "clients", 10, "concurrent clients")
	fs.IntVar(&c.readers, "readers", 3, "further clients that mostly read registers (nine operations in ten), besides --clients")
	fs.IntVar(&c.locks, "locks", 3, "hot locks")
	fs.DurationVar(&c.duration, "duration", 2*time.Minute, "how long faults are injected")
	fs.DurationVar(&c.quiet, "quiet", 5*time.Second, "after healing: how long the clients go on without faults before the final reads")
	fs.DurationVar(&c.lease, "lease", 3*time.Second, "lock lease (PEXPIRE of the lock)")
	fs.DurationVar(&c.maxHold, "max-hold", 4*time.Second, "longest a holder keeps a lock (renewing it)")
	fs.DurationVar(&c.opTimeout, "op-timeout", 2*time.Second, "client timeout per operation (a timeout is indeterminate)")
	fs.DurationVar(&c.keyEpoch, "key-epoch", 5*time.Second, "register and list keys change this often (keeps each key's history checkable)")
	fs.IntVar(&c.keysPerEpoch, "keys", 2, "register and list keys in use at once, each")
	fs.DurationVar(&c.checkTimeout, "check-timeout", 2*time.Minute, "time limit of each linearizability check (beyond it: unknown, not a violation)")
	fs.Int64Var(&c.seed, "seed", 0, "random seed (0: from the clock); the schedule of faults follows it")
	fs.IntVar(&c.snapshotThreshold, "snapshot-threshold", 64, "nodes' --snapshot-threshold: small, so snapshots happen all the time")
	fs.StringVar(&c.nodeFlags, "node-flags", "", "extra flags for every deadbolt node, space separated")
	fs.StringVar(&c.only, "nemesis", "", "comma-separated nemeses to use instead of the full schedule (see -list)")
	fs.DurationVar(&c.limit, "limit", 0, "give up (exit 2, after a goroutine dump) if the whole run takes longer (0: duration + 2 × check-timeout + 5m)")
	fs.BoolVar(&c.insecure, "insecure-cluster", false, "start the nodes with --insecure-cluster instead of a cluster secret (the hostile-peer nemesis then shows what a stranger can do)")
	fs.BoolVar(&c.tlsCluster, "tls-cluster", false, "start the nodes with --tls-cluster (mutual TLS between members, certificates made for the run) instead of a cluster secret; joins go to the members' TLS client port")
	fs.StringVar(&c.oldBin, "old-bin", "", "an older deadbolt `binary`: the upgrade nemesis swaps nodes between it and --bin (without it, no upgrade nemesis)")
	tmpfsMB := fs.Int64("data-tmpfs", 256, "each node's data directory on a tmpfs of its own of this many `MiB`, which the disk-full nemeses fill (0: on the output directory's file system; those nemeses then do nothing)")
	fs.StringVar(&c.redisFsync, "redis-appendfsync", "always", "with --target redis and a disk nemesis: the servers' AOF appendfsync (always, everysec, no)")
	list := fs.Bool("list", false, "list the nemeses and exit")
	inner := fs.String("inner-lab", "", "internal: run inside the lab namespace with this prefix")
	if err := fs.Parse(args); err != nil {
		return c, "", err
	}
	if err := setupUpgrade(c.oldBin); err != nil {
		return c, "", err
	}
	if *list {
		for _, n := range nemeses {
			fmt.Fprintf(stderr, "%-28s %s  [%s]\n", n.name, n.what, n.class)
		}
		return c, "", flag.ErrHelp
	}
	if c.nodes < 3 || c.nodes > 9 {
		return c, "", errors.New("--nodes: 3 to 9")
	}
	c.dataTmpfs = *tmpfsMB << 20
	if c.seed == 0 {
		c.seed = time.Now().UnixNano()
	}
	if c.limit == 0 {
		c.limit = c.duration + 2*c.checkTimeout + 5*time.Minute
	}
	for _, name := range splitList(c.only) {
		if _, ok := nemesisByName(name); !ok {
			return c, "", fmt.Errorf("unknown nemesis %q (see -list)", name)
		}
	}
	return c, *inner, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// run: outside the lab it builds the namespaces and runs itself inside
// them; inside, it runs the test.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	cfg, inner, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0, nil
	}
	if err != nil {
		return 2, err
	}
	if inner != "" {
		hosts := cfg.nodes
		if cfg.target == "redis" {
			hosts = 3
		}
		l := &lab{prefix: inner, hosts: hosts, cuts: map[[2]int]bool{}}
		if cfg.target == "redis" {
			return runRedis(ctx, cfg, l, stdout)
		}
		return runDeadbolt(ctx, cfg, l, stdout)
	}
	if os.Geteuid() != 0 {
		return 2, errors.New("needs root: it puts every node in a network namespace of its own")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return 2, errors.New("needs iproute2 (ip)")
	}
	if cfg.target == "deadbolt" {
		if _, err := os.Stat(cfg.bin); err != nil {
			return 2, fmt.Errorf("--bin: %w (make chaos builds it)", err)
		}
		if cfg.bin, err = filepath.Abs(cfg.bin); err != nil {
			return 2, err
		}
	}
	madeOut := cfg.out == ""
	if madeOut {
		if cfg.out, err = os.MkdirTemp("", "deadbolt-chaos-"); err != nil {
			return 2, err
		}
	} else if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return 2, err
	}
	if cfg.out, err = filepath.Abs(cfg.out); err != nil {
		return 2, err
	}
	removeStaleLabs()
	hosts := cfg.nodes
	if cfg.target == "redis" {
		hosts = 3
	}
	l := &lab{prefix: fmt.Sprintf("dbc%d", os.Getpid()), hosts: hosts}
	if err := l.setup(); err != nil {
		return 2, fmt.Errorf("network namespaces: %w", err)
	}
	defer l.teardown()
	self, err := os.Executable()
	if err != nil {
		return 2, err
	}
	inArgs := append([]string{"netns", "exec", l.labNS(), self}, args...)
	inArgs = append(inArgs, "--inner-lab", l.prefix, "--out", cfg.out, "--bin", cfg.bin, "--seed", fmt.Sprint(cfg.seed))
	cmd := exec.Command("ip", inArgs...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = stdout, stderr, nil
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return 2, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	limit := time.NewTimer(cfg.limit)
	defer limit.Stop()
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGTERM)
		err = <-done
	case <-limit.C:
		// A run that hangs must not hold CI until its own time limit: dump
		// where the harness is stuck, then end it (its nodes die with it).
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		return 2, fmt.Errorf("the run did not finish within --limit %v (the goroutine dump above shows where it was)", cfg.limit)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 2, err
	}
	if madeOut {
		pruneOut(cfg.out, stdout)
	}
	return 0, nil
}

// dieWithParent has the kernel kill cmd's process when the harness that
// started it dies, however it dies: a killed or timed-out run leaves no
// node running (and holding its address) behind. Nothing in the harness
// locks goroutines to threads, so the starting thread lives as long as the
// process.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
