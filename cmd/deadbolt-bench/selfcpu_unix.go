//go:build unix

package main

import (
	"syscall"
	"time"
)

// selfCPU is this process's CPU time, user plus system: the load
// generator's own cost (its clients' encoding, parsing, system calls and
// scheduling).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
