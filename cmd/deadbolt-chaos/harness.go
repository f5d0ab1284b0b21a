package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/chaos"
)

// harness is one run against deadbolt.
type harness struct {
	cfg   config
	lab   *lab
	db    *db
	clock *chaos.Clock
	work  *workload
	out   io.Writer
	disk  *diskFaults

	mu         sync.Mutex
	r          *rand.Rand
	jumps      []chaos.ClockJump
	faults     []faultRecord
	violations []chaos.Violation
}

func (h *harness) rng() *rand.Rand {
	h.mu.Lock()
	defer h.mu.Unlock()
	return rand.New(rand.NewSource(h.r.Int63()))
}

func (h *harness) violation(v chaos.Violation) {
	h.mu.Lock()
	h.violations = append(h.violations, v)
	h.mu.Unlock()
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.out, "[%7.2fs] %s\n", time.Duration(h.clock.Now()).Seconds(), fmt.Sprintf(format, args...))
}

func runDeadbolt(ctx context.Context, cfg config, l *lab, stdout io.Writer) (int, error) {
	h := &harness{cfg: cfg, lab: l, clock: chaos.NewClock(), out: stdout, r: rand.New(rand.NewSource(cfg.seed))}
	var extra []string
	extra = append(extra, "--snapshot-threshold", fmt.Sprint(cfg.snapshotThreshold))
	extra = append(extra, strings.Fields(cfg.nodeFlags)...)
	auth := authSecret
	switch {
	case cfg.insecure:
		auth = authNone
	case cfg.tlsCluster:
		auth = authTLS
	}
	d, err := newDB(cfg.bin, l, cfg.nodes, cfg.out, extra, h.logf, auth)
	if err != nil {
		return 2, err
	}
	h.db = d
	h.disk = newDiskFaults(cfg.dataTmpfs)
	defer h.unmountDisks()
	if err := h.mountDisks(); err != nil {
		return 2, err
	}
	d.exited = func(n *node, joining bool, err error) {
		if why := h.disk.expected(n); why != "" {
			h.logf("%s exited: %v, as expected: %s (log %s)", n.id, err, why, n.logf)
			return
		}
		h.logf("%s exited on its own: %v (log %s)", n.id, err, n.logf)
		if !joining { // a join may give up, and is tried again
			h.violation(chaos.Violation{Check: "crash", Detail: fmt.Sprintf("%s exited on its own (%v); see %s", n.id, err, n.logf)})
		}
	}
	defer func() {
		for _, n := range d.nodes {
			n.kill(syscall.SIGKILL)
		}
	}()
	h.logf("deadbolt-chaos: %d nodes, %d clients, faults for %v, seed %d, output in %s", cfg.nodes, cfg.clients, cfg.duration, cfg.seed, cfg.out)
	for _, n := range d.nodes {
		if err := d.start(n, ""); err != nil {
			return 2, err
		}
	}
	if _, err := d.waitLeader(ctx, 30*time.Second); err != nil {
		return 2, fmt.Errorf("cluster did not elect a leader: %w", err)
	}
	h.work = newWorkload(h.clock, cfg, func() []string {
		var a []string
		for _, n := range d.nodes {
			a = append(a, n.addr)
		}
		return a
	})
	wctx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	roles := []string{"lock", "register", "list"}
	for i := 0; i < cfg.clients; i++ {
		c := &client{w: h.work, id: i, role: roles[i%len(roles)], rng: h.rng()}
		if i == cfg.clients-1 && cfg.clients > 3 {
			c.role = "lock" // four lock clients of ten
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.run(wctx) }()
	}
	// Readers: reads served without a log entry (the leader's confirmation
	// round) are what the pause and partition nemeses aim at.
	for i := 0; i < cfg.readers; i++ {
		c := &client{w: h.work, id: cfg.clients + i, role: "reader", rng: h.rng()}
		wg.Add(1)
		go func() { defer wg.Done(); c.run(wctx) }()
	}

	h.runSchedule(ctx)

	h.logf("healing")
	if err := h.heal(context.WithoutCancel(ctx)); err != nil {
		h.logf("heal: %v", err)
	}
	healthy := h.waitHealthy(context.WithoutCancel(ctx), 45*time.Second)
	if !healthy {
		h.violation(chaos.Violation{Check: "liveness", Detail: "the cluster did not recover within 45 s of healing"})
	}
	mark := h.clock.Now()
	h.logf("quiet period %v", cfg.quiet)
	select {
	case <-time.After(cfg.quiet):
	case <-ctx.Done():
	}
	stopClients()
	wg.Wait()
	h.checkProgress(mark)
	fctx := context.WithoutCancel(ctx)
	h.finalReads(fctx)
	h.checkMembers(fctx)
	h.waitApplied(fctx)
	for _, n := range d.nodes {
		n.kill(syscall.SIGKILL)
	}
	return h.check(), nil
}

