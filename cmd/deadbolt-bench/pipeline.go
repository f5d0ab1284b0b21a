package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// -pipeline: one connection sends pipelines of SETs (-pipeline-depth
// commands in one write, then their replies) for -duration, against a
// three-node cluster of -deadbolt-bin (at the leader and through a
// follower), the same with -base-bin (another build, the reference) and
// redis-server (no persistence, and appendfsync always).
//
// -longread: a database of -keys keys (SET key:<i>), then a client's PING
// latency while another client runs KEYS * and then a full SCAN (COUNT
// 1000), on one in-memory bin/deadbolt, on a three-node cluster's leader
// and on redis-server. The PINGs are open-loop: one every millisecond on
// its own connection, whatever the replies do, and each latency counts
// from when its PING was due, so a stall of the server counts for every
// PING it holds up (a client that waits for each reply before sending
// the next would see one slow PING per stall).

// pipelineRow is one system's pipeline rate.
type pipelineRow struct {
	name, about string
	rate        float64 // commands per second
	err         error
}

func runPipeline(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	root, err := os.MkdirTemp(cfg.workDir, "deadbolt-bench-pipeline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	var rows []pipelineRow
	measure := func(name, about, addr string) {
		fmt.Fprintf(stderr, "pipeline: %s\n", name)
		rate, err := pipelineRate(ctx, addr, cfg.pipelineDepth, cfg.warmup, cfg.duration)
		rows = append(rows, pipelineRow{name, about, rate, err})
	}
	clusterOf := func(bin, label string) error {
		dir := filepath.Join(root, label)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		c, err := startDeadboltNodes(ctx, bin, dir, cfg.memberProcs)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		defer c.stop()
		measure(label+"-leader", bin+", 3 nodes, data on disk", c.leaderAddr)
		measure(label+"-follower", "through a follower", c.follower())
		return nil
	}
	if err := clusterOf(cfg.deadboltBin, "deadbolt-3node"); err != nil {
		return err
	}
	if cfg.baseBin != "" {
		if err := clusterOf(cfg.baseBin, "base-3node"); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		name, about string
		args        []string
	}{
		{"redis", "--save '' --appendonly no", redisNoPersistence},
		{"redis-aof-always", "--appendfsync always", redisFsyncAlways},
	} {
		addr, stop, err := startRedis(ctx, cfg.redisServer, r.args)
		if err != nil {
			return err
		}
		measure(r.name, r.about, addr)
		stop()
	}

	fmt.Fprintf(stdout, "op: pipelines of %d SETs on one connection (one write, then the %d replies), %v after %v warm-up; GOMAXPROCS of each deadbolt node %d, %d CPUs\n",
		cfg.pipelineDepth, cfg.pipelineDepth, cfg.duration, cfg.warmup, cfg.memberProcs, runtime.NumCPU())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tSET/s\tvs base\tvs redis\t\t")
	find := func(name string) float64 {
		for _, r := range rows {
			if r.name == name && r.err == nil {
				return r.rate
			}
		}
		return 0
	}
	ratio := func(a, b float64) string {
		if a == 0 || b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f×", a/b)
	}
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\terror: %v\t\t\t\t\n", r.name, r.err)
			continue
		}
		base := find("base-3node-leader")
		if suffix := "-follower"; len(r.name) > len(suffix) && r.name[len(r.name)-len(suffix):] == suffix {
			base = find("base-3node-follower")
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t\t%s\n", r.name, r.rate, ratio(r.rate, base), ratio(r.rate, find("redis")), r.about)
	}
	return tw.Flush()
}

// pipelineRate sends pipelines of depth SETs on one connection to addr
// and returns the commands per second over d, after warmup.
func pipelineRate(ctx context.Context, addr string, depth int, warmup, d time.Duration) (float64, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	rd := bufio.NewReaderSize(nc, 64<<10)
	var req []byte
	seq := 0
	round := func() error {
		req = req[:0]
		for range depth {
			key := "p:" + strconv.Itoa(seq%100_000)
			seq++
			req = resp.ArrayReply(resp.BulkString("SET"), resp.BulkString(key), resp.BulkString("v")).Append(req)
		}
		nc.SetDeadline(time.Now().Add(60 * time.Second))
		if _, err := nc.Write(req); err != nil {
			return err
		}
		for range depth {
			r, err := resp.ReadReply(rd, 1<<20)
			if err != nil {
				return err
			}
			if r.Type == resp.Error {
				return fmt.Errorf("SET: %s", r.Str)
			}
		}
		return nil
	}
	for end := time.Now().Add(warmup); time.Now().Before(end); {
		if err := round(); err != nil {
			return 0, err
		}
	}
	start, n := time.Now(), 0
	for time.Since(start) < d && ctx.Err() == nil {
		if err := round(); err != nil {
			return 0, err
		}
		n += depth
	}
	return float64(n) / time.Since(start).Seconds(), ctx.Err()
}

