package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/faultfs"
)

// The files the disk-eio nemesis fails are the ones a real redis-server
// writes and syncs its acknowledged writes to: with its --dir on a faultfs
// loopback and appendfsync always, failing the fsync, then the write, of
// aofFiles makes it exit 1 with the I/O error in its log (Redis 7.0.15's
// behaviour: it may not acknowledge what it could not persist). A glob
// that missed the incremental AOF would leave it running.
func TestRedisAOFFaultHitsTheAOF(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is needed and CI=true: %v", err)
		}
		t.Skipf("no redis-server: %v", err)
	}
	for _, mode := range eioModes {
		t.Run(mode, func(t *testing.T) {
			f := faultfs.MountTest(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			logf := filepath.Join(t.TempDir(), "redis.log")
			cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
				"--appendfsync", "always", "--dir", f.Dir, "--logfile", logf)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			// Registered after MountTest's unmount, so it runs before it.
			t.Cleanup(func() { cmd.Process.Kill(); <-done })

			c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
			defer c.Close()
			ctx := context.Background()
			deadline := time.Now().Add(10 * time.Second)
			for c.Set(ctx, "k", "before", 0).Err() != nil {
				if time.Now().After(deadline) {
					t.Fatalf("redis-server did not take a write within 10 s; log:\n%s", lastLines(logf))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if n := f.Faults(); n != 0 {
				t.Fatalf("%d calls failed before the fault", n)
			}

			failAOF(f, mode)
			if err := c.Set(ctx, "k", "during", 0).Err(); err == nil {
				t.Errorf("a write was acknowledged while the AOF's %s failed", mode)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("redis-server still runs 10 s after its AOF's %s began to fail (%d calls failed); log:\n%s", mode, f.Faults(), lastLines(logf))
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if log := lastLines(logf); !strings.Contains(log, "Input/output error") || !strings.Contains(log, "Exiting") {
				t.Errorf("the log does not give the I/O error and the exit:\n%s", log)
			}
			if f.Faults() == 0 {
				t.Error("no call failed")
			}
		})
	}
}

// lastLines is the end of a log, for a failure message.
func lastLines(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, "\n")
}
