//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/tmpfs"
)

// TestProcessDiskFull is the report of issue 18 as a test: a one-voter
// deadbolt process whose --data-dir is on a small file system that fills
// up. It used to die ("panic: failed to save current term ... no space
// left on device") and refuse connections. Now every write gets OK or
// MISCONF, the process stays up and serves reads, writes resume when space
// returns, and a restart finds every acknowledged write.
// With --min-free-disk 0 the disk fills to the last byte: the log runs
// into its reserve segment, and writes are refused from then on.
func TestProcessDiskFull(t *testing.T) {
	bin := buildBinary(t)
	for _, minFree := range []string{"8mb", "0"} {
		t.Run("min-free-disk="+minFree, func(t *testing.T) { processDiskFull(t, bin, minFree) })
	}
}

func processDiskFull(t *testing.T, bin, minFree string) {
	mount := tmpfs.Mount(t, 96<<20) // 16 MiB segments: one in use, a spare, a reserve
	p := &proc{id: "n1", addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir(), extra: []string{"--min-free-disk", minFree}}
	if err := os.Symlink(mount, filepath.Join(p.dir, "data")); err != nil {
		t.Fatal(err)
	}
	peers := p.id + "=" + p.raft
	p.start(t, bin, peers)
	defer p.kill()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for c.Set(ctx, "lock:a", "owner-1", 0).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted after 30 s; log:\n%s", readLog(p))
		}
		time.Sleep(50 * time.Millisecond)
	}
	acked := map[string]bool{}
	ballast := tmpfs.Fill(t, mount, 0)
	val := strings.Repeat("v", 64<<10) // 800 of them cross two segments
	refused := 0
	for i := range 800 {
		k := fmt.Sprintf("k%d", i)
		err := c.Set(ctx, k, val, 0).Err()
		switch {
		case err == nil:
			acked[k] = true
		case strings.HasPrefix(err.Error(), "MISCONF") && strings.Contains(err.Error(), "data"):
			refused++
		default:
			t.Fatalf("SET %s on a full disk: %v (want OK or MISCONF); log:\n%s", k, err, readLog(p))
		}
	}
	t.Logf("full disk: %d of 800 writes acknowledged, %d refused with MISCONF", len(acked), refused)
	if refused == 0 {
		t.Fatal("no write was refused")
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process died: %v; log:\n%s", err, readLog(p))
	}
	if v, err := c.Get(ctx, "lock:a").Result(); err != nil || v != "owner-1" {
		t.Fatalf("GET on a full disk = %q, %v", v, err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for c.Set(ctx, "after", "1", 0).Err() != nil {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("writes not taken 10 s after space returned; log:\n%s", readLog(p))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("writes taken again %v after space returned", time.Since(start).Round(time.Millisecond))
	if log := readLog(p); strings.Contains(log, "panic") {
		t.Fatalf("the log has a panic:\n%s", log)
	}

	p.kill()
	p.start(t, bin, peers)
	deadline = time.Now().Add(30 * time.Second)
	for {
		v, err := c.Get(ctx, "after").Result()
		if err == nil && v == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a restart GET after = %q, %v; log:\n%s", v, err, readLog(p))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for k := range acked {
		if v, err := c.Get(ctx, k).Result(); err != nil || v != val {
			t.Fatalf("after a restart GET %s: %d bytes, %v", k, len(v), err)
		}
	}
}

func readLog(p *proc) string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "log"))
	return string(b)
}
