package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/redis/go-redis/v9"
)

// buildPlainBinary builds deadbolt without the race detector, whose shadow
// memory would swamp the resident size a test measures. DEADBOLT_PLAIN_BIN
// names another binary to measure instead (an older build, to compare).
func buildPlainBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("DEADBOLT_PLAIN_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "deadbolt")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// procStatusKB reads a field of /proc/PID/status in kB (VmRSS, VmHWM).
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestProcessesMaxmemoryRSS runs three real deadbolt processes with
// --maxmemory 8mb and has clients try to store sixteen times that through
// all three nodes at once: the writes past the limit are refused, and
// every process's peak resident size (VmHWM) stays within a bound
// relative to maxmemory, where without the limit one client could grow
// every node until the kernel kills it.
func TestProcessesMaxmemoryRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	const (
		maxmem  = 8 << 20
		attempt = 16 * maxmem // bytes the clients try to store
		valLen  = 4 << 10
	)
	bin := buildPlainBinary(t)
	procs := startProcs(t, bin, "m", 3, "--maxmemory", "8mb", "--snapshot-threshold", "1024", "--gc-percent", "100")
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The limit is proposed once there is a leader: wait for every
		// node to have it.
		n := 0
		for _, p := range procs {
			c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
			if v, err := c.ConfigGet(ctx, "maxmemory").Result(); err == nil && v["maxmemory"] == strconv.Itoa(maxmem) {
				n++
			}
			c.Close()
		}
		if n == len(procs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("--maxmemory not in force on every node within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	base := make([]int64, len(procs))
	for i, p := range procs {
		base[i] = procStatusKB(t, p.cmd.Process.Pid, "VmRSS")
	}

	value := strings.Repeat("x", valLen)
	var (
		tried, stored, refused atomic.Int64
		wg                     sync.WaitGroup
		errs                   = make(chan error, 6)
	)
	for w := range 6 {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: procs[w%3].addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
			defer c.Close()
			for i := 0; tried.Add(16*valLen) <= attempt; i++ {
				pipe := c.Pipeline()
				cmds := make([]*redis.StatusCmd, 16)
				for j := range cmds {
					cmds[j] = pipe.Set(ctx, fmt.Sprintf("k:%d:%d:%d", w, i, j), value, 0)
				}
				pipe.Exec(ctx)
				for _, cmd := range cmds {
					switch err := cmd.Err(); {
					case err == nil:
						stored.Add(1)
					case err.Error() == fsm.OOMError:
						refused.Add(1)
					default:
						errs <- fmt.Errorf("writer %d: %v", w, err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("tried %d MB: %d values of %d bytes stored, %d refused", attempt>>20, stored.Load(), valLen, refused.Load())
	if refused.Load() == 0 || stored.Load()*valLen > 2*maxmem {
		t.Errorf("%d values stored, %d refused, under maxmemory %d", stored.Load(), refused.Load(), maxmem)
	}
	// Resident size: the data (maxmemory's worth), its snapshot while one
	// is written, the log until it is compacted, and the garbage collector's
	// slack; far below the sixteen times maxmemory tried.
	const boundKB = 8 * maxmem >> 10
	for i, p := range procs {
		peak := procStatusKB(t, p.cmd.Process.Pid, "VmHWM")
		t.Logf("%s: VmRSS at start %d kB, peak VmHWM %d kB (bound %d kB over the start)", p.id, base[i], peak, boundKB)
		if peak-base[i] > boundKB {
			t.Errorf("%s: peak resident size grew by %d kB, more than %d kB (8 × maxmemory)", p.id, peak-base[i], boundKB)
		}
	}
}
