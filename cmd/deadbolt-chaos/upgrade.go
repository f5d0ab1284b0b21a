package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The upgrade nemesis: with --old-bin (an older deadbolt build), it stops
// one node with SIGTERM and starts it again with the other binary: the
// older one after `deadbolt downgrade` on its data directory (run with the
// current binary), or the current one back. The nodes running the current
// binary run with --preserve-downgrade, as docs/OPERATIONS.md has a mixed
// cluster run; flags the older build does not know are left out of its
// command line. Every other fault then meets a cluster of mixed builds.
// Without --old-bin the nemesis is not in the list.

var upgrade = struct {
	mu       sync.Mutex
	old      string          // --old-bin
	oldFlags map[string]bool // the flags the older binary knows
	onOld    map[*node]bool  // nodes the older binary runs
}{onOld: map[*node]bool{}}

func init() {
	nemeses = append(nemeses, nemesis{name: "upgrade",
		what:  "SIGTERM a node and start it with the other build (--old-bin, after deadbolt downgrade; or the current one back)",
		class: "lost-on-failover mixed-builds",
		start: func(ctx context.Context, h *harness) (string, error) {
			// A node the older build runs goes back first: at most one
			// node is on it at a time, and every upgrade is undone.
			n := h.pick(h.db.nodes, 1)[0]
			for _, o := range h.db.nodes {
				if onOlder(o) {
					n = o
				}
			}
			n.kill(syscall.SIGTERM)
			upgrade.mu.Lock()
			toOld := !upgrade.onOld[n]
			upgrade.mu.Unlock()
			if toOld {
				out, err := exec.Command(h.db.bin, "downgrade", "--data-dir", n.dataDir).CombinedOutput()
				if err != nil {
					return "stopped " + n.id + "; deadbolt downgrade failed, it stays on the current build", fmt.Errorf("deadbolt downgrade: %v: %s", err, strings.TrimSpace(string(out)))
				}
			}
			upgrade.mu.Lock()
			upgrade.onOld[n] = toOld
			upgrade.mu.Unlock()
			if toOld {
				return "stopped " + n.id + " (SIGTERM), downgraded its data directory; healing starts it on the older build", nil
			}
			return "stopped " + n.id + " (SIGTERM); healing starts it on the current build", nil
		}})
}

// setupUpgrade takes --old-bin: without it the upgrade nemesis is taken
// out of the list, so no schedule has it.
func setupUpgrade(oldBin string) error {
	if oldBin == "" {
		for i, n := range nemeses {
			if n.name == "upgrade" {
				nemeses = append(nemeses[:i:i], nemeses[i+1:]...)
				break
			}
		}
		return nil
	}
	out, err := exec.Command(oldBin, "--help").CombinedOutput()
	if len(out) == 0 {
		return fmt.Errorf("--old-bin %s: %v", oldBin, err)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--?([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["data-dir"] || !flags["peers"] {
		return errors.New("--old-bin: its --help names no --data-dir and --peers: not a deadbolt binary")
	}
	if oldBin, err = filepath.Abs(oldBin); err != nil {
		return err
	}
	upgrade.old, upgrade.oldFlags = oldBin, flags
	return nil
}

// binaryFor returns the command line (ip netns exec NS BINARY FLAGS...)
// for n's build: the current one with --preserve-downgrade while an older
// build may run, or the older one without the flags it does not know.
func binaryFor(n *node, args []string) []string {
	upgrade.mu.Lock()
	defer upgrade.mu.Unlock()
	if upgrade.old == "" {
		return args
	}
	if !upgrade.onOld[n] {
		return append(args, "--preserve-downgrade")
	}
	out := append([]string(nil), args[:3]...)
	out = append(out, upgrade.old)
	for i := 4; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			continue // a value of a flag left out
		}
		if !upgrade.oldFlags[name] {
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		out = append(out, args[i])
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// onOlderBuild names the nodes the older build runs now ("" for none):
// what a nemesis claims of this build's behaviour (the disk nemeses'
// MISCONF and hand-over) does not hold for them, while the run's checks
// (linearizability, mutual exclusion, no lost write) hold for every build.
func onOlderBuild(nodes []*node) string {
	upgrade.mu.Lock()
	defer upgrade.mu.Unlock()
	var ids []string
	for _, n := range nodes {
		if upgrade.onOld[n] {
			ids = append(ids, n.id)
		}
	}
	return strings.Join(ids, ",")
}

// onOlder reports whether the older build runs n now: the disk nemeses
// leave such a node alone (it knows neither --disk-fail-file nor this
// build's checks of its files).
func onOlder(n *node) bool {
	upgrade.mu.Lock()
	defer upgrade.mu.Unlock()
	return upgrade.onOld[n]
}

// finishUpgrade completes a rolling upgrade the upgrade nemesis left
// half-way: every node the older build runs is stopped with SIGTERM and
// started again with the current build, then a leader is awaited. The
// disk nemeses call it first, so that what this build promises of a disk
// fault (MISCONF, the hand-over, exit on EIO, the file checks) is checked
// every time they run; the mixed cluster still meets every other fault.
// It says which nodes it moved ("" for none).
func (h *harness) finishUpgrade(ctx context.Context) string {
	var moved []string
	for _, n := range h.db.nodes {
		if !onOlder(n) {
			continue
		}
		n.kill(syscall.SIGTERM)
		upgrade.mu.Lock()
		upgrade.onOld[n] = false
		upgrade.mu.Unlock()
		n.mu.Lock()
		removed := n.removed
		n.mu.Unlock()
		if removed {
			continue // healing rejoins it, on the current build
		}
		if err := h.db.start(n, ""); err != nil {
			h.logf("upgrade: start %s on the current build: %v", n.id, err)
		}
		moved = append(moved, n.id)
	}
	if len(moved) == 0 {
		return ""
	}
	if _, err := h.db.waitLeader(ctx, 20*time.Second); err != nil {
		h.logf("upgrade: no leader after moving %s back: %v", strings.Join(moved, ","), err)
	}
	return strings.Join(moved, ",") + " moved back to the current build first; "
}
