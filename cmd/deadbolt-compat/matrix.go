package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A column is one way of connecting (docs/COMPATIBILITY.md, "Modes").
type column struct {
	name string // table header
	mode string // what the client is told (its MODE argument)
	topo string // which servers: single, three, cluster, redis
}

var columns = []column{
	{"single", "single", "single"},
	{"single+sentinel", "sentinel", "single"},
	{"3×single", "redlock3", "three"},
	{"direct", "direct", "cluster"},
	{"sentinel", "sentinel", "cluster"},
	{"cluster", "cluster", "cluster"},
	{"redis-server", "single", "redis"},
}

func columnByName(name string) column {
	for _, c := range columns {
		if c.name == name {
			return c
		}
	}
	panic("no column " + name)
}

// A row is one client library (or redis-cli), and the columns it runs in.
type row struct {
	name  string
	kind  string // go, gopinned, python, node, php, ruby, cli
	suite string
	cols  []string
}

var rows = []row{
	{"go-redis v9 + Redisson scripts", "go", "rlock", []string{"single", "single+sentinel", "direct", "sentinel", "cluster", "redis-server"}},
	{"redsync v4", "go", "redsync", []string{"single", "3×single", "direct", "sentinel", "cluster", "redis-server"}},
	{"bsm/redislock", "go", "redislock", []string{"single", "direct", "sentinel", "cluster", "redis-server"}},
	// The same suite on the versions redislock v0.9.4 itself requires, built
	// in a module of its own (compat/matrix/gopinned) so that go.mod cannot
	// raise go-redis.
	{"bsm/redislock + go-redis v9.0.3", "gopinned", "redislock", []string{"single", "direct", "sentinel", "cluster", "redis-server"}},
	{"Redisson family (own Go client)", "go", "family", []string{"single", "3×single", "direct", "sentinel", "cluster", "redis-server"}},
	{"redis-py Lock (python3-redis)", "python", "", []string{"single", "single+sentinel", "direct", "sentinel", "redis-server"}},
	{"ioredis + redlock", "node", "redlock", []string{"single", "3×single", "direct", "sentinel", "cluster", "redis-server"}},
	{"ioredis + redis-semaphore", "node", "semaphore", []string{"single", "3×single", "direct", "sentinel", "cluster", "redis-server"}},
	{"ioredis + node-redisson", "node", "redisson", []string{"single", "direct", "sentinel", "cluster", "redis-server"}},
	// node-redis (npm `redis`), two majors side by side (npm aliases redis4
	// and redis5): 4.x speaks RESP2 and has no Sentinel client; 5.x runs
	// with RESP: 3 and createSentinel.
	{"node-redis v4 (RESP2)", "node", "noderedis4", []string{"single", "direct", "cluster", "redis-server"}},
	{"node-redis v5 (RESP3)", "node", "noderedis5", []string{"single", "single+sentinel", "direct", "sentinel", "cluster", "redis-server"}},
	{"Symfony Lock RedisStore (PHP)", "php", "", []string{"single", "single+sentinel", "3×single", "direct", "sentinel", "cluster", "redis-server"}},
	{"redis-rb 4.8 SET NX + Lua (Ruby)", "ruby", "", []string{"single", "single+sentinel", "direct", "sentinel", "cluster", "redis-server"}},
	{"redis-cli transcripts", "cli", "", []string{"single", "direct", "sentinel", "cluster", "redis-server"}},
}

// Phases of a cell: every cell runs "check"; cells on the cluster also run
// "failover" (around the leader kill, not redis-cli) and "after" (the
// check again, once the killed node is back).
const (
	phaseCheck    = "check"
	phaseFailover = "failover"
	phaseAfter    = "after"
)

type cell struct {
	row row
	col column
	// results by phase: "" not run, "ok", "skip", or a failure message.
	mu      sync.Mutex
	results map[string]string
	took    map[string]time.Duration
	logs    map[string]string
}

func (c *cell) id() string {
	return fmt.Sprintf("%s / %s", c.row.name, c.col.name)
}

func (c *cell) slug() string {
	s := strings.ToLower(c.row.name + "_" + c.col.name)
	s = regexp.MustCompile(`[^a-z0-9+]+`).ReplaceAllString(s, "-")
	return strings.Trim(s, "-")
}

func (c *cell) set(phase, result string, took time.Duration, log string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results[phase] = result
	c.took[phase] = took
	c.logs[phase] = log
}

func (c *cell) result(phase string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.results[phase]
}

// summary is the table's text for the cell.
func (c *cell) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	phases := []string{phaseCheck, phaseFailover, phaseAfter}
	anyRun := false
	for _, p := range phases {
		r := c.results[p]
		switch r {
		case "", "ok":
		case "skip":
			return "skip"
		default:
			if p == phaseCheck {
				return "FAIL"
			}
			return "FAIL(" + map[string]string{phaseFailover: "kill", phaseAfter: "after"}[p] + ")"
		}
		anyRun = anyRun || r == "ok"
	}
	if !anyRun {
		return "?"
	}
	if c.results[phaseFailover] == "ok" {
		return "ok+kill"
	}
	return "ok"
}

