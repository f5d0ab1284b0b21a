package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// serialOps is how many GETs and SETs one client sends, one at a time, on
// each node measured by the serial table.
const serialOps = 2000

// serialRow is one client's serial GET and SET on one node.
type serialRow struct {
	name     string
	get, set time.Duration // medians
}

// reportSerial measures one client's serial GET and SET latency on the
// deadbolt cluster's leader and one of its followers, and on redis-server
// with appendfsync always: a read on a leader of three is served without
// a log write (cluster/readindex.go), so it should cost a fraction of a
// write.
func reportSerial(ctx context.Context, w io.Writer, targets []target) error {
	var rows []serialRow
	for _, t := range targets {
		switch t.name {
		case nameDeadbolt, nameLease:
			addr := t.addr
			if t.leader != nil {
				if a, err := t.leader(ctx); err == nil {
					addr = a // an election during the lock cells moved it
				}
			}
			f, err := followerAddr(ctx, addr)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			rs, err := serialLatencies(ctx, []string{addr, f})
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			rs[0].name, rs[1].name = t.name+" leader", t.name+" follower"
			rows = append(rows, rs...)
		case nameRedisAOF, nameSingle:
			r, err := serialLatency(ctx, t.addr)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			r.name = t.name
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nserial: one client, %d SETs then %d GETs of one key, one at a time (a cluster's leader and follower in %d alternating turns); medians\n", serialOps, serialOps, serialRounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tGET p50\tSET p50\tGET ÷ SET\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.name, us(r.get), us(r.set), ratio(float64(r.get), float64(r.set)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if strings.HasSuffix(r.name, " leader") || strings.HasSuffix(r.name, " follower") {
			fmt.Fprintf(w, "target: %s GET ≤ 0.3 × SET: %s\n", r.name, met(float64(r.get) <= 0.3*float64(r.set), ratio(float64(r.get), float64(r.set))+"×"))
		}
	}
	return nil
}

// serialRounds is how many turns the nodes of serialLatencies take: what
// the machine does meanwhile (a snapshot after the lock cells, the
// collector) falls on each node alike, not on whichever was measured first.
const serialRounds = 4

// serialLatencies measures the nodes at addrs in turns, serialOps/
// serialRounds SETs then as many GETs on each in each turn, and returns
// each node's median latencies.
func serialLatencies(ctx context.Context, addrs []string) ([]serialRow, error) {
	sets := make([][]time.Duration, len(addrs))
	gets := make([][]time.Duration, len(addrs))
	for range serialRounds {
		for i, a := range addrs {
			s, g, err := serialRun(ctx, a, serialOps/serialRounds)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a, err)
			}
			sets[i], gets[i] = append(sets[i], s...), append(gets[i], g...)
		}
	}
	out := make([]serialRow, len(addrs))
	for i := range addrs {
		slices.Sort(sets[i])
		slices.Sort(gets[i])
		out[i] = serialRow{get: gets[i][len(gets[i])/2], set: sets[i][len(sets[i])/2]}
	}
	return out, nil
}

// serialLatency sends serialOps SETs, then serialOps GETs, from one
// connection and returns their median latencies.
func serialLatency(ctx context.Context, addr string) (serialRow, error) {
	sets, gets, err := serialRun(ctx, addr, serialOps)
	if err != nil {
		return serialRow{}, err
	}
	slices.Sort(sets)
	slices.Sort(gets)
	return serialRow{get: gets[len(gets)/2], set: sets[len(sets)/2]}, nil
}