// longReadRow is one system's PING latency during KEYS * and a full SCAN.
type longReadRow struct {
	name, about      string
	keysTook         time.Duration // the KEYS * call
	scanTook         time.Duration // the full SCAN
	keysP99, keysMax time.Duration // PINGs while KEYS ran
	scanP99, scanMax time.Duration // PINGs while SCAN ran
	keysN, scanN     int           // keys returned
	idleP99          time.Duration // PINGs for a second with nothing else running
	err              error
}

func runLongRead(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	root, err := os.MkdirTemp(cfg.workDir, "deadbolt-bench-longread-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	var rows []longReadRow
	measure := func(name, about, addr string) {
		fmt.Fprintf(stderr, "longread: %s: loading %d keys\n", name, cfg.keys)
		row := longReadRow{name: name, about: about}
		row.err = longRead(ctx, addr, cfg.keys, &row)
		rows = append(rows, row)
	}
	// Stopped (SIGTERM): the systems not yet measured are not started,
	// and the rows measured are reported, as with -deadbolt-addr.
	stopped := func() bool { return ctx.Err() != nil }
	reportStopped := func() error {
		if err := reportLongRead(stdout, cfg, rows); err != nil {
			return err
		}
		return ctx.Err()
	}
	if cfg.deadboltAddr != "" {
		measure("deadbolt", "external", cfg.deadboltAddr)
		return reportLongRead(stdout, cfg, rows)
	}
	if slices.Contains(cfg.longSystems, "memory") {
		path, err := findBin(cfg.deadboltBin)
		if err != nil {
			return err
		}
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		single, err := startProc("deadbolt-memory", root, 0, path, "--addr", loopback(ports[0]), "--log-level", "warn")
		if err != nil {
			return err
		}
		if err := waitPing(ctx, loopback(ports[0]), single); err != nil {
			single.stop()
			return err
		}
		measure("deadbolt-memory", "one bin/deadbolt, in memory", loopback(ports[0]))
		single.stop()
	}
	if stopped() {
		return reportStopped()
	}
	if slices.Contains(cfg.longSystems, "3node") {
		c, err := startDeadboltNodes(ctx, cfg.deadboltBin, root, cfg.memberProcs)
		if err != nil {
			return err
		}
		measure("deadbolt-3node", "the leader of 3 bin/deadbolt, data on disk", c.leaderAddr)
		c.stop()
	}
	if stopped() {
		return reportStopped()
	}
	if slices.Contains(cfg.longSystems, "redis") {
		addr, stop, err := startRedis(ctx, cfg.redisServer, redisNoPersistence)
		if err != nil {
			return err
		}
		measure("redis", "--save '' --appendonly no", addr)
		stop()
	}
	if stopped() {
		return reportStopped()
	}
	return reportLongRead(stdout, cfg, rows)
}

func reportLongRead(stdout io.Writer, cfg config, rows []longReadRow) error {

	fmt.Fprintf(stdout, "op: %d keys; another client's PING every 1 ms (open loop: latency from when each was due) while one client runs KEYS * and then SCAN 0.. COUNT 1000 to the end; %d CPUs\n",
		cfg.keys, runtime.NumCPU())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tPING p99 idle\tKEYS took\tPING p99\tPING max\tSCAN took\tPING p99\tPING max\t\t")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\terror: %v\t\t\t\t\t\t\t\t\n", r.name, r.err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n", r.name, ms(r.idleP99), ms(r.keysTook), ms(r.keysP99), ms(r.keysMax),
			ms(r.scanTook), ms(r.scanP99), ms(r.scanMax), r.about)
	}
	return tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func findBin(bin string) (string, error) {
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	return "", fmt.Errorf("deadbolt: %s not found (run make build, or pass -deadbolt-bin)", bin)
}

