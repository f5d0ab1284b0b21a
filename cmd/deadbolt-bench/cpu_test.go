//go:build linux

package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestProcCPUEach reads two processes' CPU times apart: this one, which
// burns CPU first, and an idle child. The busiest of the two is this
// process, and procCPU is their sum.
func TestProcCPUEach(t *testing.T) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	for selfCPU() < 60*time.Millisecond { // as getrusage counts it
	}
	pids := []int{child.Process.Pid, os.Getpid()}
	each, err := procCPUEach(pids)
	if err != nil {
		t.Fatal(err)
	}
	if len(each) != 2 || each[1] < 40*time.Millisecond || each[0] >= 20*time.Millisecond {
		t.Fatalf("CPU times of an idle child and of this busy process: %v", each)
	}
	sum, err := procCPU(pids)
	if err != nil {
		t.Fatal(err)
	}
	if sum < each[0]+each[1] {
		t.Errorf("procCPU %v below the sum of %v", sum, each)
	}
	if _, err := procCPUEach([]int{-1}); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
