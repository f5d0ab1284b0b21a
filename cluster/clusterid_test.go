package cluster

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// clusterIDs waits until every node of dc knows the same cluster id, and
// returns it.
func clusterIDs(t *testing.T, dc *diskCluster) string {
	t.Helper()
	var id string
	within(t, 10*time.Second, "every node to learn the cluster id", func() bool {
		id = dc.nodes[0].ClusterID()
		for _, n := range dc.nodes {
			if n.ClusterID() == "" || n.ClusterID() != id {
				return false
			}
		}
		return true
	})
	for i := range dc.nodes {
		got, err := readClusterID(dc.dir(i))
		if err != nil || got != id {
			t.Fatalf("node %d's %s: %q, %v; want %q", i, clusterIDFile, got, err, id)
		}
	}
	return id
}

// TestOtherClustersDataDirRefused copies n1's data directory of cluster A
// into the n1 slot of cluster B and starts it there. Node ids alone cannot
// tell the two n1 apart; the cluster ids in the members' handshake do: B's
// members and the node on A's directory refuse each other, each with a
// log line naming its data directory and both ids, and neither cluster's
// data reaches the other. Without the check raft mixes the two (B's
// leader appends to the copied log, or the copy's term unseats B's
// leader, and with a log as long as B's it may lead B with A's log).
func TestOtherClustersDataDirRefused(t *testing.T) {
	logs := &syncBuffer{}
	a := startDiskCluster(t, 3, nil)
	b := startDiskCluster(t, 3, func(i int, cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	idA, idB := clusterIDs(t, a), clusterIDs(t, b)
	if idA == idB {
		t.Fatalf("two clusters with one id %s", idA)
	}
	a.write(t, "a-", 5, 8)
	b.write(t, "b-", 5, 8)
	a.converged()
	b.converged()

	// A stops for good; B's n1 stops and comes back on a copy of A's n1.
	for i := range a.nodes {
		a.stop(i)
	}
	lastA := a.nodes[0].raft.LastIndex()
	b.stop(0)
	if err := os.RemoveAll(b.dir(0)); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", a.dir(0), b.dir(0)).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	b.leader(0)
	copied, err := b.start(0)
	if err != nil {
		t.Fatal(err)
	}
	if copied.ClusterID() != idA {
		t.Fatalf("the copied directory's node says cluster %q, want A's %s", copied.ClusterID(), idA)
	}
	// Until both sides have refused the other (B's leader dials n1 at
	// once to replicate), or the clusters mixed.
	mixed := func() string {
		if v, ok := get(copied, "b-0"); ok {
			return "the node on A's directory holds B's b-0 = " + v
		}
		if li := copied.raft.LastIndex(); li != lastA {
			return fmt.Sprintf("the log on A's directory went from index %d to %d", lastA, li)
		}
		for i := 1; i < 3; i++ {
			if v, ok := get(b.nodes[i], "a-0"); ok {
				return fmt.Sprintf("B's node %d holds A's a-0 = %s", i, v)
			}
		}
		return ""
	}
	refused := func(dir, own, theirs string) bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "member of another cluster") && strings.Contains(line, "dir="+dir+" ") &&
				strings.Contains(line, "cluster_id="+own) && strings.Contains(line, "peer_cluster_id="+theirs) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(15 * time.Second)
	for !(refused(b.dir(0), idA, idB) && (refused(b.dir(1), idB, idA) || refused(b.dir(2), idB, idA))) {
		if m := mixed(); m != "" {
			t.Fatalf("the clusters mixed: %s", m)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged on both sides within 15 s; log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// B goes on without n1, and nothing crossed either way.
	b.write(t, "b-after-", 1, 8)
	if m := mixed(); m != "" {
		t.Fatalf("the clusters mixed: %s", m)
	}
	if _, ok := get(copied, "b-after-0"); ok {
		t.Fatal("the node on A's directory took B's write")
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "member of another cluster") {
			t.Logf("logged: %s", line)
			break
		}
	}
}

// A peer that sends no cluster id (an older build, or a node that has
// not learned one) is accepted by a node that knows its id; and a node
// that knows its id, dialing an older build (which closes the connection
// at the unknown first byte, as raft does), dials again without the hello
// and is not refused. The older acceptor here is a stand-in (a real older
// build is in cmd/deadbolt's rolling-upgrade test): it reads one byte,
// closes on the hello's, and echoes anything else.
func TestClusterHelloOlderPeers(t *testing.T) {
	c := startTestCluster(t, 1)
	n := c.nodes[0]
	within(t, 10*time.Second, "the cluster id", func() bool { return n.ClusterID() != "" })

	// No hello: accepted (a read-index request, on a connection that
	// sends none, gets its answer).
	nc, err := net.DialTimeout("tcp", n.RaftAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	req := make([]byte, 1+17)
	req[0] = readIndexMagic
	binary.BigEndian.PutUint64(req[1:9], 42)
	if _, err := nc.Write(req); err != nil {
		t.Fatal(err)
	}
	var ans [readIndexAnswer]byte
	if _, err := io.ReadFull(nc, ans[:]); err != nil || binary.BigEndian.Uint64(ans[:8]) != 42 {
		t.Fatalf("a connection without the cluster hello was not served: %v %x", err, ans)
	}

	// An older acceptor.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	firsts := make(chan byte, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				var b [1]byte
				if _, err := c.Read(b[:]); err != nil {
					return
				}
				firsts <- b[0]
				if b[0] == clusterHelloMagic {
					return
				}
				c.Write(b[:])
			}(c)
		}
	}()
	stream, err := listenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	d := &demuxStream{StreamLayer: stream, hello: &clusterHello{own: n.ClusterID}}
	conn, err := d.Dial(raft.ServerAddress(ln.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("dialing an older build: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{7}); err != nil {
		t.Fatal(err)
	}
	var echo [1]byte
	if _, err := conn.Read(echo[:]); err != nil || echo[0] != 7 {
		t.Fatalf("the second connection to the older build: %v %v", echo, err)
	}
	if f1, f2 := <-firsts, <-firsts; f1 != clusterHelloMagic || f2 != 7 {
		t.Fatalf("first bytes %#x %#x, want the hello then the connection's own", f1, f2)
	}
	// And for a while it dials that address without the hello.
	conn2, err := d.Dial(raft.ServerAddress(ln.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn2.Write([]byte{9})
	if f := <-firsts; f != 9 {
		t.Fatalf("a later dial sent %#x first, want the connection's own byte", f)
	}
	conn2.Close()
}
