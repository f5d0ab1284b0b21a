package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/chaos"
)

// The comparison run: the same lock workload against redis-server with one
// asynchronous replica and three redis-sentinel processes (host 1: primary
// and a Sentinel, host 2: replica and a Sentinel, host 3: a Sentinel),
// through go-redis's Sentinel-aware client, while the primary is killed or
// cut off from the replica and the Sentinels (clients still reach it). It
// reports how often two clients held one lock at the same time. It is
// expected to find that; it never fails the build.

type redisProc struct {
	name, host string
	hostIdx    int
	args       []string
	bin        string
	logf       string
	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
}

func (p *redisProc) start(l *lab) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	f, err := os.OpenFile(p.logf, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", l.hostNS(p.hostIdx), p.bin}, p.args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

func (p *redisProc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd != nil {
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

func runRedis(ctx context.Context, cfg config, l *lab, stdout io.Writer) (int, error) {
	for _, b := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(b); err != nil {
			return 2, fmt.Errorf("%s not found: apt-get install redis-server redis-sentinel", b)
		}
	}
	h := &harness{cfg: cfg, lab: l, clock: chaos.NewClock(), out: stdout, r: rand.New(rand.NewSource(cfg.seed))}
	h.logf("redis + sentinel: primary on h1, replica on h2, sentinels on h1 h2 h3; %d clients, faults for %v, seed %d, output in %s",
		cfg.clients, cfg.duration, cfg.seed, cfg.out)
	primaryIP := hostIP(0)
	var servers, sentinels []*redisProc
	dirs := []string{filepath.Join(cfg.out, "redis-h1"), filepath.Join(cfg.out, "redis-h2")}
	diskFaults := redisDiskFaults(cfg)
	var aof string
	var disks []*redisDisk
	if len(diskFaults) > 0 {
		var undo func()
		var noFUSE string
		var err error
		if disks, aof, noFUSE, undo, err = redisDisks(cfg, dirs, diskFaults); err != nil {
			return 2, err
		}
		defer undo()
		under := "a tmpfs per server"
		if disks[0].fs != nil {
			under = "a FUSE loopback over a tmpfs per server"
		} else if noFUSE != "" {
			under += " (no FUSE loopback, so no disk-eio: " + noFUSE + ")"
		}
		h.logf("disk faults %v on the primary; AOF on %s: %q", diskFaults, under, aof)
	}
	for i := 0; i < 2; i++ {
		dir := dirs[i]
		os.MkdirAll(dir, 0o755)
		// A configuration file, as Sentinel expects: it rewrites the
		// role there at a failover, so a restarted server keeps it.
		body := fmt.Sprintf("bind %s\nport 6379\nsave \"\"\nappendonly no\nprotected-mode no\ndir %s\n%s", hostIP(i), dir, aof)
		if i == 1 {
			body += fmt.Sprintf("replicaof %s 6379\n", primaryIP)
		}
		conf := filepath.Join(cfg.out, fmt.Sprintf("redis-h%d.conf", i+1))
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return 2, err
		}
		servers = append(servers, &redisProc{name: fmt.Sprintf("redis-h%d", i+1), hostIdx: i, bin: "redis-server", args: []string{conf},
			logf: filepath.Join(cfg.out, fmt.Sprintf("redis-h%d.log", i+1))})
	}
	var sentinelAddrs []string
	for i := 0; i < 3; i++ {
		conf := filepath.Join(cfg.out, fmt.Sprintf("sentinel-h%d.conf", i+1))
		body := fmt.Sprintf("bind %s\nport 26379\nprotected-mode no\ndir %s\nsentinel monitor mymaster %s 6379 2\n"+
			"sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 4000\nsentinel parallel-syncs mymaster 1\n",
			hostIP(i), cfg.out, primaryIP)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return 2, err
		}
		sentinels = append(sentinels, &redisProc{name: fmt.Sprintf("sentinel-h%d", i+1), hostIdx: i, bin: "redis-sentinel", args: []string{conf},
			logf: filepath.Join(cfg.out, fmt.Sprintf("sentinel-h%d.log", i+1))})
		sentinelAddrs = append(sentinelAddrs, hostIP(i)+":26379")
	}
	all := append(append([]*redisProc(nil), servers...), sentinels...)
	defer func() {
		for _, p := range all {
			p.kill()
		}
	}()
	for _, p := range all {
		if err := p.start(l); err != nil {
			return 2, err
		}
	}
	master := func() (string, error) {
		for _, a := range sentinelAddrs {
			c := adminClient(a)
			r, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").StringSlice()
			c.Close()
			if err == nil && len(r) == 2 {
				return r[0], nil
			}
		}
		return "", fmt.Errorf("no sentinel answered")
	}
	// Wait for the replica to be in sync and the sentinels to see it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := adminClient(hostIP(1) + ":6379")
		info, err := c.Info(ctx, "replication").Result()
		c.Close()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			if _, err := master(); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return 2, fmt.Errorf("redis replica did not sync: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // sentinels discover each other

	h.work = newWorkload(h.clock, cfg, nil)
	h.work.failover = func() redis.UniversalClient {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinelAddrs,
			Protocol: 2, MaxRetries: -1, DisableIdentity: true, DialTimeout: 300 * time.Millisecond,
			ReadTimeout: cfg.opTimeout, WriteTimeout: cfg.opTimeout, PoolSize: 2, PoolTimeout: time.Second,
			ContextTimeoutEnabled: true})
	}
	wctx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	roles := []string{"lock", "register", "list"}
	for i := 0; i < cfg.clients; i++ {
		c := &client{w: h.work, id: i, role: roles[i%len(roles)], rng: h.rng()}
		if i == cfg.clients-1 && cfg.clients > 3 {
			c.role = "lock"
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.run(wctx) }()
	}

	hostOf := func(ip string) int {
		for i := 0; i < 3; i++ {
			if hostIP(i) == ip {
				return i
			}
		}
		return -1
	}
	end := time.Now().Add(cfg.duration)
	nth := map[string]int{} // disk faults injected so far, by name
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		m, err := master()
		if err != nil {
			h.logf("no master: %v", err)
			time.Sleep(time.Second)
			continue
		}
		hi := hostOf(m)
		if hi < 0 || hi > 1 {
			time.Sleep(time.Second)
			continue
		}
		rec := faultRecord{At: h.clock.Now()}
		if len(diskFaults) > 0 {
			rec.Name = diskFaults[i%len(diskFaults)]
			d, heal, err := redisDiskFault(rec.Name, nth[rec.Name], h.rng(), servers[hi], m+":6379", disks[hi], disks[1-hi], l)
			nth[rec.Name]++
			rec.Detail = fmt.Sprintf("primary %s: %s", m, d)
			if err != nil {
				rec.Err = err.Error()
			}
			h.logf("fault %s: %s %s", rec.Name, rec.Detail, rec.Err)
			time.Sleep(8 * time.Second)
			if heal != nil {
				rec.Detail += "; healed: " + heal()
			}
			for _, s := range servers {
				if !s.running() {
					rec.Detail += fmt.Sprintf("; %s had exited (%s), restarted", s.name, lastLine(s.logf))
					s.start(l)
				}
			}
			rec.Healed = h.clock.Now()
			rec.Detail += "; operations meanwhile: " + h.work.window(rec.At, rec.Healed)
			h.faults = append(h.faults, rec)
			h.logf("healed: %s", rec.Detail)
			time.Sleep(10 * time.Second)
			continue
		}
		if i%2 == 0 {
			rec.Name, rec.Detail = "partition-primary", fmt.Sprintf("primary %s cut off from the replica and the sentinels", m)
			h.lab.partition([][]int{{hi}, {1 - hi, 2}})
		} else {
			rec.Name, rec.Detail = "kill-primary", fmt.Sprintf("SIGKILL primary %s", m)
			servers[hi].kill()
		}
		h.logf("fault %s: %s", rec.Name, rec.Detail)
		time.Sleep(8 * time.Second)
		h.lab.heal()
		if err := servers[hi].start(l); err != nil {
			h.logf("restart: %v", err)
		}
		rec.Healed = h.clock.Now()
		h.faults = append(h.faults, rec)
		h.logf("healed")
		time.Sleep(10 * time.Second)
	}
	stopClients()
	wg.Wait()

	// The guard lists as the current primary has them.
	fc := h.work.failover()
	for _, lock := range h.work.locks {
		op := chaos.Op{Process: -1, Kind: "guard-final", F: "read", Key: lock + ":guard", Final: true}
		h.clock.Do(ctx, &op, func(ctx context.Context) error {
			var err error
			op.Elems, err = fc.LRange(ctx, lock+":guard", 0, -1).Result()
			return err
		})
		h.work.record(op)
	}
	fc.Close()
	return h.redisReport(), nil
}