// serialRun sends n SETs, then n GETs, of one key from one connection and
// returns their latencies, unsorted.
func serialRun(ctx context.Context, addr string, n int) (sets, gets []time.Duration, err error) {
	rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1})
	defer rc.Close()
	key := "bench:serial"
	one := func(f func() error) ([]time.Duration, error) {
		out := make([]time.Duration, 0, n)
		failed := 0
		for range n {
			start := time.Now()
			if err := f(); err != nil {
				// An election on a busy machine: the operation is left
				// out, as the lock cells leave out failed pairs.
				if failed++; failed > n/10 {
					return nil, err
				}
				continue
			}
			out = append(out, time.Since(start))
		}
		return out, nil
	}
	i := 0
	if sets, err = one(func() error { i++; return rc.Set(ctx, key, i, 0).Err() }); err != nil {
		return nil, nil, err
	}
	if gets, err = one(func() error { return rc.Get(ctx, key).Err() }); err != nil {
		return nil, nil, err
	}
	return sets, gets, nil
}

// followerAddr asks the leader at addr for one of its replicas (ROLE),
// waiting a while for one: a new cluster's followers publish their client
// addresses through the log after they start.
func followerAddr(ctx context.Context, addr string) (string, error) {
	rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := roleReplica(ctx, rc)
		if err == nil || time.Now().After(deadline) {
			return f, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func roleReplica(ctx context.Context, rc *redis.Client) (string, error) {
	all, err := roleReplicas(ctx, rc)
	if err != nil {
		return "", err
	}
	return all[0], nil
}

// roleReplicas returns every replica ROLE names.
func roleReplicas(ctx context.Context, rc *redis.Client) ([]string, error) {
	v, err := rc.Do(ctx, "ROLE").Slice()
	if err != nil {
		return nil, err
	}
	if len(v) < 3 {
		return nil, fmt.Errorf("ROLE: %v", v)
	}
	var out []string
	reps, _ := v[2].([]any)
	for _, r := range reps {
		f, _ := r.([]any)
		if len(f) < 2 {
			continue
		}
		host, _ := f[0].(string)
		port, _ := f[1].(string)
		if _, err := strconv.Atoi(port); err == nil && host != "" {
			out = append(out, net.JoinHostPort(host, port))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ROLE names no replica: %v", v)
	}
	return out, nil
}

// mixClients and mixDuration shape the read-mostly table: that many
// clients, nine GETs in ten and one SET, for that long, on each system.
const (
	mixClients  = 64
	mixDuration = 3 * time.Second
)

// reportMix measures a read-mostly load (90 % GET, 10 % SET over 1,000
// keys, 64 clients) on the deadbolt cluster's leader and on redis-server
// with appendfsync always; and, for the clusters, with the clients spread
// over the three nodes (a follower serves reads itself and forwards the
// writes).
func reportMix(ctx context.Context, w io.Writer, targets []target) error {
	type row struct {
		name string
		mixStats
	}
	var rows []row
	for _, t := range targets {
		if t.name != nameDeadbolt && t.name != nameRedisAOF && t.name != nameLease {
			continue
		}
		addr := t.addr
		if t.leader != nil {
			if a, err := t.leader(ctx); err == nil {
				addr = a
			}
		}
		st, err := mixLoad(ctx, []string{addr}, t.pids)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		name := t.name
		if t.leader != nil {
			name += " leader"
		}
		rows = append(rows, row{name, st})
		if t.leader == nil {
			continue
		}
		reps, err := replicasOf(ctx, t)
		if err != nil {
			fmt.Fprintf(w, "%s all nodes: %v; row left out\n", t.name, err)
			continue
		}
		if st, err = mixLoad(ctx, reps, t.pids); err != nil {
			return fmt.Errorf("%s spread: %w", t.name, err)
		}
		rows = append(rows, row{t.name + " all nodes", st})
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nread-mostly: %d clients, 9 GETs in 10 and 1 SET, 1,000 keys, %v\n", mixClients, mixDuration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tops/s\tserver cpu/op\tclient cpu/op\tmachine busy\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%.0f%%\t\n", r.name, r.ops, cpuText(r.server), cpuText(r.client), 100*r.busy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "server cpu/op: CPU time of the system's server processes per operation (/proc, all three nodes, for a cluster;\n"+
		"INFO cpu for redis-server); client cpu/op: this load generator's (go-redis); machine busy:\n"+
		"all CPU time used on the machine (/proc/stat, other users' too) over the %d cores' time\n", runtime.NumCPU())
	return nil
}

// replicasOf returns the followers' client addresses of t's current
// leader, waiting a while for both (a follower publishes its address
// through the log; an election may move the leader meanwhile).
func replicasOf(ctx context.Context, t target) ([]string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		addr, err := t.leader(ctx)
		var reps []string
		if err == nil {
			rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			reps, err = roleReplicas(ctx, rc)
			rc.Close()
		}
		if err == nil && len(reps) == 2 {
			return append([]string{addr}, reps...), nil
		}
		if err == nil {
			err = fmt.Errorf("ROLE names %d replicas", len(reps))
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mixFailed reports whether err is an election's (the operation left
// out of the count) rather than a broken load.
func mixFailed(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "ERR outcome unknown") || strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "CLUSTERDOWN")
}

// mixStats is what one read-mostly cell measured.
type mixStats struct {
	ops            float64       // operations per second
	server, client time.Duration // CPU time per operation (0: not measured)
	busy           float64       // the machine's CPU use, 0 to 1
}

// cpuText shows a CPU time per operation, blank when not measured.
func cpuText(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
}

// mixLoad runs the read-mostly load, client c on addrs[c % len(addrs)],
// and reads the CPU time of pids (the servers) and of this process.
func mixLoad(ctx context.Context, addrs []string, pids []int) (mixStats, error) {
	rcs := make([]*redis.Client, len(addrs))
	for i, addr := range addrs {
		per := (mixClients + len(addrs) - 1 - i) / len(addrs)
		rcs[i] = redis.NewClient(&redis.Options{Addr: addr, PoolSize: per, MinIdleConns: per, MaxRetries: -1})
		defer rcs[i].Close()
	}
	for i := range 1000 {
		if err := rcs[0].Set(ctx, "bench:mix:"+strconv.Itoa(i), i, 0).Err(); err != nil && !mixFailed(err) {
			return mixStats{}, err
		}
	}
	self := []int{os.Getpid()}
	srvCPU := func() (time.Duration, error) {
		if len(pids) == 0 {
			return serverCPU(ctx, rcs[0]) // redis-server: INFO cpu
		}
		return procCPU(pids)
	}
	srv0, errS0 := srvCPU()
	cli0, errC0 := procCPU(self)
	busy0, total0, errB0 := machineCPU()
	deadline := time.Now().Add(mixDuration)
	counts := make(chan int, mixClients)
	errs := make(chan error, mixClients)
	for c := range mixClients {
		rc := rcs[c%len(rcs)]
		go func() {
			n, x := 0, uint32(c*7919+1)
			for time.Now().Before(deadline) {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				key := "bench:mix:" + strconv.Itoa(int(x%1000))
				var err error
				if x%10 == 0 {
					err = rc.Set(ctx, key, n, 0).Err()
				} else {
					err = rc.Get(ctx, key).Err()
				}
				if err == redis.Nil {
					err = nil // a key whose first SET failed in an election
				}
				if err != nil && !mixFailed(err) {
					errs <- err
					return
				}
				if err == nil {
					n++ // failed operations (an election) are not counted
				}
			}
			counts <- n
		}()
	}
	total := 0
	for range mixClients {
		select {
		case n := <-counts:
			total += n
		case err := <-errs:
			return mixStats{}, err
		}
	}
	st := mixStats{ops: float64(total) / mixDuration.Seconds()}
	srv1, errS1 := srvCPU()
	cli1, errC1 := procCPU(self)
	busy1, total1, errB1 := machineCPU()
	if total > 0 {
		if errS0 == nil && errS1 == nil {
			st.server = (srv1 - srv0) / time.Duration(total)
		}
		if errC0 == nil && errC1 == nil {
			st.client = (cli1 - cli0) / time.Duration(total)
		}
	}
	if errB0 == nil && errB1 == nil && total1 > total0 {
		st.busy = float64(busy1-busy0) / float64(total1-total0)
	}
	return st, nil
}
