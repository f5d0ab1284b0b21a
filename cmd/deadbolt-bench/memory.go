package main

// -memory: what a node takes to hold many Redisson locks, against
// redis-server holding the same (issue 19 item 3). Each lock is what
// Redisson's lock script leaves behind: a hash with one
// "<client uuid>:<thread id>" field set to 1 and a lease (HSET, PEXPIRE),
// sent as redis-cli --pipe sends a file, to a bin/deadbolt process (a
// single node in memory, its default settings) and to redis-server
// (no persistence) in the same run. Then, after -memory-settle, it reads
// each process's resident set (VmRSS in /proc/<pid>/status) and INFO's
// used_memory. With -memory-restart it also times a restart from a
// snapshot (restartTime): a single node with --data-dir holding the locks
// takes a snapshot, is killed and started again, and the time until it
// answers DBSIZE with every key is reported.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/fsm"
)

// memRow is one server's figures for one number of locks.
type memRow struct {
	locks     int
	rss, used int64
	load      time.Duration
}

func runMemory(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	bin, err := exec.LookPath(cfg.deadboltBin)
	if err != nil {
		return fmt.Errorf("deadbolt: %w (run make build, or pass -deadbolt-bin)", err)
	}
	root, err := os.MkdirTemp(cfg.workDir, "deadbolt-bench-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "Redisson lock hashes (HSET <name> <uuid>:<thread> 1, PEXPIRE %d), loaded by pipeline; memory %v after the load\n", cfg.memLease.Milliseconds(), cfg.memSettle)
	fmt.Fprintln(w, "locks\tserver\tRSS MB\tused_memory MB\tRSS B/lock\tused B/lock\tload s\t")
	for _, n := range cfg.memLocks {
		var rows [2]memRow
		for i, name := range []string{"redis", "deadbolt"} {
			fmt.Fprintf(stderr, "memory: %d locks into %s\n", n, name)
			var addr string
			var stop func()
			if name == "redis" {
				addr, stop, err = startRedis(ctx, cfg.redisServer, redisNoPersistence)
			} else {
				addr, stop, err = startDeadboltMem(ctx, bin, root, cfg.memArgs)
			}
			if err != nil {
				return err
			}
			rows[i], err = memoryOf(ctx, addr, n, cfg)
			stop()
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		for i, name := range []string{"redis", "deadbolt"} {
			r := rows[i]
			fmt.Fprintf(w, "%d\t%s\t%.1f\t%.1f\t%d\t%d\t%.2f\t\n", n, name, mb(r.rss), mb(r.used), r.rss/int64(n), r.used/int64(n), r.load.Seconds())
		}
		fmt.Fprintf(w, "%d\tdeadbolt/redis\t%.2f\t%.2f\t\t\t\t\n", n, float64(rows[1].rss)/float64(rows[0].rss), float64(rows[1].used)/float64(rows[0].used))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if cfg.memRestart > 0 {
		fmt.Fprintf(stderr, "memory: restart of a node with %d locks\n", cfg.memRestart)
		d, cpu, snap, err := restartTime(ctx, bin, root, cfg)
		if err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		fmt.Fprintf(stdout, "restart of a single node with %d locks from its snapshot (%.1f MB of snapshot files): serving every key after %.2f s, %.2f s of CPU (load average %s)\n",
			cfg.memRestart, mb(snap), d.Seconds(), cpu.Seconds(), loadAverage())
	}
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// startDeadboltMem starts bin/deadbolt as a single node in memory with its
// default settings (and extra arguments).
func startDeadboltMem(ctx context.Context, bin, root string, extra []string) (string, func(), error) {
	ports, err := freePorts(1)
	if err != nil {
		return "", nil, err
	}
	addr := loopback(ports[0])
	p, err := startProc("deadbolt-mem", root, 0, bin, append([]string{"--addr", addr, "--log-level", "warn"}, extra...)...)
	if err != nil {
		return "", nil, err
	}
	if err := waitServing(ctx, addr, p, 30*time.Second, -1); err != nil {
		p.stop()
		return "", nil, err
	}
	return addr, p.stop, nil
}

// waitServing waits until addr answers DBSIZE (with keys keys, unless
// keys < 0).
func waitServing(ctx context.Context, addr string, p *proc, limit time.Duration, keys int64) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rc.Close()
	deadline := time.Now().Add(limit)
	for {
		// Dial first: go-redis logs every failed dial of its pool.
		var n int64
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			n, err = rc.DBSize(ctx).Result()
			if err == nil && (keys < 0 || n == keys) {
				return nil
			}
		}
		if e := p.exitErr(); e != nil {
			return e
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not serving %d keys after %v: %d keys, %v", addr, keys, limit, n, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// lockOwners are the client ids of the locks: Redisson's field is the
// client's UUID, then ':' and the thread id.
var lockOwners = []string{
	"b4e7c0a2-1d2c-4b8e-9f3a-7c6d5e4f3a2b", "0f6e2a91-55c3-4d0e-8a7b-3c2d1e0f9a8b",
	"7d1c9e3f-2a4b-4c6d-9e8f-0a1b2c3d4e5f", "e2a4c6b8-9d0f-4e1a-b3c5-d7e9f1a3b5c7",
}

// loadLocks sends n locks' commands to addr pipelined in batches of
// loadBatch locks (a batch's replies are read before the next is sent, so
// that a node with its data on disk is not handed millions of proposals at
// once), as redis-cli --pipe sends a file.
func loadLocks(ctx context.Context, addr string, n int, lease time.Duration) (time.Duration, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	start := time.Now()
	r := bufio.NewReaderSize(conn, 1<<16)
	bw := bufio.NewWriterSize(conn, 1<<16)
	ms := strconv.FormatInt(lease.Milliseconds(), 10)
	for from := 0; from < n; from += loadBatch {
		to := min(from+loadBatch, n)
		for i := from; i < to; i++ {
			key := "lock:entity:" + strconv.Itoa(i)
			field := lockOwners[i%len(lockOwners)] + ":" + strconv.Itoa(40+i%96)
			writeCommand(bw, "HSET", key, field, "1")
			writeCommand(bw, "PEXPIRE", key, ms)
		}
		if err := bw.Flush(); err != nil {
			return 0, err
		}
		for i := 2 * from; i < 2*to; i++ {
			line, err := r.ReadString('\n')
			if err != nil {
				return 0, err
			}
			if line[0] == '-' {
				return 0, fmt.Errorf("reply %d: %s", i, strings.TrimSpace(line))
			}
		}
	}
	return time.Since(start), nil
}

const loadBatch = 10000

func writeCommand(w *bufio.Writer, args ...string) {
	w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
}

// memoryOf loads n locks into the server at addr and reads its memory.
func memoryOf(ctx context.Context, addr string, n int, cfg config) (memRow, error) {
	load, err := loadLocks(ctx, addr, n, cfg.memLease)
	if err != nil {
		return memRow{}, err
	}
	select {
	case <-ctx.Done():
		return memRow{}, ctx.Err()
	case <-time.After(cfg.memSettle):
	}
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	keys, err := rc.DBSize(ctx).Result()
	if err != nil {
		return memRow{}, err
	}
	if keys != int64(n) {
		return memRow{}, fmt.Errorf("%d keys after loading %d locks", keys, n)
	}
	info, err := rc.Info(ctx, "server", "memory").Result()
	if err != nil {
		return memRow{}, err
	}
	used, err1 := infoField(info, "used_memory")
	pid, err2 := infoField(info, "process_id")
	if err := errors.Join(err1, err2); err != nil {
		return memRow{}, err
	}
	rss, err := vmRSS(int(pid))
	return memRow{locks: n, rss: rss, used: used, load: load}, err
}

func infoField(info, name string) (int64, error) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO has no %s", name)
}

// vmRSS reads a process's resident set size.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for process %d", pid)
}

// restartTime times the restart of a single node with its data on disk
// holding cfg.memRestart locks. Loading millions of locks through the Raft
// log of a loaded machine takes minutes, so the state is built here with
// the state machine itself (the same commands a client sends) and written
// as a backup; a node starts from it (--restore), takes a snapshot of its
// own (RAFT SNAPSHOT), is killed and started again (without --restore):
// the time from that start until it answers DBSIZE with every key, and the
// size of the snapshot files.
func restartTime(ctx context.Context, bin, root string, cfg config) (wall, cpu time.Duration, snap int64, err error) {
	backup := filepath.Join(root, "locks.backup")
	if err := writeLockBackup(ctx, backup, cfg.memRestart, cfg.memLease); err != nil {
		return 0, 0, 0, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return 0, 0, 0, err
	}
	addr := loopback(ports[0])
	dir := filepath.Join(root, "deadbolt-restart")
	args := append([]string{"--id", "s1", "--addr", addr, "--data-dir", dir, "--log-level", "warn"}, cfg.memArgs...)
	p, err := startProc("deadbolt-restart", root, 0, bin, append(args, "--restore", backup)...)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := waitServing(ctx, addr, p, 10*time.Minute, int64(cfg.memRestart)); err != nil {
		p.stop()
		return 0, 0, 0, err
	}
	os.Remove(backup)
	rc := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 5 * time.Minute})
	err = rc.Do(ctx, "RAFT", "SNAPSHOT").Err()
	rc.Close()
	p.stop()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("RAFT SNAPSHOT: %w", err)
	}
	snap = dirSize(dir)
	start := time.Now()
	p, err = startProc("deadbolt-restart", root, 0, bin, args...)
	if err != nil {
		return 0, 0, 0, err
	}
	defer p.stop()
	if err := waitServing(ctx, addr, p, 10*time.Minute, int64(cfg.memRestart)); err != nil {
		return 0, 0, 0, err
	}
	wall = time.Since(start)
	cpu, err = procCPU([]int{p.cmd.Process.Pid})
	return wall, cpu, snap, err
}

// writeLockBackup writes a backup (the state machine's snapshot) holding n
// Redisson locks with the given lease from now.
func writeLockBackup(ctx context.Context, path string, n int, lease time.Duration) error {
	f := fsm.New(fsm.Options{})
	defer f.Close()
	now := time.Now().UnixMilli()
	ms := []byte(strconv.FormatInt(lease.Milliseconds(), 10))
	for i := range n {
		if i%loadBatch == 0 && ctx.Err() != nil {
			return ctx.Err() // SIGTERM while building millions of locks
		}
		key := []byte("lock:entity:" + strconv.Itoa(i))
		field := []byte(lockOwners[i%len(lockOwners)] + ":" + strconv.Itoa(40+i%96))
		f.Apply(now, fsm.Command{Args: [][]byte{[]byte("hset"), key, field, []byte("1")}})
		f.Apply(now, fsm.Command{Args: [][]byte{[]byte("pexpire"), key, ms}})
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	err = errors.Join(f.Snapshot(bw), bw.Flush(), out.Close())
	return err
}

// loadAverage is the machine's one-minute load average, as text.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// dirSize is the size of the snapshot files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(path, "snapshot") {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
