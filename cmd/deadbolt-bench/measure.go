package main

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The seed articles' Redisson scripts, as compat/testdata has them (a
// test there checks the copies are equal). The first line names the seed
// and is not sent.
var (
	//go:embed lock.lua
	lockFile string
	//go:embed unlock.lua
	unlockFile string
)

func scriptBody(file string) string {
	_, body, _ := strings.Cut(file, "\n")
	return body
}

// cell is the outcome of one (server, clients) measurement.
type cell struct {
	ops       int
	opsPerSec float64
	p50, p99  time.Duration // of the whole lock+unlock pair
	p99Lock   time.Duration // of the lock (acquire) call alone
	cpuPerOp  time.Duration // server CPU time per pair; 0 if unknown
	// busiestPerOp is the CPU time per pair of the one server process
	// that spent the most (a cluster's leader; for a single process, as
	// cpuPerOp): what bounds the rate once each member has a machine of
	// its own. 0 if unknown.
	busiestPerOp time.Duration
	// genPerOp is the load generator's (this process's) CPU time per
	// pair, the same clients for every system: what the servers compete
	// with for the machine's cores. With an in-process server it includes
	// the server.
	genPerOp  time.Duration
	failed    int   // pairs that returned an error (not in the latencies)
	firstFail error // one of those errors
}

func (c cell) String() string {
	return fmt.Sprintf("%8.0f ops/s  p50 %s  p99 %s  p99 acquire %s  cpu/op %s  gen cpu/op %s  (%d pairs, %d failed)",
		c.opsPerSec, us(c.p50), us(c.p99), us(c.p99Lock), cpu(c.cpuPerOp), cpu(c.genPerOp), c.ops, c.failed)
}