func (h *harness) redisReport() int {
	w := h.work
	var b strings.Builder
	fmt.Fprintf(&b, "redis + sentinel chaos report\n=============================\n")
	fmt.Fprintf(&b, "redis-server primary + 1 replica + 3 redis-sentinel (quorum 2, down-after 1 s), %d clients, faults for %v, lease %v, seed %d\n",
		h.cfg.clients, h.cfg.duration, h.cfg.lease, h.cfg.seed)
	acquired := 0
	for _, op := range w.ops {
		if op.Kind == "lock" && op.F == "acquire" && op.Outcome == chaos.OK && op.Value == "acquired" {
			acquired++
		}
	}
	mutex := chaos.CheckMutex(w.sections, nil)
	overlaps, lost := 0, 0
	for _, v := range mutex {
		if v.Check == "mutual-exclusion" {
			overlaps++
		} else {
			lost++
		}
	}
	var guards []chaos.Violation
	for _, lock := range w.locks {
		guards = append(guards, chaos.CheckGuards(lock, h.guardList(lock), w.sections)...)
	}
	fmt.Fprintf(&b, "\nfaults injected: %d\n", len(h.faults))
	for _, f := range h.faults {
		fmt.Fprintf(&b, "  %7.2fs-%7.2fs %-18s %s %s\n", time.Duration(f.At).Seconds(), time.Duration(f.Healed).Seconds(), f.Name, f.Detail, f.Err)
	}
	fmt.Fprintf(&b, "\noperations: %s\n", outcomeSummary(w.ops))
	fmt.Fprintf(&b, "locks acquired: %d (%d critical sections)\n", acquired, len(w.sections))
	fmt.Fprintf(&b, "two clients held the same lock at once: %d times\n", overlaps)
	fmt.Fprintf(&b, "a holder was told, within its lease, that it no longer held the lock: %d times\n", lost)
	byCheck := map[string]int{}
	for _, v := range guards {
		byCheck[v.Check]++
	}
	fmt.Fprintf(&b, "guard-list anomalies: %d %v (guard-lost: an acknowledged fenced write is gone after failover)\n", len(guards), byCheck)
	for _, kind := range []string{"register", "list"} {
		r := chaos.CheckLinear(w.ops, kind, h.cfg.checkTimeout)
		fmt.Fprintf(&b, "linearizability of %s: %s (%d operations)", kind, r.Result, r.Ops)
		if len(r.Bad) > 0 {
			// A key's name holds its epoch (--key-epoch): when it went wrong.
			fmt.Fprintf(&b, "; keys not linearizable: %s", strings.Join(r.Bad, " "))
		}
		fmt.Fprintln(&b)
	}
	show := func(vs []chaos.Violation, n int) {
		for i, v := range vs {
			if i == n {
				fmt.Fprintf(&b, "  ... and %d more\n", len(vs)-n)
				break
			}
			fmt.Fprintf(&b, "  [%s] %s\n", v.Check, v.Detail)
		}
	}
	fmt.Fprintf(&b, "\nexamples:\n")
	show(mutex, 10)
	show(guards, 5)
	fmt.Fprintf(&b, "\nexpected: asynchronous replication plus Sentinel failover lets two clients hold one lock; this run documents it and does not fail.\n")
	fmt.Fprint(h.out, b.String())
	os.WriteFile(filepath.Join(h.cfg.out, "report.txt"), []byte(b.String()), 0o644)
	h.writeJSON("history.jsonl", w.ops)
	h.writeJSON("sections.jsonl", w.sections)
	return 0
}
