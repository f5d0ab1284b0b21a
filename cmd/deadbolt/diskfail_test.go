package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitWrite waits until a SET through p is acknowledged.
func waitWrite(t *testing.T, p *proc, c *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Set(context.Background(), "ready", "1", 0).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted after 30 s; log:\n%s", readLog(p))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExitErr waits for p's process to end and returns its exit error.
func waitExitErr(t *testing.T, p *proc) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		p.cmd = nil
		if p.log != nil {
			p.log.Close()
			p.log = nil
		}
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("the process did not exit; log:\n%s", readLog(p))
		return nil
	}
}

// A failing disk, through the test-only --disk-fail-file (every sync of
// the log fails with EIO while the file exists; device-mapper is not in
// this kernel): the process stops serving and exits non-zero with an error
// naming the segment file; restarted on a working disk, it serves every
// write it acknowledged. Started on a data directory whose stable store
// was emptied, it refuses, naming the file and the repair.
func TestProcessDiskFailure(t *testing.T) {
	bin := buildBinary(t)
	failFile := filepath.Join(t.TempDir(), "fail")
	p := &proc{id: "n1", addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir(), extra: []string{"--disk-fail-file", failFile}}
	peers, c := oneVoterWith20Keys(t, bin, p)
	ctx := context.Background()
	if err := os.WriteFile(failFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := c.Set(ctx, "during", "1", 0).Err()
	if err == nil {
		t.Fatal("a write was acknowledged while every sync failed")
	}
	t.Logf("SET while the disk fails: %v", err)
	var ee *exec.ExitError
	if err := waitExitErr(t, p); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; log:\n%s", err, readLog(p))
	}
	log := readLog(p)
	seg := filepath.Join(p.dir, "data", "log", "00000000000000000001.seg")
	if !strings.Contains(log, "deadbolt: stopped: raftlog: fdatasync "+seg+" failed: input/output error") {
		t.Fatalf("the exit message does not name the file; log:\n%s", log)
	}
	if strings.Contains(log, "panic") {
		t.Fatalf("a panic; log:\n%s", log)
	}

	os.Remove(failFile)
	p.start(t, bin, peers)
	wantThe20Keys(t, p, c)
	p.kill()

	stable := filepath.Join(p.dir, "data", "log", "stable")
	if err := os.Truncate(stable, 0); err != nil {
		t.Fatal(err)
	}
	p.start(t, bin, peers)
	if err := waitExitErr(t, p); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit with an emptied stable store: %v; log:\n%s", err, readLog(p))
	}
	log = readLog(p)
	if !strings.Contains(log, "deadbolt: cluster: "+stable+" is missing or empty") || !strings.Contains(log, "RAFT REMOVE n1") {
		t.Fatalf("the start-up error does not name the file and the repair; log:\n%s", log)
	}
	if strings.Contains(log, "panic") {
		t.Fatalf("a panic; log:\n%s", log)
	}
}

// oneVoterWith20Keys starts p as a one-voter node, waits until it takes
// writes and writes k0..k19 (values 0..19). It returns p's --peers and a
// client; both the node and the client end with the test.
func oneVoterWith20Keys(t *testing.T, bin string, p *proc) (peers string, c *redis.Client) {
	t.Helper()
	peers = p.id + "=" + p.raft
	p.start(t, bin, peers)
	t.Cleanup(p.kill)
	c = redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	waitWrite(t, p, c)
	for i := range 20 {
		if err := c.Set(context.Background(), fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return peers, c
}

// wantThe20Keys waits until p takes writes again (after a restart) and
// checks that it serves the keys oneVoterWith20Keys wrote.
func wantThe20Keys(t *testing.T, p *proc, c *redis.Client) {
	t.Helper()
	waitWrite(t, p, c)
	for i := range 20 {
		if v, err := c.Get(context.Background(), fmt.Sprint("k", i)).Int(); err != nil || v != i {
			t.Fatalf("after the restart k%d = %d, %v", i, v, err)
		}
	}
}
