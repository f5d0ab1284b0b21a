package deadbolt

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// sendShutdown sends SHUTDOWN on a connection of its own and returns what
// came back before the node closed the connection.
func sendShutdown(tb testing.TB, addr string) string {
	tb.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write([]byte("*1\r\n$8\r\nSHUTDOWN\r\n")); err != nil {
		tb.Fatal(err)
	}
	got, err := io.ReadAll(nc)
	if err != nil {
		tb.Fatalf("waiting for the node to close the connection: %v (read %q)", err, got)
	}
	return string(got)
}

// An embedded node refuses SHUTDOWN unless its program lets clients stop
// it; Shutdown and Close may both be called, in any order.
func TestShutdownEmbedded(t *testing.T) {
	ctx := context.Background()
	err := client(t, RunT(t).Addr()).Do(ctx, "shutdown").Err()
	if err == nil || err.Error() != "ERR SHUTDOWN is disabled on an embedded deadbolt node: the program that runs it stops it (its Config.Shutdown enables the command)" {
		t.Fatalf("SHUTDOWN on an embedded node: %v", err)
	}

	// In memory, and a one-voter Raft node, which has nobody to hand
	// leadership to.
	for _, dir := range []string{"", t.TempDir()} {
		var n *Node
		stopped := make(chan error, 1)
		n = RunT(t, func(c *Config) {
			c.DataDir = dir
			c.Shutdown = func() { go func() { stopped <- n.Shutdown() }() }
		})
		for deadline := time.Now().Add(10 * time.Second); dir != "" && !n.Raft().IsLeader(); {
			if time.Now().After(deadline) {
				t.Fatal("the one-voter node never led")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := client(t, n.Addr()).Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := sendShutdown(t, n.Addr()); got != "" {
			t.Fatalf("SHUTDOWN got %q", got)
		}
		if err := <-stopped; err != nil {
			t.Fatalf("Shutdown (data dir %q): %v", dir, err)
		}
		if err := n.Close(); err != nil { // RunT closes it again
			t.Fatalf("Close after Shutdown: %v", err)
		}
	}
}

// SHUTDOWN sent to a cluster's leader: the node hands leadership over,
// then stops and closes the client's connection without a reply; the
// others have a leader and the locks taken before.
func TestClusterShutdownCommand(t *testing.T) {
	stopped := make(chan error, 1)
	var c *Cluster
	c = RunClusterT(t, 3, func(i int, cfg *Config) {
		cfg.Shutdown = func() { go func() { stopped <- c.Nodes[i].Shutdown() }() }
	})
	ctx := context.Background()
	old := c.Leader()
	if ok, err := client(t, c.Addr(old)).SetNX(ctx, "lock", "owner-1", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if got := sendShutdown(t, c.Addr(old)); got != "" {
		t.Fatalf("SHUTDOWN got %q", got)
	}
	// Shutdown's hand-over succeeded: the node was not leader when it
	// stopped.
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	c.Nodes[old] = nil
	nl := c.WaitNewLeader(old)
	if v, err := client(t, c.Addr(nl)).Get(ctx, "lock").Result(); err != nil || v != "owner-1" {
		t.Fatalf("the lock on the new leader: %q %v", v, err)
	}
}
