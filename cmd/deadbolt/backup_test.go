package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// deadbolt backup writes a backup file; a node started with --restore
// FILE on an empty data directory serves its locks; --restore over a data
// directory with state is refused, naming it.
func TestRunBackupAndRestore(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "deadbolt.backup")
	addr := freeAddr(t)
	serve := func(args ...string) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		var out, errb lockedBuffer
		go func() { done <- run(ctx, args, &out, &errb) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run %q: %v\n%s", args, err, errb.String())
			}
		}
	}
	stop := serve("--id", "n1", "--addr", addr, "--raft-addr", freeAddr(t), "--data-dir", filepath.Join(dir, "old"), "--requirepass", "pw")
	dialWhenUp(t, addr).Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc := redis.NewClient(&redis.Options{Addr: addr, Password: "pw", MaxRetries: -1})
	defer rc.Close()
	for rc.Set(ctx, "lock:a", "owner-1", 0).Err() != nil && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // until the lone node leads
	}
	if err := rc.Set(ctx, "lock:b", "owner-2", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	var out, errb lockedBuffer
	if err := run(ctx, []string{"backup", "--addr", addr, "--out", file, "--pass", "wrong"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "AUTH") {
		t.Errorf("a wrong password: %v", err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a failed backup left a file")
	}
	t.Setenv("DEADBOLT_PASSWORD", "pw")
	if err := run(ctx, []string{"backup", "--addr", addr, "--out", file}, &out, &errb); err != nil {
		t.Fatalf("backup: %v", err)
	}
	if !strings.Contains(out.String(), "written to "+file) {
		t.Errorf("backup said %q", out.String())
	}
	stop()

	addr2, newDir := freeAddr(t), filepath.Join(dir, "new")
	args := []string{"--id", "m1", "--addr", addr2, "--raft-addr", freeAddr(t), "--data-dir", newDir, "--restore", file}
	stop = serve(args...)
	dialWhenUp(t, addr2).Close()
	rc2 := redis.NewClient(&redis.Options{Addr: addr2, Password: "pw", MaxRetries: -1})
	defer rc2.Close()
	var got string
	for ctx.Err() == nil {
		if got, _ = rc2.Get(ctx, "lock:a").Result(); got != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got != "owner-1" || rc2.Get(ctx, "lock:b").Val() != "owner-2" {
		t.Errorf("after the restore: lock:a %q, lock:b %q", got, rc2.Get(ctx, "lock:b").Val())
	}
	if ttl := rc2.PTTL(ctx, "lock:b").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("lock:b has %v left", ttl)
	}
	stop()
	err := run(ctx, args, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), newDir) || !strings.Contains(err.Error(), "empty data directory") {
		t.Errorf("--restore over state: %v", err)
	}
	os.WriteFile(file, []byte("DBOLTSNP garbage"), 0o600)
	err = run(ctx, []string{"--addr", freeAddr(t), "--data-dir", filepath.Join(dir, "third"), "--restore", file}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("--restore of a bad file: %v", err)
	}
}
