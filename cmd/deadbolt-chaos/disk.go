package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/chaos"
	"github.com/deadbolt/deadbolt/internal/faultfs"
)

// Disk faults on real file systems. Each node's data directory lies on a
// tmpfs of its own (mounted by the harness in its mount namespace, which
// the nodes' `ip netns exec` inherits; it goes away with the harness even
// if the harness is killed), so a ballast file really fills it. A failing
// disk is a FUSE loopback over that tmpfs whose fsyncs fail with EIO in
// the kernel (diskfuse.go), or, without FUSE, the nodes' test-only
// --disk-fail-file, which injects the EIO under raftlog's fdatasync, above
// the file system: this kernel has no device-mapper (no error/flakey
// targets). Damaged files are real bytes
// flipped in, or cut from, a stopped node's files.
//
// What each nemesis checks while it runs (besides the run's own checks,
// which stay the same: linearizability, mutual exclusion, guard lists,
// convergence, node logs):
//
//   - disk-full-all, and disk-full of every follower: every node's disk
//     (or every follower's: no quorum has room) full or below
//     --min-free-disk. A write through every node must get MISCONF (never
//     a timeout or "outcome unknown"), a read through every node must
//     answer.
//   - disk-full on the leader: another node must lead within 10 s (the
//     leader hands over to a member with space).
//   - disk-eio: the node must exit with status 1 within 10 s, its log
//     naming a file of its data directory and the I/O error.
//   - corrupt-file: the node either starts (the damage is repaired: a cut
//     tail caught up, a damaged snapshot moved aside, the other slot of the
//     stable file) or exits 1 with a message naming the damaged file; a
//     damage that must be refused (the stable file cut or removed, a record
//     in the middle of the log) must be. A refused node is repaired at
//     healing the documented way: RAFT REMOVE, the directory wiped, --join.

// diskFaults is the disk nemeses' state.
type diskFaults struct {
	size int64 // bytes of each node's tmpfs; 0: none mounted

	mu       sync.Mutex
	mounted  []string              // mount points
	ballast  map[*node]string      // ballast files to remove at healing
	expect   map[*node]string      // nodes whose exit the harness caused, and why
	refused  map[*node]string      // nodes that refused to start over damage: repaired at healing
	outcomes map[string]int        // corrupt-file: "kind started|refused" counts, for the report
	fuse     map[*node]*faultfs.FS // each node's loopback over its tmpfs (diskfuse.go)
	noFUSE   string                // why there are none
}

func newDiskFaults(size int64) *diskFaults {
	return &diskFaults{size: size, ballast: map[*node]string{}, expect: map[*node]string{},
		refused: map[*node]string{}, outcomes: map[string]int{}, fuse: map[*node]*faultfs.FS{}}
}

// expected says why n's exit is the harness's doing ("" if it is not).
func (d *diskFaults) expected(n *node) string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.expect[n]
}

func (d *diskFaults) setExpect(n *node, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if why == "" {
		delete(d.expect, n)
	} else {
		d.expect[n] = why
	}
}

// mountDisks gives every node's data directory a tmpfs of its own: the
// mount point is the node's directory's "disk", the data directory a
// directory inside it (so that wiping it leaves the mount point, and the
// ballast file lies beside it, on the same file system, not in it).
func (h *harness) mountDisks() error {
	d := h.disk
	if d.size == 0 {
		return nil
	}
	for _, n := range h.db.nodes {
		mp := filepath.Join(n.dir, "disk")
		if err := os.MkdirAll(mp, 0o755); err != nil {
			return err
		}
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", d.size), "tmpfs", mp).CombinedOutput()
		if err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %v: %s", mp, err, strings.TrimSpace(string(out)))
		}
		d.mu.Lock()
		d.mounted = append(d.mounted, mp)
		d.mu.Unlock()
		n.dataDir = filepath.Join(mp, "data")
		if d.noFUSE == "" {
			if err := h.mountFUSE(n, mp); err != nil {
				d.noFUSE = err.Error()
				h.logf("no FUSE loopback under the data directories (disk-eio uses --disk-fail-file): %v", err)
			}
		}
	}
	if d.noFUSE != "" {
		// All or none: a node with a loopback keeps its data behind it.
		for _, n := range h.db.nodes {
			if d.fuseOf(n) != nil {
				n.dataDir = filepath.Join(n.dir, "disk", "data")
			}
		}
		h.unmountFUSE()
	}
	return nil
}

