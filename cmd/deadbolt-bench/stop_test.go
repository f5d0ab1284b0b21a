package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testredis"
)

// SIGTERM (the context's cancellation) stops the key loaders promptly:
// -longread's SET batches against a real redis-server, and -memory's
// backup of millions of locks built in process (before, the long-read load
// went on to the last of its keys unless a batch failed, and the backup to
// its last lock).
func TestLoadersStopOnCancel(t *testing.T) {
	t.Run("longread", func(t *testing.T) {
		addr := testredis.Start(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			var row longReadRow
			done <- longRead(ctx, addr, 100_000_000, &row) // far more than loads in the test's time
		}()
		time.Sleep(200 * time.Millisecond) // loading by then
		cancel()
		wantStopped(t, done)
	})
	t.Run("memory-backup", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		path := filepath.Join(t.TempDir(), "b")
		done := make(chan error, 1)
		go func() {
			// Not too many (without the check a run builds them all, in
			// memory): minutes under -race, seconds with the check.
			done <- writeLockBackup(ctx, path, 3_000_000, time.Minute)
		}()
		time.Sleep(200 * time.Millisecond)
		cancel()
		wantStopped(t, done)
	})
}

func wantStopped(t *testing.T, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still loading 10 s after the cancellation")
	}
}

// Stopped (SIGTERM) while a system is measured, -longread reports the rows
// it has (here the stopped one's, with its error) before it returns the
// cancellation, as it does with -deadbolt-addr.
func TestLongReadStoppedReportsRows(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal(err) // installed here and in CI
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config{redisServer: "redis-server", workDir: t.TempDir(), keys: 1000, longSystems: []string{"redis"}}
	var stdout bytes.Buffer
	stderr := writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("longread: redis: loading")) {
			cancel() // as SIGTERM does, once redis-server runs
		}
		return len(p), nil
	})
	err := runLongRead(ctx, cfg, &stdout, stderr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("runLongRead: %v, want context.Canceled", err)
	}
	if !strings.Contains(stdout.String(), "redis") || !strings.Contains(stdout.String(), "error:") {
		t.Fatalf("no row for the stopped system; stdout:\n%s", stdout.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