func (c *cell) failed() bool {
	s := c.summary()
	return s != "ok" && s != "ok+kill" && s != "skip"
}

// topology is what a cell needs to know about the running servers.
type topology struct {
	single, s2, s3 *server
	redis          *server
	cluster        *cluster
	direct         string // the follower plain clients use
	dead           string
}

// env returns the COMPAT_* variables of a cell's run.
func (r *runner) env(c *cell, phase string) []string {
	t := r.topo
	vars := map[string]string{
		"COMPAT_PHASE":   map[string]string{phaseCheck: "check", phaseAfter: "check", phaseFailover: "failover"}[phase],
		"COMPAT_STAGE":   phase,
		"COMPAT_MASTER":  "mymaster",
		"COMPAT_PREFIX":  fmt.Sprintf("%s%s:%d:", c.keyPrefix(), phase, time.Now().UnixNano()),
		"COMPAT_USER":    c.user(),
		"COMPAT_PASS":    r.password,
		"COMPAT_DEAD":    t.dead,
		"COMPAT_TIMEOUT": fmt.Sprintf("%ds", int(r.runLimit(phase).Seconds())),
	}
	switch c.col.topo {
	case "single":
		vars["COMPAT_ADDRS"] = t.single.addr
		vars["COMPAT_SENTINELS"] = t.single.sentinel
	case "three":
		vars["COMPAT_ADDRS"] = strings.Join([]string{t.single.addr, t.s2.addr, t.s3.addr}, ",")
	case "redis":
		vars["COMPAT_ADDRS"] = t.redis.addr
	case "cluster":
		vars["COMPAT_ADDRS"] = strings.Join(t.cluster.addrs(), ",")
		vars["COMPAT_DIRECT"] = t.direct
		vars["COMPAT_SENTINELS"] = strings.Join(t.cluster.sentinels(), ",")
	}
	out := os.Environ()
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

func (r *runner) runLimit(phase string) time.Duration {
	if phase == phaseFailover {
		return 75 * time.Second
	}
	return 90 * time.Second
}

// command returns the client process of a cell.
func (r *runner) command(ctx context.Context, c *cell) *exec.Cmd {
	var cmd *exec.Cmd
	switch c.row.kind {
	case "go":
		cmd = exec.CommandContext(ctx, r.goClient, c.row.suite, c.col.mode)
	case "gopinned":
		cmd = exec.CommandContext(ctx, r.goPinnedClient, c.row.suite, c.col.mode)
	case "python":
		cmd = exec.CommandContext(ctx, r.python, filepath.Join(r.dir, "python", "locks.py"), c.col.mode)
	case "node":
		cmd = exec.CommandContext(ctx, r.node, filepath.Join(r.dir, "node", "matrix.js"), c.row.suite, c.col.mode)
	case "php":
		cmd = exec.CommandContext(ctx, r.php, filepath.Join(r.dir, "php", "locks.php"), c.col.mode)
	case "ruby":
		cmd = exec.CommandContext(ctx, r.ruby, filepath.Join(r.dir, "ruby", "locks.rb"), c.col.mode)
	default:
		panic("no command for " + c.row.kind)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On the deadline, end the client and whatever it started.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (r *runner) logFile(c *cell, phase string) (string, *os.File, error) {
	path := filepath.Join(r.logs, phase, c.slug()+".log")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", nil, err
	}
	f, err := os.Create(path)
	return path, f, err
}

// check runs one cell's transcript (phase check or after).
func (r *runner) check(ctx context.Context, c *cell, phase string) {
	if reason := r.missing[c.row.kind]; reason != "" || (c.col.topo == "redis" && r.missing["redis"] != "") {
		if reason == "" {
			reason = r.missing["redis"]
		}
		r.missingDep(c, phase, reason)
		return
	}
	path, f, err := r.logFile(c, phase)
	if err != nil {
		c.set(phase, err.Error(), 0, "")
		return
	}
	defer f.Close()
	start := time.Now()
	result := r.checkOnce(ctx, c, phase, f)
	if result != "ok" && c.col.topo == "cluster" {
		// A check assumes a steady cluster: if the cluster changed leader
		// on its own during the run, run it once more and say so.
		if ch := r.terms.unplanned(start, time.Now().Add(time.Second)); len(ch) > 0 {
			fmt.Fprintf(f, "\n=== unplanned leader change during the run (%s): running the check again\n", describe(ch))
			r.outMu.Lock()
			fmt.Fprintf(r.stdout, "  note %-8s %-45s failed during an unplanned leader change (%s); running it again\n", phase, c.id(), describe(ch))
			r.outMu.Unlock()
			result = r.checkOnce(ctx, c, phase, f)
		}
	}
	took := time.Since(start)
	c.set(phase, result, took, path)
	r.progress(c, phase, result, took)
}

// checkOnce runs a cell's check and returns "ok" or what went wrong.
func (r *runner) checkOnce(ctx context.Context, c *cell, phase string, f *os.File) string {
	ctx, cancel := context.WithTimeout(ctx, r.runLimit(phase)+10*time.Second)
	defer cancel()
	var err error
	if c.row.kind == "cli" {
		err = r.checkCLI(ctx, c, phase, f)
	} else {
		cmd := r.command(ctx, c)
		cmd.Env = r.env(c, phase)
		cmd.Stdout, cmd.Stderr = f, f
		err = cmd.Run()
	}
	if err == nil {
		return "ok"
	}
	if ctx.Err() != nil {
		return "timed out: " + err.Error()
	}
	return err.Error()
}

func (r *runner) missingDep(c *cell, phase, reason string) {
	if r.ci {
		c.set(phase, "missing dependency (CI=true makes this a failure): "+reason, 0, "")
	} else {
		c.set(phase, "skip", 0, "")
	}
	r.progress(c, phase, c.result(phase), 0)
}

func (r *runner) checkCLI(ctx context.Context, c *cell, phase string, log io.Writer) error {
	t := r.topo
	tg := cliTarget{redisCLI: r.redisCLI, prefix: fmt.Sprintf("%s%s:%d:", c.keyPrefix(), phase, time.Now().UnixNano()),
		user: c.user(), pass: r.password}
	mode := c.col.mode
	switch c.col.topo {
	case "single":
		tg.addr = t.single.addr
	case "redis":
		tg.addr, mode = t.redis.addr, "redis"
	case "cluster":
		l, err := t.cluster.leader(ctx)
		if err != nil {
			return err
		}
		tg.leader = l
		tg.addr = t.direct
		tg.cluster = c.col.mode == "cluster"
		for _, n := range t.cluster.nodes {
			if n.running() {
				tg.sentinels = append(tg.sentinels, n.sentinel)
			}
		}
	}
	return runCLI(ctx, r.transcripts, mode, tg, log)
}

func (r *runner) progress(c *cell, phase, result string, took time.Duration) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	status := "ok  "
	switch {
	case result == "skip":
		status = "skip"
	case result != "ok":
		status = "FAIL"
	}
	fmt.Fprintf(r.stdout, "  %s %-8s %-45s %5.1fs\n", status, phase, c.id(), took.Seconds())
}

// runChecks runs the phase for every cell in cells, parallel at most
// r.parallel at a time.
func (r *runner) runChecks(ctx context.Context, cells []*cell, phase string) {
	sem := make(chan struct{}, r.parallel)
	var wg sync.WaitGroup
	for _, c := range cells {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r.check(ctx, c, phase)
		}()
	}
	wg.Wait()
}

