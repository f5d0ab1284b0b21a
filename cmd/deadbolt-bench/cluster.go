package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"
)

// The cluster table's systems.
const (
	nameDeadbolt = "deadbolt-3node"
	nameTLS      = "deadbolt-3node-tls"
	nameSecret   = "deadbolt-3node-secret"
	nameLease    = "deadbolt-3node-lease"
	nameSingle   = "deadbolt-1node"
	nameRedisAOF = "redis-aof-always"
	nameEtcd     = "etcd-3node"
)

// runCluster measures the replicated systems: three bin/deadbolt
// processes in one Raft cluster, one bin/deadbolt process alone (the
// cluster's bound), redis-server with appendfsync always, and three etcd
// members, all on loopback with data on disk.
func runCluster(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	root, err := os.MkdirTemp(cfg.workDir, "deadbolt-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	var targets []target
	for _, s := range cfg.systems {
		switch s {
		case "deadbolt", "deadbolt-tls", "deadbolt-secret", "deadbolt-lease":
			name, how, extra := nameDeadbolt, "", []string(nil)
			switch s {
			case "deadbolt-tls":
				cert, key, err := memberCert(root)
				if err != nil {
					return err
				}
				name, how = nameTLS, ", --tls-cluster (mutual TLS between members)"
				extra = []string{"--tls-cluster", "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert}
			case "deadbolt-lease":
				name, how = nameLease, ", --read-mode lease"
				extra = []string{"--read-mode", "lease"}
			case "deadbolt-secret":
				secret := filepath.Join(root, "cluster.secret")
				if err := os.WriteFile(secret, []byte("deadbolt-bench-cluster-secret"), 0o600); err != nil {
					return err
				}
				name, how = nameSecret, ", --cluster-secret-file"
				extra = []string{"--cluster-secret-file", secret}
			}
			dir := filepath.Join(root, s)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			dc, err := startDeadboltNodes(ctx, cfg.deadboltBin, dir, cfg.memberProcs, extra...)
			if err != nil {
				return err
			}
			defer dc.stop()
			targets = append(targets, target{name: name, addr: dc.leaderAddr, pids: dc.pids, leader: dc.leader, members: dc.addrs,
				about: "3 × " + cfg.deadboltBin + how + ", Raft, data on disk (default fsync), clients on leader " + dc.leaderID})
		case "deadbolt1":
			addr, pids, stop, err := startDeadboltSingle(ctx, cfg.deadboltBin, root, cfg.memberProcs)
			if err != nil {
				return err
			}
			defer stop()
			targets = append(targets, target{name: nameSingle, addr: addr, pids: pids,
				about: "1 × " + cfg.deadboltBin + ", one voter, data on disk (default fsync): the cluster's bound on this machine"})
		case "redis":
			addr, stop, err := startRedis(ctx, cfg.redisServer, redisFsyncAlways)
			if err != nil {
				return err
			}
			defer stop()
			about := "child process, --save '' --appendonly yes --appendfsync always"
			if v, err := redisVersion(ctx, addr); err == nil {
				about = "redis " + v + ", " + about
			}
			targets = append(targets, target{name: nameRedisAOF, addr: addr, about: about})
		case "etcd":
			ep, version, pids, stop, leader, err := startEtcdCluster(ctx, cfg.etcdBin, root, cfg.memberProcs)
			if err != nil {
				return err
			}
			defer stop()
			targets = append(targets, target{name: nameEtcd, addr: ep, pids: pids, leader: leader, measure: measureEtcd,
				about: "etcd " + version + ", 3 members, clients on the leader; client/v3/concurrency Session (TTL = lease) + Mutex Lock/Unlock"})
		}
	}

	fmt.Fprintf(stdout, "op: one lock+unlock pair; Redis protocol: Redisson's EVALSHA lock + EVALSHA unlock; etcd: Mutex.Lock + Mutex.Unlock; each client its own lock\n")
	fmt.Fprintf(stdout, "%v per cell after %v warm-up, %d run(s), systems rotating; GOMAXPROCS=%d, %d CPUs; cluster members' GOMAXPROCS=%s; data under %s\n",
		cfg.duration, cfg.warmup, cfg.runs, runtime.GOMAXPROCS(0), runtime.NumCPU(), memberProcsText(cfg.memberProcs), root)
	for _, t := range targets {
		fmt.Fprintf(stdout, "%-16s %s (%s)\n", t.name, t.addr, t.about)
	}
	fmt.Fprintln(stdout)

	terms := raftTerms(ctx, targets)
	results, err := measureAll(ctx, cfg, targets, stderr)
	if err != nil {
		return err
	}
	if err := reportCluster(stdout, cfg, targets, results); err != nil {
		return err
	}
	reportLeaderChanges(ctx, stdout, targets, terms)
	if err := reportSerial(ctx, stdout, targets); err != nil {
		return err
	}
	return reportMix(ctx, stdout, targets)
}

func reportCluster(w io.Writer, cfg config, targets []target, results map[int]map[string][]cell) error {
	if cfg.runs > 1 {
		fmt.Fprintf(w, "medians of %d runs, each column separately\n", cfg.runs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tclients\tops/s\tp50\tp99\tp99 acquire\tcpu/op\tbusiest/op\tgen cpu/op\tfailed\tops/s ÷ redis-aof\tops/s ÷ etcd\t")
	for _, n := range cfg.clients {
		r := median(results[n][nameRedisAOF])
		e := median(results[n][nameEtcd])
		for _, t := range targets {
			c := median(results[n][t.name])
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t\n", t.name, n, c.opsPerSec,
				us(c.p50), us(c.p99), us(c.p99Lock), cpu(c.cpuPerOp), cpu(c.busiestPerOp), cpu(c.genPerOp), c.failed,
				ratio(c.opsPerSec, r.opsPerSec), ratio(c.opsPerSec, e.opsPerSec))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "p50, p99: the whole pair; p99 acquire: the lock call alone. cpu/op: CPU time of all the system's server processes per pair")
	fmt.Fprintln(w, "(/proc for deadbolt and etcd, all three nodes; INFO cpu for redis-server); busiest/op: that of the one server process")
	fmt.Fprintln(w, "that spent the most (a cluster's leader), which bounds the rate once each member has cores of its own; gen cpu/op: the")
	fmt.Fprintln(w, "load generator's (this process's) CPU time per pair, the same clients for every system. failed: pairs that returned an error")
	fmt.Fprintln(w, "(say, during a leader election), left out of the latencies; the client then goes on with a new lock")

	for _, n := range cfg.clients {
		if n != 64 {
			continue
		}
		d, ok := results[n][nameDeadbolt]
		if !ok {
			break
		}
		dm := median(d)
		fmt.Fprintf(w, "targets at 64 clients: ops/s ≥ 5 × etcd: %s; ops/s ≥ 0.5 × redis-aof-always: %s; p99 acquire < 5 ms: %s\n",
			verdict(dm.opsPerSec, median(results[n][nameEtcd]).opsPerSec, 5),
			verdict(dm.opsPerSec, median(results[n][nameRedisAOF]).opsPerSec, 0.5),
			met(dm.p99Lock < 5*time.Millisecond, us(dm.p99Lock)))
		rm := median(results[n][nameRedisAOF])
		p99 := "not measured"
		if rm.p99Lock > 0 {
			p99 = met(dm.p99Lock <= rm.p99Lock, us(dm.p99Lock)+" against "+us(rm.p99Lock))
		}
		fmt.Fprintf(w, "issue #19's targets at 64 clients: ops/s ≥ 1.0 × redis-aof-always: %s; ops/s ≥ 8 × etcd: %s; p99 acquire ≤ redis-aof-always's: %s\n",
			verdict(dm.opsPerSec, rm.opsPerSec, 1), verdict(dm.opsPerSec, median(results[n][nameEtcd]).opsPerSec, 8), p99)
	}
	return nil
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64)
}

// verdict says whether a ≥ want × b.
func verdict(a, b, want float64) string {
	if b == 0 {
		return "not measured"
	}
	return met(a >= want*b, ratio(a, b)+"×")
}

func met(ok bool, figure string) string {
	if ok {
		return figure + " met"
	}
	return figure + " NOT met"
}

func memberProcsText(n int) string {
	if n == 0 {
		return "default"
	}
	return strconv.Itoa(n)
}
