package main

import (
	"context"
	"errors"
	"path/filepath"
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
