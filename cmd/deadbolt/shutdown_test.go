package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// shutdownProc sends SHUTDOWN to p, checks that the connection closes
// without a reply and that the process exits with status 0, and returns
// the process's log.
func shutdownProc(t *testing.T, p *proc) string {
	t.Helper()
	sendShutdown(t, p)
	return waitExit(t, p)
}

func sendShutdown(t *testing.T, p *proc) {
	t.Helper()
	nc, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write([]byte("*1\r\n$8\r\nSHUTDOWN\r\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(nc); err != nil || len(got) != 0 {
		t.Fatalf("SHUTDOWN to %s: %q before the connection closed (%v)", p.id, got, err)
	}
}

// waitExit waits for p to exit after SHUTDOWN, with status 0, and returns
// its log.
func waitExit(t *testing.T, p *proc) string {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		p.cmd = nil // exited: nothing for kill to do
		if err != nil {
			t.Fatalf("%s after SHUTDOWN: %v", p.id, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s still running 20 s after SHUTDOWN", p.id)
	}
	p.log.Close()
	p.log = nil
	b, err := os.ReadFile(filepath.Join(p.dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "shutting down: SHUTDOWN from a client") {
		t.Fatalf("%s's log does not say why it stopped:\n%s", p.id, b)
	}
	return string(b)
}

// startProcs starts n processes of bin forming one cluster, named prefix1
// to prefixN, each with the extra flags; the test's end kills them, and
// prints their logs if it failed.
func startProcs(t *testing.T, bin, prefix string, n int, extra ...string) []*proc {
	t.Helper()
	procs := make([]*proc, n)
	var peers []string
	for i := range procs {
		procs[i] = &proc{id: fmt.Sprintf("%s%d", prefix, i+1), addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir(), extra: extra}
		peers = append(peers, procs[i].id+"="+procs[i].raft)
	}
	for _, p := range procs {
		p.start(t, bin, strings.Join(peers, ","))
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range procs {
				b, _ := os.ReadFile(filepath.Join(p.dir, "log"))
				t.Logf("%s log:\n%s", p.id, b)
			}
		}
	})
	return procs
}

func waitLeaderOf(t *testing.T, procs []*proc) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if l, err := leaderOf(context.Background(), procs); err == nil {
			return l
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader within 20s")
	return -1
}

// TestProcessShutdownCommand sends SHUTDOWN to the leader of three real
// processes: the leader hands leadership over, closes the client's
// connection without a reply and exits 0; the other two have a leader at
// once and the lock taken before. Then SHUTDOWN stops a one-voter node
// too, with status 0 (it has nobody to hand leadership to), and
// redis-cli, when installed, prints nothing for it, as for Redis.
func TestProcessShutdownCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildBinary(t)
	ctx := context.Background()

	procs := startProcs(t, bin, "p", 3)
	old := waitLeaderOf(t, procs)
	leader := redis.NewClient(&redis.Options{Addr: procs[old].addr, MaxRetries: -1})
	ok, err := leader.SetNX(ctx, "lock", "owner-1", time.Minute).Result()
	leader.Close()
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	log := shutdownProc(t, procs[old])
	stopped := time.Now()
	if !strings.Contains(log, "cluster: leadership handed over") {
		t.Fatalf("%s stopped without handing leadership over:\n%s", procs[old].id, log)
	}
	nl := waitLeaderOf(t, procs)
	t.Logf("%s handed leadership over; %s leads %v after the SHUTDOWN connection closed",
		procs[old].id, procs[nl].id, time.Since(stopped).Round(time.Millisecond))
	for _, p := range procs {
		if p.cmd == nil {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 8 * time.Second})
		v, err := c.Get(ctx, "lock").Result()
		c.Close()
		if err != nil || v != "owner-1" {
			t.Fatalf("the lock through %s: %q %v", p.id, v, err)
		}
	}

	single := startProcs(t, bin, "single", 1)[0]
	waitLeaderOf(t, []*proc{single})
	if cli, err := exec.LookPath("redis-cli"); err == nil {
		host, port, _ := net.SplitHostPort(single.addr)
		out, err := exec.Command(cli, "-h", host, "-p", port, "shutdown").CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Fatalf("redis-cli shutdown: %q %v", out, err)
		}
		waitExit(t, single)
		return
	}
	shutdownProc(t, single)
}