// runSchedule injects faults until the duration is over.
func (h *harness) runSchedule(ctx context.Context) {
	r := h.rng()
	steps := schedule(r)
	if only := splitList(h.cfg.only); len(only) > 0 {
		steps = nil
		for _, n := range only {
			steps = append(steps, []string{n})
		}
	}
	slot := h.cfg.duration / time.Duration(len(steps))
	if slot < 5*time.Second {
		slot = 5 * time.Second
	}
	end := time.Now().Add(h.cfg.duration)
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		var step []string
		if i < len(steps) {
			step = steps[i]
		} else if only := splitList(h.cfg.only); len(only) > 0 {
			step = []string{only[r.Intn(len(only))]}
		} else {
			step = randomStep(r)
			slot = time.Duration(6+r.Intn(10)) * time.Second
		}
		slotEnd := time.Now().Add(slot)
		// Do not pile faults on a cluster that has not recovered.
		h.db.waitLeader(ctx, 10*time.Second)
		faultFor := slot * 45 / 100
		rec := faultRecord{Name: strings.Join(step, "+"), At: h.clock.Now()}
		var details []string
		for _, name := range step {
			nm, _ := nemesisByName(name)
			d, err := nm.start(ctx, h)
			if err != nil {
				rec.Err = strings.TrimSpace(rec.Err + " " + name + ": " + err.Error())
			}
			details = append(details, d)
		}
		rec.Detail = strings.Join(details, "; ")
		h.logf("fault %s: %s %s", rec.Name, rec.Detail, rec.Err)
		select {
		case <-time.After(faultFor):
		case <-ctx.Done():
		}
		if err := h.heal(context.WithoutCancel(ctx)); err != nil {
			h.logf("heal: %v", err)
			rec.Err = strings.TrimSpace(rec.Err + " heal: " + err.Error())
		}
		rec.Healed = h.clock.Now()
		h.mu.Lock()
		h.faults = append(h.faults, rec)
		h.mu.Unlock()
		select {
		case <-time.After(time.Until(slotEnd)):
		case <-ctx.Done():
		}
	}
}

