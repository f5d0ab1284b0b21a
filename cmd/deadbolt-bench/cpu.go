package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTick = 10 * time.Millisecond

// procCPU is the summed user plus system CPU time of the processes, from
// /proc/<pid>/stat.
func procCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0, err
		}
		// Fields after the command name, which is in parentheses and
		// may contain spaces: state is field 3, utime 14, stime 15.
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
		}
		for _, s := range f[11:13] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
			}
			total += time.Duration(n) * clockTick
		}
	}
	return total, nil
}

// machineCPU returns the machine's busy and total CPU time in ticks, from
// the first line of /proc/stat (idle and iowait count as not busy).
func machineCPU() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected format")
	}
	for i, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i >= 8 {
			break // guest times are counted in user already
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// measureCPU drives the workers and fills cpu/op from the target's
// processes' CPU time.
func measureCPU(ctx context.Context, t target, clients int, cfg config, worker func(int) (pairFunc, func(), error)) (cell, error) {
	var cpu0, cpu1 time.Duration
	var err0, err1 error
	c, err := drive(ctx, clients, cfg, worker,
		func() { cpu0, err0 = procCPU(t.pids) },
		func() { cpu1, err1 = procCPU(t.pids) })
	if err != nil {
		return cell{}, err
	}
	if len(t.pids) > 0 && err0 == nil && err1 == nil && cpu1 > cpu0 {
		c.cpuPerOp = (cpu1 - cpu0) / time.Duration(c.ops)
	}
	return c, nil
}