// failoverRun is one client process of the failover phase.
type failoverRun struct {
	c       *cell
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	ready   chan struct{}
	armed   chan struct{}
	exited  chan error
	lastOut string
	path    string
	start   time.Time
	note    string
	mu      sync.Mutex
	// recovered is the run's "RECOVERED: ..." line, once printed.
	recovered string
}

func (r *runner) startFailover(ctx context.Context, c *cell) (*failoverRun, error) {
	path, f, err := r.logFile(c, phaseFailover)
	if err != nil {
		return nil, err
	}
	cmd := r.command(ctx, c)
	cmd.Env = r.env(c, phaseFailover)
	cmd.Stderr = f
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	fr := &failoverRun{c: c, cmd: cmd, stdin: stdin, ready: make(chan struct{}), armed: make(chan struct{}),
		exited: make(chan error, 1), path: path, start: time.Now()}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		readied, armed := false, false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			fr.mu.Lock()
			if strings.TrimSpace(line) != "" {
				fr.lastOut = line
			}
			if i := strings.Index(line, "RECOVERED:"); i >= 0 && fr.recovered == "" {
				fr.recovered = line[i:]
			}
			fr.mu.Unlock()
			if !readied && strings.TrimSpace(line) == "READY" {
				readied = true
				close(fr.ready)
			}
			if !armed && strings.TrimSpace(line) == "ARMED" {
				armed = true
				close(fr.armed)
			}
		}
		err := cmd.Wait()
		f.Close()
		fr.exited <- err
	}()
	return fr, nil
}

// recoveredLine is the RECOVERED line ("RECOVERED: n grants x s after the
// kill; errors: n before the kill, n after (last: ...)"), or "".
func (fr *failoverRun) recoveredLine() string {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.recovered
}

func (fr *failoverRun) last() string {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.lastOut
}
