package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// inUse returns the id of a process that holds path open, found through
// /proc (0 where there is no /proc, or none does). Downgrade refuses a
// directory a running node holds: rewriting its files under it would
// leave the node and the directory each believing another state.
func inUse(path string) int {
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		return 0
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && target == want {
				return pid
			}
		}
	}
	return 0
}

// refuseInUse is Downgrade's check that no process runs on dataDir.
func refuseInUse(dataDir string) error {
	stable := filepath.Join(dataDir, "log", "stable")
	if pid := inUse(stable); pid != 0 {
		return fmt.Errorf("cluster: downgrade: process %d holds %s open: stop the node first", pid, stable)
	}
	return nil
}