// longRead loads keys into addr, then measures PING during KEYS * and
// during a full SCAN.
func longRead(ctx context.Context, addr string, keys int, row *longReadRow) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	// SIGTERM while loading (or measuring): the connection closes, the
	// request in flight fails, and the load stops at its next batch.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	rd := bufio.NewReaderSize(nc, 1<<20)
	send := func(cmds ...[]string) ([]resp.Reply, error) {
		var req []byte
		for _, c := range cmds {
			args := make([]resp.Reply, len(c))
			for i, a := range c {
				args[i] = resp.BulkString(a)
			}
			req = resp.ArrayReply(args...).Append(req)
		}
		nc.SetDeadline(time.Now().Add(5 * time.Minute))
		if _, err := nc.Write(req); err != nil {
			return nil, err
		}
		out := make([]resp.Reply, len(cmds))
		var first error // every reply is read, so the stream stays in step
		for i := range cmds {
			r, err := resp.ReadReply(rd, 1<<30)
			if err != nil {
				return nil, err
			}
			if r.Type == resp.Error && first == nil {
				first = fmt.Errorf("%s: %s", cmds[i][0], r.Str)
			}
			out[i] = r
		}
		return out, first
	}
	var batch [][]string
	for i := 0; i < keys; i++ {
		batch = append(batch, []string{"SET", "key:" + strconv.Itoa(i), "v"})
		if len(batch) == 1000 || i == keys-1 {
			// SETs may be sent again: a busy machine can make a
			// cluster change leaders (outcome unknown, TRYAGAIN).
			for try := 0; ; try++ {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("loading: %w", err)
				}
				_, err := send(batch...)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return fmt.Errorf("loading: %w", ctx.Err())
				}
				if try == 5 {
					return fmt.Errorf("loading: %w", err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			batch = batch[:0]
		}
	}

	var err2 error
	row.idleP99, _, _, err2 = duringPings(ctx, addr, func() error { time.Sleep(time.Second); return nil })
	if err2 != nil {
		return err2
	}
	// The two long reads' replies are read without a value per key: the
	// load generator parsing a million of them collected its own heap
	// and its PING sender missed its schedule, which counted against the
	// server (runtime/trace of the leader: idle while those PINGs were
	// late).
	row.keysP99, row.keysMax, row.keysTook, err2 = duringPings(ctx, addr, func() error {
		if err := sendOnly(nc, "KEYS", "*"); err != nil {
			return err
		}
		n, err := skimArray(rd)
		row.keysN = n
		return err
	})
	if err2 != nil {
		return fmt.Errorf("KEYS: %w", err2)
	}
	row.scanP99, row.scanMax, row.scanTook, err2 = duringPings(ctx, addr, func() error {
		cursor := "0"
		for {
			if err := sendOnly(nc, "SCAN", cursor, "COUNT", "1000"); err != nil {
				return err
			}
			next, n, err := skimScan(rd)
			if err != nil {
				return err
			}
			row.scanN += n
			if cursor = next; cursor == "0" {
				return nil
			}
		}
	})
	if err2 != nil {
		return fmt.Errorf("SCAN: %w", err2)
	}
	if row.keysN != keys || row.scanN < keys {
		return fmt.Errorf("KEYS returned %d keys, SCAN %d, want %d", row.keysN, row.scanN, keys)
	}
	return nil
}

// duringPings runs work while another connection sends a PING every
// millisecond, and returns the PINGs' p99 and worst latency, each counted
// from when the PING was due, and how long work took.
func duringPings(ctx context.Context, addr string, work func() error) (p99, worst, took time.Duration, err error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, 0, 0, err
	}
	defer nc.Close()
	const every = time.Millisecond
	ping := resp.ArrayReply(resp.BulkString("PING")).Append(nil)
	var (
		mu   sync.Mutex
		due  []time.Time // when each PING sent was due
		lats []time.Duration
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(2)
	go func() { // the sender: on schedule, whatever the replies do
		defer wg.Done()
		start := time.Now()
		for i := 0; ; i++ {
			at := start.Add(time.Duration(i) * every)
			if d := time.Until(at); d > 0 {
				select {
				case <-stop:
					return
				case <-time.After(d):
				}
			}
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			due = append(due, at)
			mu.Unlock()
			if _, err := nc.Write(ping); err != nil {
				return
			}
		}
	}()
	rd := bufio.NewReader(nc)
	go func() { // the reader
		defer wg.Done()
		for i := 0; ; i++ {
			if _, err := resp.ReadReply(rd, 1<<10); err != nil {
				return
			}
			now := time.Now()
			mu.Lock()
			lats = append(lats, now.Sub(due[i]))
			mu.Unlock()
		}
	}()
	time.Sleep(50 * time.Millisecond) // the PINGs' own latency first
	start := time.Now()
	err = work()
	took = time.Since(start)
	time.Sleep(20 * time.Millisecond)
	close(stop)
	// Every PING sent is answered before the end: the slowest are last.
	for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait); time.Sleep(time.Millisecond) {
		mu.Lock()
		all := len(lats) == len(due)
		mu.Unlock()
		if all {
			break
		}
	}
	nc.Close()
	wg.Wait()
	if err != nil || ctx.Err() != nil {
		return 0, 0, took, cmpErr(err, ctx.Err())
	}
	if len(lats) == 0 {
		return 0, 0, took, fmt.Errorf("no PING answered")
	}
	slices.Sort(lats)
	return lats[len(lats)*99/100], lats[len(lats)-1], took, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// waitPing waits up to 30 s for the server at addr to answer PING.
func waitPing(ctx context.Context, addr string, p *proc) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.SetDeadline(time.Now().Add(time.Second))
			_, err = nc.Write([]byte("PING\r\n"))
			if err == nil {
				_, err = resp.ReadReply(bufio.NewReader(nc), 1<<10)
			}
			nc.Close()
			if err == nil {
				return nil
			}
		}
		if perr := p.exitErr(); perr != nil {
			return perr
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("%s: no answer to PING: %w", addr, cmpErr(err, ctx.Err()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