// median takes the median of each statistic separately.
func median(cells []cell) cell {
	if len(cells) == 0 {
		return cell{}
	}
	pick := func(f func(cell) float64) float64 {
		v := make([]float64, len(cells))
		for i, c := range cells {
			v[i] = f(c)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	dur := func(f func(cell) time.Duration) time.Duration {
		return time.Duration(pick(func(c cell) float64 { return float64(f(c)) }))
	}
	return cell{
		opsPerSec:    pick(func(c cell) float64 { return c.opsPerSec }),
		p50:          dur(func(c cell) time.Duration { return c.p50 }),
		p99:          dur(func(c cell) time.Duration { return c.p99 }),
		p99Lock:      dur(func(c cell) time.Duration { return c.p99Lock }),
		cpuPerOp:     dur(func(c cell) time.Duration { return c.cpuPerOp }),
		busiestPerOp: dur(func(c cell) time.Duration { return c.busiestPerOp }),
		genPerOp:     dur(func(c cell) time.Duration { return c.genPerOp }),
		failed:       int(pick(func(c cell) float64 { return float64(c.failed) })),
	}
}

// pairFunc does one lock+unlock pair and returns how long the lock call
// took.
type pairFunc func(ctx context.Context) (acquire time.Duration, err error)

// measure runs clients workers against the Redis-protocol target, each
// doing Redisson lock+unlock pairs on its own lock, for cfg.warmup
// unmeasured and then cfg.duration.
func measure(ctx context.Context, t target, clients int, cfg config) (cell, error) {
	rc := redis.NewClient(&redis.Options{Addr: t.addr, PoolSize: clients, MinIdleConns: clients, Protocol: t.proto, TLSConfig: t.tls})
	defer rc.Close()
	lockSHA, err := rc.ScriptLoad(ctx, scriptBody(lockFile)).Result()
	if err != nil {
		return cell{}, fmt.Errorf("SCRIPT LOAD lock: %w", err)
	}
	unlockSHA, err := rc.ScriptLoad(ctx, scriptBody(unlockFile)).Result()
	if err != nil {
		return cell{}, fmt.Errorf("SCRIPT LOAD unlock: %w", err)
	}
	if t.fcall {
		if err := rc.FunctionLoadReplace(ctx, benchLibrary()).Err(); err != nil {
			return cell{}, fmt.Errorf("FUNCTION LOAD: %w", err)
		}
	}
	lockFn := func(ctx context.Context, keys []string, args ...any) *redis.Cmd {
		if t.fcall {
			return rc.FCall(ctx, "redisson_lock", keys, args...)
		}
		return rc.EvalSha(ctx, lockSHA, keys, args...)
	}
	unlockFn := func(ctx context.Context, keys []string, args ...any) *redis.Cmd {
		if t.fcall {
			return rc.FCall(ctx, "redisson_unlock", keys, args...)
		}
		return rc.EvalSha(ctx, unlockSHA, keys, args...)
	}
	lease := cfg.lease.Milliseconds()
	// A run-unique prefix, so that a lock left behind by an aborted run
	// on an external server does not make this one fail.
	prefix := strconv.FormatInt(time.Now().UnixNano(), 36)

	worker := func(i int) (pairFunc, func(), error) {
		name := "deadbolt-bench:" + prefix + ":" + strconv.Itoa(i)
		channel := "redisson_lock__channel:{" + name + "}"
		owner := "3f0c7a4e-bench-" + prefix + ":" + strconv.Itoa(i)
		base, gen := name, 0
		return func(ctx context.Context) (time.Duration, error) {
			t0 := time.Now()
			if err := lockFn(ctx, []string{name}, lease, owner).Err(); err != redis.Nil {
				return 0, fmt.Errorf("lock %s: got %v, want nil (acquired)", name, err)
			}
			acquire := time.Since(t0)
			v, err := unlockFn(ctx, []string{name, channel}, "0", lease, owner).Result()
			if err != nil || v != int64(1) {
				// The lock may still be held: go on with a new one.
				err = fmt.Errorf("unlock %s: got (%v, %v), want 1 (released)", name, v, err)
				gen++
				name = base + "." + strconv.Itoa(gen)
				channel = "redisson_lock__channel:{" + name + "}"
				return 0, err
			}
			return acquire, nil
		}, func() {}, nil
	}

	if len(t.pids) > 0 {
		return measureCPU(ctx, t, clients, cfg, worker)
	}
	var cpu0, cpu1 time.Duration
	var cpuErr error
	c, err := drive(ctx, clients, cfg, worker,
		func() { cpu0, cpuErr = serverCPU(ctx, rc) },
		func() {
			var err error
			cpu1, err = serverCPU(ctx, rc)
			cpuErr = errors.Join(cpuErr, err)
		})
	if err != nil {
		return cell{}, err
	}
	if !t.inProcess && cpuErr == nil && cpu1 > cpu0 {
		c.cpuPerOp = (cpu1 - cpu0) / time.Duration(c.ops)
		c.busiestPerOp = c.cpuPerOp
	}
	return c, nil
}

// drive runs one worker per client: newWorker(i) gives client i its pair
// function and a close function. Each worker does pairs for cfg.warmup,
// then for cfg.duration measured. before and after run just around the
// measured part.
func drive(ctx context.Context, clients int, cfg config,
	newWorker func(i int) (pairFunc, func(), error), before, after func()) (cell, error) {
	var (
		wg      sync.WaitGroup
		samples = make([][]time.Duration, clients)
		locks   = make([][]time.Duration, clients)
		errs    = make([]error, clients)
		fails   = make([]int, clients)
		// firstFail is each client's first failure in the measured part.
		firstFail = make([]error, clients)
		start     = make(chan struct{})
		end       time.Time
	)
	pairs := make([]pairFunc, clients)
	for i := range clients {
		p, closeFn, err := newWorker(i)
		if err != nil {
			return cell{}, fmt.Errorf("client %d: %w", i, err)
		}
		defer closeFn()
		pairs[i] = p
	}
	warmEnd := time.Now().Add(cfg.warmup)
	for i, pair := range pairs {
		wg.Go(func() {
			// A failed pair (a leader election under load, say) is
			// counted and the worker goes on; it gives up when none has
			// succeeded for maxFailing.
			lastOK := time.Now()
			failed := func(err error) bool {
				if time.Since(lastOK) > maxFailing || ctx.Err() != nil {
					errs[i] = err
					return true
				}
				<-time.After(10 * time.Millisecond)
				return false
			}
			for time.Now().Before(warmEnd) {
				if _, err := pair(ctx); err != nil {
					if failed(err) {
						return
					}
					continue
				}
				lastOK = time.Now()
			}
			<-start
			lat := make([]time.Duration, 0, 1<<14)
			acq := make([]time.Duration, 0, 1<<14)
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				a, err := pair(ctx)
				if err != nil {
					if fails[i]++; fails[i] == 1 {
						firstFail[i] = err
					}
					if failed(err) {
						return
					}
					continue
				}
				lastOK = time.Now()
				lat = append(lat, time.Since(t0))
				acq = append(acq, a)
			}
			samples[i], locks[i] = lat, acq
		})
	}
	<-time.After(time.Until(warmEnd))
	before()
	gen0 := selfCPU()
	begin := time.Now()
	end = begin.Add(cfg.duration)
	close(start)
	wg.Wait()
	elapsed := time.Since(begin)
	gen := selfCPU() - gen0
	if err := errors.Join(errs...); err != nil {
		return cell{}, err
	}
	if err := ctx.Err(); err != nil {
		return cell{}, err
	}
	after()

	all, acq := slices.Concat(samples...), slices.Concat(locks...)
	if len(all) == 0 {
		return cell{}, errors.New("no operation completed")
	}
	slices.Sort(all)
	slices.Sort(acq)
	return cell{
		ops:       len(all),
		opsPerSec: float64(len(all)) / elapsed.Seconds(),
		genPerOp:  gen / time.Duration(len(all)),
		p50:       all[len(all)*50/100],
		p99:       all[len(all)*99/100],
		p99Lock:   acq[len(acq)*99/100],
		failed:    sumInts(fails),
		firstFail: cmp.Or(firstFail...),
	}, nil
}

// maxFailing is how long a client goes on after its pairs start failing.
const maxFailing = 10 * time.Second

func sumInts(v []int) (n int) {
	for _, x := range v {
		n += x
	}
	return n
}

// serverCPU is the server process's user plus system CPU time, from
// INFO cpu (Redis's fields; deadbolt reports the same).
func serverCPU(ctx context.Context, rc *redis.Client) (time.Duration, error) {
	info, err := rc.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	found := 0
	for line := range strings.SplitSeq(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu: %s: %w", line, err)
		}
		total += f
		found++
	}
	if found != 2 {
		return 0, errors.New("INFO cpu: no used_cpu_sys and used_cpu_user")
	}
	return time.Duration(total * float64(time.Second)), nil
}

// benchLibrary is the lock and unlock scripts as one function library
// (-fcall): each body becomes a function whose parameters are named KEYS
// and ARGV, so the scripts run unchanged.
func benchLibrary() string {
	return "#!lua name=deadbolt_bench\n" +
		"local function lock(KEYS, ARGV)\n" + scriptBody(lockFile) + "\nend\n" +
		"local function unlock(KEYS, ARGV)\n" + scriptBody(unlockFile) + "\nend\n" +
		"redis.register_function('redisson_lock', lock)\n" +
		"redis.register_function('redisson_unlock', unlock)\n"
}
