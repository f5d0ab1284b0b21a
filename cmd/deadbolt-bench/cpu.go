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
	each, err := procCPUEach(pids)
	var total time.Duration
	for _, d := range each {
		total += d
	}
	return total, err
}

// procCPUEach is each process's user plus system CPU time, in the order
// of pids.
func procCPUEach(pids []int) ([]time.Duration, error) {
	each := make([]time.Duration, len(pids))
	for i, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil, err
		}
		// Fields after the command name, which is in parentheses and
		// may contain spaces: state is field 3, utime 14, stime 15.
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 13 {
			return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
		}
		for _, s := range f[11:13] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
			}
			each[i] += time.Duration(n) * clockTick
		}
	}
	return each, nil
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
// processes' CPU time, and busiest/op from the one that spent the most.
func measureCPU(ctx context.Context, t target, clients int, cfg config, worker func(int) (pairFunc, func(), error)) (cell, error) {
	var cpu0, cpu1 []time.Duration
	var err0, err1 error
	c, err := drive(ctx, clients, cfg, worker,
		func() { cpu0, err0 = procCPUEach(t.pids) },
		func() { cpu1, err1 = procCPUEach(t.pids) })
	if err != nil {
		return cell{}, err
	}
	if len(t.pids) == 0 || err0 != nil || err1 != nil || c.ops == 0 {
		return c, nil
	}
	var total, busiest time.Duration
	for i := range cpu1 {
		d := cpu1[i] - cpu0[i]
		total += d
		busiest = max(busiest, d)
	}
	if total > 0 {
		c.cpuPerOp = total / time.Duration(c.ops)
		c.busiestPerOp = busiest / time.Duration(c.ops)
	}
	return c, nil
}
