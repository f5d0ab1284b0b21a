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
}

func (c cell) String() string {
	return fmt.Sprintf("%8.0f ops/s  p50 %s  p99 %s  (%d pairs)", c.opsPerSec, us(c.p50), us(c.p99), c.ops)
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
	}
}

// measure runs clients workers against addr, each doing lock+unlock pairs
// on its own lock, for cfg.warmup unmeasured and then cfg.duration.
func measure(ctx context.Context, addr string, clients int, cfg config) (cell, error) {
	rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: clients, MinIdleConns: clients})
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

	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	if len(all) == 0 {
		return cell{}, errors.New("no operation completed")
	}
	slices.Sort(all)
	return cell{
		ops:       len(all),
		opsPerSec: float64(len(all)) / elapsed.Seconds(),
		p50:       all[len(all)*50/100],
		p99:       all[len(all)*99/100],
	}, nil
}