// waitHealthy waits for a leader that every node agrees on and a write
// through every node.
func (h *harness) waitHealthy(ctx context.Context, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if l, err := h.db.leader(ctx); err == nil {
			ok := true
			for _, n := range h.db.nodes {
				if _, err := n.do(ctx, 2*time.Second, "SET", "chaos:health:"+n.id, l.id); err != nil {
					ok = false
				}
			}
			if ok {
				h.logf("healthy: leader %s", l.id)
				return true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// checkProgress: after healing, every workload must have completed
// operations again.
func (h *harness) checkProgress(since int64) {
	got := map[string]int{}
	h.work.mu.Lock()
	for _, op := range h.work.ops {
		if op.Invoke >= since && op.Outcome == chaos.OK {
			got[op.Kind]++
		}
	}
	h.work.mu.Unlock()
	for _, k := range []string{"register", "list", "lock"} {
		if got[k] == 0 {
			h.violation(chaos.Violation{Check: "liveness", Detail: fmt.Sprintf("no %s operation succeeded in the quiet period after healing", k)})
		}
	}
}

// finalReads reads every register, list and guard key through every node
// and adds the reads to the history.
func (h *harness) finalReads(ctx context.Context) {
	keys := map[string]string{}
	h.work.mu.Lock()
	for _, op := range h.work.ops {
		if op.Kind == "register" || op.Kind == "list" {
			keys[op.Key] = op.Kind
		}
	}
	h.work.mu.Unlock()
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, l := range h.work.locks {
		sorted = append(sorted, l+":guard")
		keys[l+":guard"] = "guard-final"
	}
	for _, n := range h.db.nodes {
		c := redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true,
			DialTimeout: time.Second, ReadTimeout: 3 * time.Second, PoolSize: 1, ContextTimeoutEnabled: true})
		for _, k := range sorted {
			op := chaos.Op{Process: -1, Kind: keys[k], F: "read", Via: "plain", Key: k, Node: n.id, Final: true}
			for try := 0; try < 5; try++ {
				h.clock.Do(ctx, &op, func(ctx context.Context) error {
					if op.Kind != "register" {
						var err error
						op.Elems, err = c.LRange(ctx, k, 0, -1).Result()
						return err
					}
					v, err := c.Get(ctx, k).Result()
					if err == redis.Nil {
						op.Exists = false
						return nil
					}
					op.Value, op.Exists = v, err == nil
					return err
				})
				if op.Outcome == chaos.OK {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			h.work.record(op)
			if op.Outcome != chaos.OK {
				// One node that cannot serve would otherwise cost every
				// key its retries: minutes, on a long run.
				h.violation(chaos.Violation{Check: "liveness", Detail: fmt.Sprintf("final read of %s through %s failed: %s (the node's other final reads skipped)", k, n.id, op.Err)})
				break
			}
		}
		c.Close()
	}
}

// checkMembers: every node must report the same configuration, with every
// node in it.
func (h *harness) checkMembers(ctx context.Context) {
	var all []string
	for _, n := range h.db.nodes {
		all = append(all, n.id)
	}
	sort.Strings(all)
	want := strings.Join(all, ",")
	for _, n := range h.db.nodes {
		var got string
		var err error
		for try := 0; try < 20; try++ {
			var m []string
			if m, err = n.memberList(ctx); err == nil {
				if got = strings.Join(m, ","); got == want {
					break
				}
			}
			time.Sleep(250 * time.Millisecond)
		}
		if got != want {
			h.violation(chaos.Violation{Check: "membership", Detail: fmt.Sprintf("%s reports members [%s] (err %v), want [%s]", n.id, got, err, want)})
		}
	}
}

// waitApplied waits (a few seconds at most) until every node has applied
// the same index, so their logs can be compared.
func (h *harness) waitApplied(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		seen := map[string]bool{}
		for _, n := range h.db.nodes {
			r, err := n.do(ctx, time.Second, "DEADBOLT.APPLIED")
			seen[fmt.Sprint(r, err)] = true
		}
		if len(seen) == 1 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check runs every checker and writes the report; it returns the exit
// code.
func (h *harness) check() int {
	w := h.work
	var vs []chaos.Violation
	h.mu.Lock()
	vs = append(vs, h.violations...)
	h.mu.Unlock()

	lin := map[string]chaos.LinearResult{}
	for _, kind := range []string{"register", "list"} {
		r := chaos.CheckLinear(w.ops, kind, h.cfg.checkTimeout)
		lin[kind] = r
		switch r.Result {
		case "Illegal":
			vs = append(vs, chaos.Violation{Check: "linearizable-" + kind, Detail: fmt.Sprintf("not linearizable: keys %v (see %s-linear.html)", r.Bad, kind)})
			r.Visualize(filepath.Join(h.cfg.out, kind+"-linear.html"))
		case "Unknown":
			h.logf("%s: linearizability check timed out (unknown, not counted as a violation)", kind)
		}
	}
	vs = append(vs, chaos.CheckMutex(w.sections, h.jumps)...)
	for _, lock := range w.locks {
		vs = append(vs, chaos.CheckGuards(lock, h.guardList(lock), w.sections)...)
	}
	// Every node answered the same final reads (there were no writes).
	finals := map[string]map[string][]string{}
	for _, op := range w.ops {
		if op.Final && op.Outcome == chaos.OK {
			if finals[op.Key] == nil {
				finals[op.Key] = map[string][]string{}
			}
			v := fmt.Sprintf("%v|%q|%q", op.Exists, op.Value, op.Elems)
			finals[op.Key][v] = append(finals[op.Key][v], op.Node)
		}
	}
	for k, m := range finals {
		if len(m) > 1 {
			vs = append(vs, chaos.Violation{Check: "final-reads-differ", Detail: fmt.Sprintf("%s read differently through different nodes: %v", k, m)})
		}
	}
	// Convergence: replay every node's log and snapshots.
	scratch, _ := os.MkdirTemp("", "deadbolt-chaos-replay-")
	defer os.RemoveAll(scratch)
	snaps := map[string][]chaos.SnapState{}
	last := map[string]uint64{}
	for _, n := range h.db.nodes {
		st := chaos.ReadNode(n.id, n.dataDir, scratch, nil)
		snaps[n.id], last[n.id] = st.Snapshots, st.Last
	}
	targets := chaos.Targets(snaps, last)
	var states []chaos.NodeState
	for _, n := range h.db.nodes {
		states = append(states, chaos.ReadNode(n.id, n.dataDir, scratch, targets))
	}
	cv, common := chaos.CheckConverge(states)
	vs = append(vs, cv...)
	// Node logs.
	for _, n := range h.db.nodes {
		bad, err := chaos.ScanLog(n.logf, 20)
		if err != nil {
			vs = append(vs, chaos.Violation{Check: "node-log", Detail: fmt.Sprintf("%s: %v", n.id, err)})
		}
		for _, line := range bad {
			vs = append(vs, chaos.Violation{Check: "node-log", Detail: fmt.Sprintf("%s: %s", n.id, line)})
		}
	}
	return h.report(vs, lin, states, common)
}

// guardList is the final read of a lock's guard list (through the first
// node that answered).
func (h *harness) guardList(lock string) []string {
	for _, op := range h.work.ops {
		if op.Kind == "guard-final" && op.Key == lock+":guard" && op.Outcome == chaos.OK {
			return op.Elems
		}
	}
	return nil
}

func (h *harness) report(vs []chaos.Violation, lin map[string]chaos.LinearResult, states []chaos.NodeState, common uint64) int {
	w := h.work
	cfg := h.cfg
	var b strings.Builder
	fmt.Fprintf(&b, "deadbolt chaos report\n=====================\n")
	fmt.Fprintf(&b, "nodes %d, clients %d, faults for %v, seed %d, lease %v, snapshot threshold %d\n",
		cfg.nodes, cfg.clients, cfg.duration, cfg.seed, cfg.lease, cfg.snapshotThreshold)
	counts := map[string]map[chaos.Outcome]int{}
	for _, op := range w.ops {
		k := op.Kind + " " + op.F
		if op.Final {
			k += " (final)"
		}
		if counts[k] == nil {
			counts[k] = map[chaos.Outcome]int{}
		}
		counts[k][op.Outcome]++
	}
	var kinds []string
	total := 0
	for k, m := range counts {
		kinds = append(kinds, k)
		total += m[chaos.OK] + m[chaos.Fail] + m[chaos.Info]
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "\noperations: %d\n", total)
	for _, k := range kinds {
		m := counts[k]
		fmt.Fprintf(&b, "  %-26s ok %6d  fail %5d  info %5d\n", k, m[chaos.OK], m[chaos.Fail], m[chaos.Info])
	}
	renewals, guards := 0, 0
	for _, s := range w.sections {
		renewals += s.Renewals
		guards += len(s.Guards)
	}
	fmt.Fprintf(&b, "lock: %d critical sections on %d locks, %d renewals, %d fenced writes\n", len(w.sections), len(w.locks), renewals, guards)
	for _, kind := range []string{"register", "list"} {
		r := lin[kind]
		fmt.Fprintf(&b, "linearizability of %s: %s (%d operations on %d keys checked)\n", kind, r.Result, r.Ops, r.Keys)
	}
	fmt.Fprintf(&b, "convergence: logs and snapshots of %d nodes replayed, compared at index %d:", len(states), common)
	for _, s := range states {
		fmt.Fprintf(&b, " %s[log %d..%d, %d snapshots]", s.ID, s.First, s.Last, len(s.Snapshots))
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "\nfaults injected: %d\n", len(h.faults))
	names := map[string]int{}
	for _, f := range h.faults {
		for _, n := range strings.Split(f.Name, "+") {
			names[n]++
		}
		fmt.Fprintf(&b, "  %7.2fs-%7.2fs %-40s %s %s\n", time.Duration(f.At).Seconds(), time.Duration(f.Healed).Seconds(), f.Name, f.Detail, f.Err)
	}
	var missing []string
	for _, n := range nemeses {
		if names[n.name] == 0 {
			missing = append(missing, n.name)
		}
	}
	if len(missing) > 0 && cfg.only == "" {
		fmt.Fprintf(&b, "  not injected (run longer): %s\n", strings.Join(missing, ", "))
	}
	var real, explained []chaos.Violation
	for _, v := range vs {
		if v.Explained != "" {
			explained = append(explained, v)
		} else {
			real = append(real, v)
		}
	}
	fmt.Fprintf(&b, "\nviolations: %d\n", len(real))
	for _, v := range real {
		fmt.Fprintf(&b, "  [%s] %s\n", v.Check, v.Detail)
	}
	if len(explained) > 0 {
		fmt.Fprintf(&b, "\nexpected under an injected forward clock jump of the leader (the lease assumes the leader's clock runs at real speed; see docs/SAFETY.md): %d\n", len(explained))
		for _, v := range explained {
			fmt.Fprintf(&b, "  [%s] %s — %s\n", v.Check, v.Detail, v.Explained)
		}
	}
	verdict := "PASS"
	code := 0
	if len(real) > 0 {
		verdict, code = "FAIL", 1
	}
	fmt.Fprintf(&b, "\n%s: %d operations, %d faults, %d violations (output in %s)\n", verdict, total, len(h.faults), len(real), cfg.out)
	fmt.Fprint(h.out, b.String())
	os.WriteFile(filepath.Join(cfg.out, "report.txt"), []byte(b.String()), 0o644)
	h.writeJSON("history.jsonl", w.ops)
	h.writeJSON("sections.jsonl", w.sections)
	h.writeJSON("faults.jsonl", h.faults)
	return code
}

func (h *harness) writeJSON(name string, v any) {
	f, err := os.Create(filepath.Join(h.cfg.out, name))
	if err != nil {
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	switch s := v.(type) {
	case []chaos.Op:
		for _, x := range s {
			enc.Encode(x)
		}
	case []chaos.Section:
		for _, x := range s {
			enc.Encode(x)
		}
	case []faultRecord:
		for _, x := range s {
			enc.Encode(x)
		}
	}
}