// unmountDisks stops every node, copies each data directory off its tmpfs
// (to the node's directory's "data", so the output keeps it) and unmounts.
func (h *harness) unmountDisks() {
	d := h.disk
	if d == nil || d.size == 0 {
		return
	}
	for _, n := range h.db.nodes {
		n.kill(syscall.SIGKILL)
	}
	h.unmountFUSE()
	d.mu.Lock()
	mounted := d.mounted
	d.mounted = nil
	d.mu.Unlock()
	for _, mp := range mounted {
		dst := filepath.Join(filepath.Dir(mp), "data")
		if _, err := os.Stat(filepath.Join(mp, "data")); err == nil {
			os.RemoveAll(dst)
			if out, err := exec.Command("cp", "-a", filepath.Join(mp, "data"), dst).CombinedOutput(); err != nil {
				h.logf("copy %s off its tmpfs: %v: %s", mp, err, out)
			}
		}
		if out, err := exec.Command("umount", mp).CombinedOutput(); err != nil {
			h.logf("umount %s: %v: %s", mp, err, out)
		}
	}
}

var diskNemeses = []nemesis{
	{name: "disk-full", what: "fill one node's data file system (a tmpfs of its own), or one time in three every follower's, with a ballast file, to the last byte or to 1 MiB free (below --min-free-disk); healing removes it", class: "disk-full",
		start: upgraded(func(ctx context.Context, h *harness) (string, error) { return h.diskFull(ctx, false) })},
	{name: "disk-full-all", what: "fill every node's data file system at once (each to the last byte or to 1 MiB free); writes must get MISCONF, reads answer", class: "disk-full",
		start: upgraded(func(ctx context.Context, h *harness) (string, error) { return h.diskFull(ctx, true) })},
	{name: "disk-eio", what: "a node's next log sync fails with EIO (the kernel's, through a FUSE loopback under its data directory; without FUSE, --disk-fail-file; no device-mapper here); it must exit 1 naming the file; healing restarts it on a working disk", class: "io-error",
		start: upgraded(func(ctx context.Context, h *harness) (string, error) { return h.diskEIO(ctx) })},
	{name: "corrupt-file", what: "stop a node, flip bytes in or cut one of its files (log segment tail or middle, stable file, log meta, newest snapshot), restart it: it repairs itself or refuses naming the file; healing repairs a refused one (RAFT REMOVE, wipe, --join)", class: "corrupt-log corrupt-stable corrupt-snapshot",
		start: upgraded(func(ctx context.Context, h *harness) (string, error) { return h.corruptFile(ctx) })},
}

func init() { nemeses = append(nemeses, diskNemeses...) }

// upgraded runs a disk nemesis on a cluster that the current build runs
// throughout (finishUpgrade, upgrade.go).
func upgraded(f func(context.Context, *harness) (string, error)) func(context.Context, *harness) (string, error) {
	return func(ctx context.Context, h *harness) (string, error) {
		moved := h.finishUpgrade(ctx)
		d, err := f(ctx, h)
		return moved + d, err
	}
}

// statfsFree is the bytes free for an unprivileged writer on path's file
// system.
func statfsFree(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// fillDisk grows the ballast file in mp, a mount point, until leave
// bytes are free (0: until a write fails with ENOSPC).
func fillDisk(mp string, leave int64) (string, int64, error) {
	path := filepath.Join(mp, "ballast")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return path, 0, err
	}
	defer f.Close()
	// The node takes and frees space meanwhile (a spare segment being
	// written, a snapshot, a compaction), and a tmpfs allocates all or
	// nothing: measure again and retry on ENOSPC.
	for try := 0; try < 50; try++ {
		free, err := statfsFree(mp)
		if err != nil {
			return path, 0, err
		}
		grow := free - leave
		if grow <= 0 {
			break
		}
		st, err := f.Stat()
		if err != nil {
			return path, 0, err
		}
		if err := syscall.Fallocate(int(f.Fd()), 0, st.Size(), grow); err != nil && !errors.Is(err, syscall.ENOSPC) {
			return path, 0, fmt.Errorf("fallocate %s: %w", path, err)
		}
	}
	if leave == 0 {
		// The node may have freed or taken space meanwhile: write until
		// the file system refuses.
		buf := make([]byte, 4096)
		for i := 0; i < 1<<16; i++ {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					return path, 0, err
				}
				break
			}
		}
	}
	free, err := statfsFree(mp)
	if err == nil && free > leave+(4<<20) {
		return path, free, fmt.Errorf("could not fill %s: %d bytes still free", mp, free)
	}
	return path, free, err
}

