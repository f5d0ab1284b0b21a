// Command deadbolt-compat runs the compatibility matrix (make compat;
// docs/COMPATIBILITY.md): it starts deadbolt as real processes — one node
// (plus two more for the three-independent-nodes column) and a three-node
// cluster — and a reference redis-server, runs every client of
// compat/matrix/ in every connection mode it supports, SIGKILLs the
// cluster's leader once while the clients of the cluster columns hold and
// release locks, runs the cluster checks again once the killed node is
// back, prints a table of client × mode and exits non-zero on any
// failure. With CI=true a missing client dependency is a failure.
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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errCellsFailed) {
			fmt.Fprintln(os.Stderr, "deadbolt-compat:", err)
		}
		os.Exit(1)
	}
}

type runner struct {
	bin, goClient, dir, python, node, redisCLI, redisServer string
	php, ruby                                               string
	goPinnedClient                                          string // compat/matrix/gopinned, a module of its own
	logs                                                    string
	password                                                string // every cell's ACL user's (users.go)
	parallel                                                int
	ci                                                      bool
	missing                                                 map[string]string // kind -> why it cannot run
	transcripts                                             []*transcript
	topo                                                    *topology
	terms                                                   termWatch
	stdout                                                  io.Writer
	outMu                                                   sync.Mutex
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadbolt-compat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	r := &runner{stdout: stdout, missing: map[string]string{}}
	fs.StringVar(&r.bin, "bin", "bin/deadbolt", "the deadbolt binary")
	fs.StringVar(&r.goClient, "go-client", "bin/compat-go", "the Go clients' binary (go build ./compat/matrix/go)")
	fs.StringVar(&r.goPinnedClient, "go-pinned-client", "bin/compat-gopinned", "the pinned redislock client's binary (module compat/matrix/gopinned)")
	fs.StringVar(&r.dir, "dir", "compat/matrix", "the matrix's directory (python/, node/, cli/)")
	fs.StringVar(&r.python, "python", "/usr/bin/python3", "the Python with Debian's python3-redis")
	fs.StringVar(&r.node, "node", "node", "the Node.js binary")
	fs.StringVar(&r.php, "php", "php", "the PHP CLI with Debian's php-redis and php-symfony-lock")
	fs.StringVar(&r.ruby, "ruby", "ruby", "the Ruby with Debian's ruby-redis")
	fs.StringVar(&r.redisCLI, "redis-cli", "redis-cli", "the redis-cli binary")
	fs.StringVar(&r.redisServer, "redis-server", "redis-server", "the reference redis-server")
	fs.StringVar(&r.logs, "logs", "bin/compat-logs", "where each run's output goes")
	fs.IntVar(&r.parallel, "parallel", 3, "client runs at once in the check phases")
	only := fs.String("run", "", "only the cells whose \"client / column\" matches this regular expression")
	kill := fs.Bool("kill", true, "kill the cluster's leader between the cluster checks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r.ci = os.Getenv("CI") == "true"
	// The runner's own go-redis clients poll nodes that are down on
	// purpose; their connection-pool complaints are not news.
	redis.SetLogger(quietLogger{})
	var sel *regexp.Regexp
	if *only != "" {
		var err error
		if sel, err = regexp.Compile(*only); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	began := time.Now()

	if _, err := os.Stat(r.bin); err != nil {
		return fmt.Errorf("deadbolt binary: %w (make build)", err)
	}
	if err := os.RemoveAll(r.logs); err != nil {
		return err
	}
	if err := os.MkdirAll(r.logs, 0o755); err != nil {
		return err
	}
	r.findDeps(ctx)
	var err error
	if r.transcripts, err = loadTranscripts(filepath.Join(r.dir, "cli")); err != nil {
		return err
	}

	var cells []*cell
	for _, rw := range rows {
		for _, name := range rw.cols {
			c := &cell{row: rw, col: columnByName(name), results: map[string]string{}, took: map[string]time.Duration{}, logs: map[string]string{}}
			if sel == nil || sel.MatchString(c.id()) {
				cells = append(cells, c)
			}
		}
	}
	if len(cells) == 0 {
		return fmt.Errorf("-run %q matches no cell", *only)
	}

	tmp, err := os.MkdirTemp("", "deadbolt-compat-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(stdout, "compat: starting servers (logs in %s)\n", r.logs)
	topo, stopAll, err := r.startServers(ctx, tmp)
	defer stopAll()
	if err != nil {
		return err
	}
	r.topo = topo
	r.password = newPassword()
	usersAt := time.Now()
	if err := r.createUsers(ctx, cells); err != nil {
		return err
	}
	usersTook := time.Since(usersAt)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go r.terms.watch(watchCtx, topo.cluster)
	leader, _ := topo.cluster.leader(ctx)
	fmt.Fprintf(stdout, "compat: single %s (Sentinel %s), 3×single %s %s %s, redis-server %s\n",
		topo.single.addr, topo.single.sentinel, topo.single.addr, topo.s2.addr, topo.s3.addr, topo.redis.addr)
	fmt.Fprintf(stdout, "compat: cluster %s (Sentinels %s), leader %s, direct clients use follower %s\n",
		strings.Join(topo.cluster.addrs(), " "), strings.Join(topo.cluster.sentinels(), " "), leader, topo.direct)

	var clusterCells, failoverCells []*cell
	for _, c := range cells {
		if c.col.topo == "cluster" {
			clusterCells = append(clusterCells, c)
			if c.row.kind != "cli" {
				failoverCells = append(failoverCells, c)
			}
		}
	}

	fmt.Fprintf(stdout, "compat: %d ACL users created in %v (one per cell; the cluster's through follower %s, in force on every node)\n",
		len(cells), usersTook.Round(time.Millisecond), topo.direct)
	fmt.Fprintf(stdout, "compat: check phase, %d runs\n", len(cells))
	r.runChecks(ctx, cells, phaseCheck)

	var killNote string
	if *kill && len(clusterCells) > 0 {
		fmt.Fprintf(stdout, "compat: failover phase, %d runs around one leader SIGKILL\n", len(failoverCells))
		killNote, err = r.failover(ctx, failoverCells)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "compat: %s\n", killNote)
		fmt.Fprintf(stdout, "compat: after phase, %d runs on the cluster with the killed node back\n", len(clusterCells))
		r.runChecks(ctx, clusterCells, phaseAfter)
	}

	if n, path := r.dumpACLLog(ctx); n > 0 {
		fmt.Fprintf(stdout, "compat: ACL LOG: %d entries on the servers (%s)\n", n, path)
	}
	if ch := r.terms.unplanned(began, time.Time{}); len(ch) > 0 {
		fmt.Fprintf(stdout, "compat: unplanned leader changes (no node was killed): %s\n", describe(ch))
	}
	if r.report(cells, killNote, time.Since(began)) > 0 {
		return errCellsFailed
	}
	return nil
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// errCellsFailed ends the run with exit status 1 after the report, which
// already said what failed.
var errCellsFailed = errors.New("cells failed")

// findDeps records, per kind of client, why it cannot run.
func (r *runner) findDeps(ctx context.Context) {
	if _, err := os.Stat(r.goClient); err != nil {
		r.missing["go"] = fmt.Sprintf("%s: %v (go build -o %s ./compat/matrix/go)", r.goClient, err, r.goClient)
	}
	if _, err := os.Stat(r.goPinnedClient); err != nil {
		r.missing["gopinned"] = fmt.Sprintf("%s: %v (cd compat/matrix/gopinned && go build -o ../../../bin/compat-gopinned .)", r.goPinnedClient, err)
	}
	if out, err := exec.CommandContext(ctx, r.python, "-c", "import redis; print(redis.__version__)").CombinedOutput(); err != nil {
		r.missing["python"] = fmt.Sprintf("%s cannot import redis (apt-get install python3-redis): %v %s", r.python, err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.CommandContext(ctx, r.node, "--version").Output(); err != nil {
		r.missing["node"] = fmt.Sprintf("%s: %v", r.node, err)
	} else if major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0], "v")); major < 20 {
		r.missing["node"] = fmt.Sprintf("node %s: the pinned ioredis needs node >= 20", strings.TrimSpace(string(out)))
	} else {
		for _, pkg := range []string{"ioredis", "redis4", "redis5"} {
			if _, err := os.Stat(filepath.Join(r.dir, "node", "node_modules", pkg)); err != nil {
				r.missing["node"] = fmt.Sprintf("%s/node/node_modules/%s is not installed (make compat-deps)", r.dir, pkg)
				break
			}
		}
	}
	if out, err := exec.CommandContext(ctx, r.php, "-r", `require "/usr/share/php/Symfony/Component/Lock/autoload.php"; `+
		`if (!class_exists("Redis") || !class_exists("Symfony\\Component\\Lock\\Store\\RedisStore")) { exit(1); }`).CombinedOutput(); err != nil {
		r.missing["php"] = fmt.Sprintf("%s has no phpredis or Symfony Lock (apt-get install php-cli php-redis php-symfony-lock): %v %s", r.php, err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.CommandContext(ctx, r.ruby, "-e", `require "redis"; exit(Redis::VERSION.start_with?("4.") ? 0 : 1)`).CombinedOutput(); err != nil {
		r.missing["ruby"] = fmt.Sprintf("%s cannot load the redis gem 4.x (apt-get install ruby-redis): %v %s", r.ruby, err, strings.TrimSpace(string(out)))
	}
	if _, err := exec.LookPath(r.redisCLI); err != nil {
		r.missing["cli"] = fmt.Sprintf("%s: %v (apt-get install redis-tools)", r.redisCLI, err)
	}
	if _, err := exec.LookPath(r.redisServer); err != nil {
		r.missing["redis"] = fmt.Sprintf("%s: %v (apt-get install redis-server)", r.redisServer, err)
	}
	for kind, why := range r.missing {
		fmt.Fprintf(r.stdout, "compat: cannot run %s clients: %s\n", kind, why)
	}
}

func (r *runner) startServers(ctx context.Context, tmp string) (*topology, func(), error) {
	t := &topology{}
	var all []*server
	stopAll := func() {
		for _, s := range all {
			s.stop()
		}
		if t.cluster != nil {
			t.cluster.stop()
		}
	}
	addrs, err := freeAddrs(6 + 9)
	if err != nil {
		return nil, stopAll, err
	}
	single := func(name, addr string, extra ...string) *server {
		s := &server{name: name, addr: addr, bin: r.bin, logPath: filepath.Join(r.logs, "deadbolt-"+name+".log"),
			args: append([]string{"--addr", addr, "--log-level", "warn"}, extra...)}
		all = append(all, s)
		return s
	}
	t.single = single("single", addrs[0], "--sentinel-addr", addrs[1], "--master-name", "mymaster")
	t.single.sentinel = addrs[1]
	t.s2 = single("s2", addrs[2])
	t.s3 = single("s3", addrs[3])
	t.dead = addrs[5]
	for _, s := range all {
		if err := s.start(); err != nil {
			return nil, stopAll, err
		}
	}
	t.redis = &server{name: "redis", addr: addrs[4], bin: r.redisServer, logPath: filepath.Join(r.logs, "redis-server.log")}
	_, port, _ := strings.Cut(addrs[4], ":")
	t.redis.args = []string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", tmp}
	if r.missing["redis"] == "" {
		all = append(all, t.redis)
		if err := t.redis.start(); err != nil {
			return nil, stopAll, err
		}
	}
	t.cluster = newCluster(r.bin, tmp, r.logs, addrs[6:])
	if err := t.cluster.start(ctx); err != nil {
		return nil, stopAll, err
	}
	for _, s := range all {
		if err := s.waitUp(ctx, 20*time.Second); err != nil {
			return nil, stopAll, err
		}
	}
	leader, err := t.cluster.leader(ctx)
	if err != nil {
		return nil, stopAll, err
	}
	for _, n := range t.cluster.nodes {
		if n.addr != leader {
			t.direct = n.addr
			break
		}
	}
	return t, stopAll, nil
}

// failover runs the failover phase: every run starts, each prints READY
// once its two workers have both held the lock; then the leader is
// SIGKILLed, KILLED goes to every run, and each must see the lock granted
// again. Afterwards the killed node is restarted and the cluster must
// settle with all three nodes.
func (r *runner) failover(ctx context.Context, cells []*cell) (string, error) {
	cl := r.topo.cluster
	// The direct column's clients talk to one follower only. If the
	// cluster changed leader on its own since that node was chosen (a
	// starved machine), it may lead now and be the node killed: choose a
	// follower again before the runs start.
	if l, err := cl.leader(ctx); err == nil && l == r.topo.direct {
		for _, n := range cl.nodes {
			if n.addr != l && n.running() {
				r.topo.direct = n.addr
				break
			}
		}
		fmt.Fprintf(r.stdout, "compat: the direct clients' node %s leads now; the failover phase's direct clients use %s\n", l, r.topo.direct)
	}
	var runs []*failoverRun
	for _, c := range cells {
		if reason := r.missing[c.row.kind]; reason != "" {
			r.missingDep(c, phaseFailover, reason)
			continue
		}
		fr, err := r.startFailover(ctx, c)
		if err != nil {
			c.set(phaseFailover, err.Error(), 0, "")
			continue
		}
		runs = append(runs, fr)
	}
	defer func() {
		for _, fr := range runs {
			fr.stdin.Close()
		}
	}()

	// Wait for READY from every run (or its early exit).
	readyBy := time.Now().Add(60 * time.Second)
	var live []*failoverRun
	for _, fr := range runs {
		select {
		case <-fr.ready:
			live = append(live, fr)
		case err := <-fr.exited:
			r.finishFailover(fr, fmt.Errorf("exited before READY: %v; last output: %s", err, fr.last()))
		case <-time.After(time.Until(readyBy)):
			fr.cmd.Cancel()
			<-fr.exited
			r.finishFailover(fr, fmt.Errorf("not READY after 60 s; last output: %s", fr.last()))
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}

	leader, err := cl.leader(ctx)
	if err != nil {
		return "", err
	}
	// KILLING: from the moment a run answers ARMED, its errors are the
	// kill's (a reply broken by the kill can reach it before KILLED does).
	for _, fr := range live {
		io.WriteString(fr.stdin, "KILLING\n")
	}
	armBy := time.After(5 * time.Second)
	for _, fr := range live {
		select {
		case <-fr.armed:
		case err := <-fr.exited:
			fr.exited <- err // judged below
		case <-armBy:
		}
	}
	victim := cl.byAddr(leader)
	killedAt := time.Now()
	victim.kill()
	defer func() { r.terms.plan(killedAt, time.Now()) }()
	for _, fr := range live {
		io.WriteString(fr.stdin, "KILLED\n")
	}
	// The new leader, as the survivors see it.
	var newLeader string
	for time.Since(killedAt) < 30*time.Second {
		if l, err := cl.leader(ctx); err == nil && l != leader {
			newLeader = l
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	elected := time.Since(killedAt)

	for _, fr := range live {
		err := <-fr.exited
		if err != nil {
			err = fmt.Errorf("%v; last output: %s", err, fr.last())
		} else if n := errorsBeforeKill(fr.recoveredLine()); n > 0 {
			// Errors while the cluster was healthy are a failure, unless it
			// changed leader on its own meanwhile.
			if ch := r.terms.unplanned(fr.start, killedAt); len(ch) == 0 {
				err = fmt.Errorf("%d errors before the kill, with no leader change: %s", n, fr.recoveredLine())
			} else {
				fr.note = fmt.Sprintf("%d errors before the kill, during an unplanned leader change (%s)", n, describe(ch))
			}
		}
		r.finishFailover(fr, err)
	}
	note := fmt.Sprintf("SIGKILLed leader %s (%s); survivors agreed on %s after %v",
		victim.name, victim.addr, orNone(newLeader), elected.Round(time.Millisecond))
	if newLeader == "" {
		return note, fmt.Errorf("no new leader within 30 s of the kill")
	}

	if err := victim.start(); err != nil {
		return note, err
	}
	back := time.Now()
	if err := victim.waitUp(ctx, 20*time.Second); err != nil {
		return note, err
	}
	if err := cl.waitSettled(ctx, 30*time.Second); err != nil {
		return note, fmt.Errorf("after restarting %s: %w", victim.name, err)
	}
	note += fmt.Sprintf("; %s restarted and settled as a follower in %v", victim.name, time.Since(back).Round(time.Millisecond))
	// From now on direct clients (and redis-cli) use the restarted node:
	// the after phase checks that it serves, forwards and delivers.
	r.topo.direct = victim.addr
	note += fmt.Sprintf("; the after phase's direct clients use %s (%s)", victim.name, victim.addr)
	return note, nil
}

func (r *runner) finishFailover(fr *failoverRun, err error) {
	result := "ok"
	if err != nil {
		result = err.Error()
	}
	took := time.Since(fr.start)
	fr.c.set(phaseFailover, result, took, fr.path)
	r.progress(fr.c, phaseFailover, result, took)
	if err == nil {
		r.outMu.Lock()
		fmt.Fprintf(r.stdout, "         %s\n", fr.recoveredLine())
		if fr.note != "" {
			fmt.Fprintf(r.stdout, "         note: %s\n", fr.note)
		}
		r.outMu.Unlock()
	}
}

// errorsBeforeKill reads "errors: N before the kill" from a RECOVERED line.
func errorsBeforeKill(line string) int {
	_, rest, ok := strings.Cut(line, "errors: ")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(strings.Fields(rest)[0])
	return n
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// report prints the table and each failure; it returns how many cells
// failed.
func (r *runner) report(cells []*cell, killNote string, took time.Duration) int {
	w := r.stdout
	byKey := map[string]*cell{}
	for _, c := range cells {
		byKey[c.row.name+"\x00"+c.col.name] = c
	}
	width := len("client \\ mode")
	for _, rw := range rows {
		width = max(width, len(rw.name))
	}
	fmt.Fprintf(w, "\ncompat: results (ok: passed; ok+kill: passed before, across and after the leader kill; -: not a mode of this client)\n\n")
	fmt.Fprintf(w, "%-*s", width+2, "client \\ mode")
	for _, col := range columns {
		fmt.Fprintf(w, "%-*s", max(len([]rune(col.name)), 10)+2, col.name)
	}
	fmt.Fprintln(w)
	for _, rw := range rows {
		fmt.Fprintf(w, "%-*s", width+2, rw.name)
		for _, col := range columns {
			text := "-"
			if c, ok := byKey[rw.name+"\x00"+col.name]; ok {
				text = c.summary()
			} else if containsStr(rw.cols, col.name) {
				text = "(not run)"
			}
			fmt.Fprintf(w, "%-*s", max(len([]rune(col.name)), 10)+2, text)
		}
		fmt.Fprintln(w)
	}
	if killNote != "" {
		fmt.Fprintf(w, "\nleader kill: %s\n", killNote)
	}
	failures := 0
	for _, c := range cells {
		if !c.failed() {
			continue
		}
		failures++
		for _, p := range []string{phaseCheck, phaseFailover, phaseAfter} {
			res := c.result(p)
			if res == "" || res == "ok" || res == "skip" {
				continue
			}
			fmt.Fprintf(w, "\nFAIL %s [%s]: %s\n", c.id(), p, res)
			c.mu.Lock()
			path := c.logs[p]
			c.mu.Unlock()
			if path != "" {
				fmt.Fprintf(w, "  log %s, last lines:\n%s", path, tail(path, 12))
			}
		}
	}
	skipped := 0
	for _, c := range cells {
		if c.summary() == "skip" {
			skipped++
		}
	}
	fmt.Fprintf(w, "\ncompat: %d cells in %v\n", len(cells), took.Round(time.Second))
	// The closing line, alone, as CI reads it.
	fmt.Fprintf(w, "compat: %d passed, %d failed", len(cells)-failures-skipped, failures)
	if skipped > 0 {
		fmt.Fprintf(w, ", %d skipped", skipped)
	}
	fmt.Fprintln(w)
	return failures
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")\n"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString("    " + l + "\n")
	}
	return sb.String()
}
