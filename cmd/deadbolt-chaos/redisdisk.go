package main

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/deadbolt/deadbolt/internal/chaos"
)

// The disk faults against Redis + AOF + Sentinel, for comparison: with
// --target redis and --nemesis naming disk-full, disk-full-all,
// corrupt-file or disk-eio, both redis-servers keep an AOF (--appendfsync,
// "always" unless --redis-appendfsync says otherwise) in a directory on a
// tmpfs of its own (with disk-eio, through a FUSE loopback:
// redisdiskeio.go), and the fault loop injects those faults on the
// primary instead of partitions and kills.

// redisDiskNemeses are the disk nemeses run against Redis.
var redisDiskNemeses = []string{"disk-full", "disk-full-all", "corrupt-file", "disk-eio"}

// redisDiskFaults returns the disk nemeses --nemesis names for Redis.
func redisDiskFaults(cfg config) []string {
	var out []string
	for _, n := range splitList(cfg.only) {
		if contains(redisDiskNemeses, n) {
			out = append(out, n)
		}
	}
	return out
}

// redisDisks mounts the servers' directories (mountRedisDisks: with
// disk-eio among the faults, loopbacks over them) and returns them, the
// configuration lines for an AOF there, why there is no loopback if
// disk-eio wanted one, and a function that unmounts them.
func redisDisks(cfg config, dirs []string, faults []string) ([]*redisDisk, string, string, func(), error) {
	size := cfg.dataTmpfs
	if size == 0 {
		size = 256 << 20
	}
	disks, noFUSE, undo, err := mountRedisDisks(dirs, size, contains(faults, "disk-eio"))
	if err != nil {
		return nil, "", "", nil, err
	}
	return disks, fmt.Sprintf("appendonly yes\nappendfsync %s\n", cfg.redisFsync), noFUSE, undo, nil
}

// redisDiskFault injects one disk fault on the primary (its process p,
// its address addr, its directory d; the replica's directory other) and
// returns what it did and how to heal it. nth counts the faults of this
// name before it.
func redisDiskFault(name string, nth int, r *rand.Rand, p *redisProc, addr string, d, other *redisDisk, l *lab) (string, func() string, error) {
	dir := d.dir
	switch name {
	case "disk-eio":
		return redisEIO(p, d, eioModes[nth%len(eioModes)], addr, l)
	case "disk-full", "disk-full-all":
		dirs := []string{d.disk}
		if name == "disk-full-all" {
			dirs = append(dirs, other.disk)
		}
		var ballast []string
		var what []string
		for _, d := range dirs {
			b, free, err := fillDisk(d, 0)
			ballast = append(ballast, b)
			if err != nil {
				return "", nil, err
			}
			what = append(what, fmt.Sprintf("%s %d bytes free", filepath.Base(d), free))
		}
		heal := func() string {
			for _, b := range ballast {
				os.Remove(b)
			}
			alive := "primary still running"
			if !p.running() {
				alive = "primary had exited: " + lastLine(p.logf)
				p.start(l)
			}
			return alive
		}
		return "filled " + strings.Join(what, ", "), heal, nil
	case "corrupt-file":
		p.kill()
		aof, err := newestAOF(dir)
		if err != nil {
			p.start(l)
			return "", nil, err
		}
		st, err := os.Stat(aof)
		if err != nil || st.Size() < 1024 {
			p.start(l)
			return "", nil, fmt.Errorf("no AOF to damage: %v", err)
		}
		var how string
		if r.Intn(2) == 0 {
			cut := 1 + r.Int63n(200)
			how = fmt.Sprintf("cut the last %d bytes of %s", cut, filepath.Base(aof))
			err = os.Truncate(aof, st.Size()-cut)
		} else {
			off := st.Size()/4 + r.Int63n(st.Size()/2)
			how = fmt.Sprintf("flipped a byte at %d of %d in %s", off, st.Size(), filepath.Base(aof))
			err = flip(aof, off)
		}
		if err != nil {
			return "", nil, err
		}
		if err := p.start(l); err != nil {
			return "", nil, err
		}
		time.Sleep(700 * time.Millisecond) // under Sentinel's down-after (1 s)
		outcome := "restarted at once: running"
		if !p.running() {
			outcome = "restarted at once: exited: " + lastLine(p.logf)
		}
		heal := func() string {
			if p.running() {
				return "ran on"
			}
			// The documented repair: redis-check-aof --fix (it cuts the
			// file at the damage), then start it again.
			out, _ := exec.Command("redis-check-aof", "--fix", aof).CombinedOutput()
			p.start(l)
			return "redis-check-aof --fix: " + lastNonEmpty(string(out))
		}
		return "SIGKILL primary, " + how + ", " + outcome, heal, nil
	}
	return "", nil, fmt.Errorf("no Redis counterpart of %s", name)
}

// newestAOF is the incremental AOF file Redis 7 appends to.
func newestAOF(dir string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	if len(m) == 0 {
		return "", errors.New("no incr AOF in " + dir)
	}
	sort.Strings(m)
	return m[len(m)-1], nil
}

func (p *redisProc) running() bool {
	p.mu.Lock()
	done := p.done
	alive := p.cmd != nil
	p.mu.Unlock()
	if !alive {
		return false
	}
	select {
	case <-done:
		p.mu.Lock()
		p.cmd = nil
		p.mu.Unlock()
		return false
	default:
		return true
	}
}

// lastLine is the last line of a log that says something.
func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	return trim(lastNonEmpty(string(b)), 200)
}

func lastNonEmpty(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// outcomeSummary counts outcomes, and the errors by their first word.
func outcomeSummary(ops []chaos.Op) string {
	n := map[chaos.Outcome]int{}
	words := map[string]int{}
	for _, op := range ops {
		n[op.Outcome]++
		if op.Outcome != chaos.OK {
			w, _, _ := strings.Cut(op.Err, " ")
			words[op.Outcome.String()+" "+w]++
		}
	}
	var ws []string
	for w, c := range words {
		ws = append(ws, fmt.Sprintf("%s ×%d", w, c))
	}
	sort.Strings(ws)
	return fmt.Sprintf("%d ok, %d fail, %d info (%s)", n[chaos.OK], n[chaos.Fail], n[chaos.Info], strings.Join(ws, ", "))
}

// window sums up the outcomes of the operations invoked between from and
// to.
func (w *workload) window(from, to int64) string {
	w.mu.Lock()
	var ops []chaos.Op
	for _, op := range w.ops {
		if op.Invoke >= from && op.Invoke <= to {
			ops = append(ops, op)
		}
	}
	w.mu.Unlock()
	return outcomeSummary(ops)
}
