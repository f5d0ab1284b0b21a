package main

import (
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
	p50, p99  time.Duration
	cpuPerOp  time.Duration // server CPU time per pair; 0 if unknown
}

func (c cell) String() string {
	return fmt.Sprintf("%8.0f ops/s  p50 %s  p99 %s  cpu/op %s  (%d pairs)",
		c.opsPerSec, us(c.p50), us(c.p99), cpu(c.cpuPerOp), c.ops)
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
	return cell{
		opsPerSec: pick(func(c cell) float64 { return c.opsPerSec }),
		p50:       time.Duration(pick(func(c cell) float64 { return float64(c.p50) })),
		p99:       time.Duration(pick(func(c cell) float64 { return float64(c.p99) })),
		cpuPerOp:  time.Duration(pick(func(c cell) float64 { return float64(c.cpuPerOp) })),
	}
}

// measure runs clients workers against the target, each doing lock+unlock
// pairs on its own lock, for cfg.warmup unmeasured and then cfg.duration.
func measure(ctx context.Context, t target, clients int, cfg config) (cell, error) {
	rc := redis.NewClient(&redis.Options{Addr: t.addr, PoolSize: clients, MinIdleConns: clients})
	defer rc.Close()
	lockSHA, err := rc.ScriptLoad(ctx, scriptBody(lockFile)).Result()
	if err != nil {
		return cell{}, fmt.Errorf("SCRIPT LOAD lock: %w", err)
	}
	unlockSHA, err := rc.ScriptLoad(ctx, scriptBody(unlockFile)).Result()
	if err != nil {
		return cell{}, fmt.Errorf("SCRIPT LOAD unlock: %w", err)
	}
	lease := cfg.lease.Milliseconds()
	// A run-unique prefix, so that a lock left behind by an aborted run
	// on an external server does not make this one fail.
	prefix := strconv.FormatInt(time.Now().UnixNano(), 36)

	pair := func(name, channel, owner string) error {
		if err := rc.EvalSha(ctx, lockSHA, []string{name}, lease, owner).Err(); err != redis.Nil {
			return fmt.Errorf("lock %s: got %v, want nil (acquired)", name, err)
		}
		v, err := rc.EvalSha(ctx, unlockSHA, []string{name, channel}, "0", lease, owner).Result()
		if err != nil || v != int64(1) {
			return fmt.Errorf("unlock %s: got (%v, %v), want 1 (released)", name, v, err)
		}
		return nil
	}

	var (
		wg      sync.WaitGroup
		samples = make([][]time.Duration, clients)
		errs    = make([]error, clients)
		start   = make(chan struct{})
		begin   time.Time
		end     time.Time
	)
	warmEnd := time.Now().Add(cfg.warmup)
	for i := range clients {
		name := "deadbolt-bench:" + prefix + ":" + strconv.Itoa(i)
		channel := "redisson_lock__channel:{" + name + "}"
		owner := "3f0c7a4e-bench-" + prefix + ":" + strconv.Itoa(i)
		wg.Go(func() {
			for time.Now().Before(warmEnd) {
				if err := pair(name, channel, owner); err != nil {
					errs[i] = err
					return
				}
			}
			<-start
			lat := make([]time.Duration, 0, 1<<14)
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				if err := pair(name, channel, owner); err != nil {
					errs[i] = err
					return
				}
				lat = append(lat, time.Since(t0))
			}
			samples[i] = lat
		})
	}
	<-time.After(time.Until(warmEnd))
	cpu0, cpuErr := serverCPU(ctx, rc)
	begin = time.Now()
	end = begin.Add(cfg.duration)
	close(start)
	wg.Wait()
	elapsed := time.Since(begin)
	if err := errors.Join(errs...); err != nil {
		return cell{}, err
	}
	if err := ctx.Err(); err != nil {
		return cell{}, err
	}
	cpu1, err := serverCPU(ctx, rc)
	cpuErr = errors.Join(cpuErr, err)

	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	if len(all) == 0 {
		return cell{}, errors.New("no operation completed")
	}
	slices.Sort(all)
	c := cell{
		ops:       len(all),
		opsPerSec: float64(len(all)) / elapsed.Seconds(),
		p50:       all[len(all)*50/100],
		p99:       all[len(all)*99/100],
	}
	if !t.inProcess && cpuErr == nil && cpu1 > cpu0 {
		c.cpuPerOp = (cpu1 - cpu0) / time.Duration(len(all))
	}
	return c, nil
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