func (h *harness) diskFull(ctx context.Context, all bool) (string, error) {
	d := h.disk
	if d.size == 0 {
		return "", errors.New("no tmpfs under the data directories (--data-tmpfs 0)")
	}
	l, _ := h.db.leader(ctx)
	r := h.rng()
	targets := h.db.nodes
	followers := false
	if !all {
		targets = h.pick(h.db.nodes, 1)
		if l != nil && r.Intn(3) == 0 {
			// Every follower: the leader has room, no quorum has.
			targets, followers = h.db.others(l), true
		}
	}
	var what []string
	for _, n := range targets {
		leave := int64(1 << 20)
		if r.Intn(2) == 0 {
			leave = 0
		}
		path, free, err := fillDisk(filepath.Dir(n.dataDir), leave)
		d.mu.Lock()
		d.ballast[n] = path
		d.mu.Unlock()
		if err != nil {
			return strings.Join(what, ", "), err
		}
		what = append(what, fmt.Sprintf("%s %d bytes free", n.id, free))
	}
	detail := "filled " + strings.Join(what, ", ")
	if old := onOlderBuild(h.db.nodes); old != "" {
		// The older build (upgrade) knows no --min-free-disk: it appends
		// until its disk is really full, so what this build promises on
		// a full disk is not checked; the run's own checks still are.
		return detail + "; " + old + " on the older build: MISCONF and hand-over not checked", nil
	}
	if all || followers {
		if followers {
			detail += " (every follower)"
		}
		return detail + "; " + h.probeFull(ctx), nil
	}
	if n := targets[0]; n == l {
		// A leader short of space hands over to a member with space.
		const limit = 10 * time.Second
		nl, took := h.otherLeader(ctx, l, limit)
		if nl == nil {
			h.violation(chaos.Violation{Check: "disk-full", Detail: fmt.Sprintf("leader %s's disk filled, and no other node led within %v", l.id, limit)})
			return detail + " (the leader); no other node led", nil
		}
		detail += fmt.Sprintf(" (the leader); %s led %v later", nl.id, took)
	}
	return detail, nil
}

// probeFull: with no quorum of disks with room, a write through every node gets
// MISCONF (within a few seconds: each node reads its free space every
// 100 ms) and never an indeterminate error; a read through every node
// answers.
func (h *harness) probeFull(ctx context.Context) string {
	var res []string
	for _, n := range h.db.nodes {
		if !n.usable() {
			continue
		}
		var last string
		misconf := false
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
			_, err := n.do(ctx, 3*time.Second, "SET", "chaos:disk-full:"+n.id, time.Now().UnixNano())
			switch {
			case err == nil:
				last = "OK"
				time.Sleep(100 * time.Millisecond)
				continue
			case strings.HasPrefix(err.Error(), "MISCONF"):
				misconf = true
			case chaos.Classify(err) == chaos.Info:
				h.violation(chaos.Violation{Check: "disk-full", Detail: fmt.Sprintf("no quorum with disk space: a write through %s got an indeterminate error, not MISCONF: %v", n.id, err)})
			}
			last = err.Error()
			break
		}
		_, gerr := n.do(ctx, 3*time.Second, "GET", "chaos:disk-full:"+n.id)
		if gerr != nil && !errors.Is(gerr, redis.Nil) {
			h.violation(chaos.Violation{Check: "disk-full", Detail: fmt.Sprintf("no quorum with disk space: a read through %s failed: %v", n.id, gerr)})
		}
		if !misconf {
			if last == "OK" {
				h.violation(chaos.Violation{Check: "disk-full", Detail: fmt.Sprintf("no quorum with disk space, and a write through %s was still taken 5 s later", n.id)})
			}
			last = "no MISCONF within 5 s, last: " + last
		} else {
			last = "MISCONF"
		}
		res = append(res, fmt.Sprintf("%s write %s, read %v", n.id, trim(last, 60), errText(gerr)))
	}
	return strings.Join(res, "; ")
}

func errText(err error) string {
	if err == nil || errors.Is(err, redis.Nil) {
		return "ok"
	}
	return trim(err.Error(), 60)
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// diskEIO makes a node's log syncs fail (its segments', or through FUSE
// sometimes its stable file's): the leader or a follower.
func (h *harness) diskEIO(ctx context.Context) (string, error) {
	l, err := h.db.leader(ctx)
	if err != nil {
		return "", err
	}
	n := l
	if h.rng().Intn(2) == 0 || onOlder(l) {
		var current []*node
		for _, o := range h.db.others(l) {
			if !onOlder(o) {
				current = append(current, o)
			}
		}
		if len(current) == 0 {
			if onOlder(l) {
				return "every node on the older build: no disk-eio", nil
			}
		} else {
			n = h.pick(current, 1)[0]
		}
	}
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return "", fmt.Errorf("%s is not running", n.id)
	}
	h.disk.setExpect(n, "its disk fails (disk-eio)")
	how := "FUSE: the kernel's EIO"
	if f := h.disk.fuseOf(n); f != nil {
		// One time in three the stable file instead of the segments:
		// its synced mark is synced about once a second under writes,
		// and an election saves raft's term there.
		pattern := segments
		if h.rng().Intn(3) == 0 {
			pattern = stableFile
			how = "FUSE: the kernel's EIO, on log/stable"
		}
		f.FailSync(pattern)
	} else {
		how = "--disk-fail-file"
		if err := os.WriteFile(n.failFile, nil, 0o644); err != nil {
			return "", err
		}
	}
	role := "follower"
	if n == l {
		role = "leader"
	}
	const limit = 10 * time.Second
	select {
	case <-done:
	case <-time.After(limit):
		h.violation(chaos.Violation{Check: "disk-eio", Detail: fmt.Sprintf("%s (%s) still runs %v after its log syncs began to fail", n.id, role, limit)})
		return fmt.Sprintf("%s's (%s) syncs fail (%s); it did not stop", n.id, role, how), nil
	}
	code := cmd.ProcessState.ExitCode()
	out := lastStart(n.logf)
	ok := code == 1 && strings.Contains(out, "input/output error") && strings.Contains(out, n.dataDir)
	if !ok {
		h.violation(chaos.Violation{Check: "disk-eio", Detail: fmt.Sprintf("%s exited %d after its syncs failed, want 1 with a message naming a file of %s and the I/O error (see %s)", n.id, code, n.dataDir, n.logf)})
	}
	return fmt.Sprintf("%s's (%s) log syncs fail with EIO (%s): exited %d, %s", n.id, role, how, code, trim(strings.ReplaceAll(failLine(out, n.dataDir), n.dataDir+"/", ""), 160)), nil
}

// lastStart is what n's log holds since the harness last started it.
func lastStart(path string) string {
	b, _ := os.ReadFile(path)
	s := string(b)
	if i := strings.LastIndex(s, "=== harness: start"); i >= 0 {
		s = s[i:]
	}
	return s
}

// failLine is the process's last word (its "deadbolt: ..." line) if it
// names path, else the first error line that does.
func failLine(out, path string) string {
	var logged string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case !strings.Contains(line, path):
		case strings.HasPrefix(line, "deadbolt:"):
			return strings.TrimSpace(line)
		case logged == "" && strings.Contains(line, "level=ERROR"):
			logged = strings.TrimSpace(line)
		}
	}
	if logged == "" {
		return "(no line names " + path + ")"
	}
	return logged
}

// healDisks ends the disk faults before healing restarts nodes: ballast
// and failure files removed, and every node that refused to start over a
// damaged file taken out of the configuration, so that healing wipes it
// and joins it again.
func (h *harness) healDisks(ctx context.Context) []string {
	d := h.disk
	if d == nil {
		return nil
	}
	var errs []string
	d.mu.Lock()
	ballast := d.ballast
	d.ballast = map[*node]string{}
	refused := d.refused
	d.refused = map[*node]string{}
	d.mu.Unlock()
	for _, p := range ballast {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err.Error())
		}
	}
	d.clearFUSE()
	for _, n := range h.db.nodes {
		if err := os.Remove(n.failFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err.Error())
		}
	}
	for n, file := range refused {
		// Kept for a post-mortem, off the tmpfs: healing wipes it.
		keep := filepath.Join(n.dir, fmt.Sprintf("damaged-%d", time.Duration(h.clock.Now()).Milliseconds()))
		if out, err := exec.Command("cp", "-a", n.dataDir, keep).CombinedOutput(); err != nil {
			h.logf("keep %s's damaged data directory: %v: %s", n.id, err, out)
		}
		if err := h.removeRefused(ctx, n); err != nil {
			errs = append(errs, fmt.Sprintf("repair %s (refused over %s): %v", n.id, file, err))
			d.mu.Lock()
			d.refused[n] = file // tried again at the next healing
			d.mu.Unlock()
			continue
		}
		h.logf("repairing %s, which refused to start over %s: removed from the configuration; healing wipes it and joins it again", n.id, file)
	}
	return errs
}

// removeRefused is the first step of the documented repair of a node that
// refuses its damaged data directory: RAFT REMOVE through the leader.
// Healing then wipes the directory and starts the node with --join.
func (h *harness) removeRefused(ctx context.Context, n *node) error {
	var err error
	for try := 0; try < 5 && ctx.Err() == nil; try++ {
		var l *node
		if l, err = h.db.waitLeader(ctx, 10*time.Second); err != nil {
			continue
		}
		var members []string
		if members, err = l.memberList(ctx); err == nil && !contains(members, n.id) {
			break
		}
		if _, err = l.do(ctx, 7*time.Second, "RAFT", "REMOVE", n.id); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.removed = true
	n.mu.Unlock()
	return nil
}

// healedDisks: the nodes healing has started again are no longer expected
// to exit.
func (h *harness) healedDisks() {
	if h.disk == nil {
		return
	}
	h.disk.mu.Lock()
	defer h.disk.mu.Unlock()
	for n := range h.disk.expect {
		if _, still := h.disk.refused[n]; !still && n.alive() {
			delete(h.disk.expect, n)
		}
	}
}
