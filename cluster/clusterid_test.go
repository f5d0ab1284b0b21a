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
	"sync/atomic"
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

// readIndexProbe sends a read-index request without the cluster hello
// (as an older build does) to addr and reports whether it was answered.
func readIndexProbe(t *testing.T, addr string) bool {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	req := make([]byte, 1+17)
	req[0] = readIndexMagic
	binary.BigEndian.PutUint64(req[1:9], 42)
	if _, err := nc.Write(req); err != nil {
		return false
	}
	var ans [readIndexAnswer]byte
	_, err = io.ReadFull(nc, ans[:])
	return err == nil && binary.BigEndian.Uint64(ans[:8]) == 42
}

// olderStandIn is a stand-in for an older build's Raft address (a real
// older build is in cmd/deadbolt's upgrade tests): it reads what a
// connection sent first and, on the hello's magic, closes it without an
// answer (raft's unknown RPC type: a clean end of stream); anything else
// it echoes. Each connection's first byte goes to firsts. With reset, it
// resets the next connection instead (a transient failure).
type olderStandIn struct {
	ln     net.Listener
	firsts chan byte
	reset  atomic.Bool
	// closeNoHello: close a connection without the hello at once, as a
	// node of this build without --preserve-downgrade does.
	closeNoHello atomic.Bool
}

func newOlderStandIn(t *testing.T) *olderStandIn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	o := &olderStandIn{ln: ln, firsts: make(chan byte, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				b := make([]byte, 256)
				n, err := c.Read(b)
				if err != nil || n == 0 {
					return
				}
				o.firsts <- b[0]
				if o.reset.CompareAndSwap(true, false) {
					c.(*net.TCPConn).SetLinger(0)
					return
				}
				if b[0] != clusterHelloMagic && !o.closeNoHello.Load() {
					c.Write(b[:1])
				}
			}(c)
		}
	}()
	return o
}

func (o *olderStandIn) addr() raft.ServerAddress { return raft.ServerAddress(o.ln.Addr().String()) }

// first is the first byte of the stand-in's next connection; 0 if none
// came within 5 s.
func (o *olderStandIn) first() byte {
	select {
	case b := <-o.firsts:
		return b
	case <-time.After(5 * time.Second):
		return 0
	}
}

// helloDialer is a demuxStream that dials only, as a node with id id.
func helloDialer(t *testing.T, id string, preserve bool) *demuxStream {
	stream, err := listenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Close() })
	return &demuxStream{StreamLayer: stream, hello: &clusterHello{own: func() string { return id }, preserve: preserve}}
}

// A connection without the cluster hello comes from an older build: a
// node that knows its id refuses it, unless it runs with
// --preserve-downgrade (an older build may be a member), or knows no id.
func TestClusterHelloNoHelloRefused(t *testing.T) {
	dc := startDiskCluster(t, 1, nil)
	clusterIDs(t, dc)
	if readIndexProbe(t, dc.nodes[0].RaftAddr()) {
		t.Fatal("a node that knows its id served a connection without the cluster hello, without --preserve-downgrade")
	}
	n := dc.restartWith(t, 0, func(c *Config) { c.PreserveDowngrade = true })
	dc.leader(-1)
	if n.ClusterID() == "" {
		t.Fatal("the restarted node lost its cluster id")
	}
	if !readIndexProbe(t, n.RaftAddr()) {
		t.Fatal("with --preserve-downgrade a connection without the cluster hello was not served")
	}
	fresh := startTestClusterWith(t, 1, func(i int, cfg *Config) { cfg.PreserveDowngrade = true })
	if fresh.nodes[0].ClusterID() != "" || !readIndexProbe(t, fresh.nodes[0].RaftAddr()) {
		t.Fatal("a node that knows no id did not serve a connection without the cluster hello")
	}
}

// Dialing an older build (which closes the connection at the hello): with
// --preserve-downgrade the dialer dials again without the hello, and does
// so for a while; without the flag it does not (the dial fails, and the
// next one sends the hello again).
func TestClusterHelloOlderPeers(t *testing.T) {
	id := newClusterID()
	o := newOlderStandIn(t)
	d := helloDialer(t, id, true)
	conn, err := d.Dial(o.addr(), 5*time.Second)
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
	if f1, f2 := o.first(), o.first(); f1 != clusterHelloMagic || f2 != 7 {
		t.Fatalf("first bytes %#x %#x, want the hello then the connection's own", f1, f2)
	}
	// And for a while it dials that address without the hello.
	conn2, err := d.Dial(o.addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn2.Write([]byte{9})
	if f := o.first(); f != 9 {
		t.Fatalf("a later dial sent %#x first, want the connection's own byte", f)
	}
	conn2.Close()
	// The peer runs this build again, without the flag: it closes a
	// connection without the hello before answering. The next dial sends
	// the hello again (before, it waited out olderPeerFor: a minute in
	// which the node received no log).
	o.closeNoHello.Store(true)
	conn3, err := d.Dial(o.addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn3.Write([]byte{11})
	if f := o.first(); f != 11 {
		t.Fatalf("a later dial sent %#x first, want the connection's own byte", f)
	}
	if n, err := conn3.Read(echo[:]); n != 0 || err == nil {
		t.Fatalf("the peer answered a connection it closes: %d %v", n, err)
	}
	conn3.Close()
	o.closeNoHello.Store(false)
	if conn4, err := d.Dial(o.addr(), 5*time.Second); err == nil {
		conn4.Close()
	}
	if f := o.first(); f != clusterHelloMagic {
		t.Fatalf("after a connection without the hello ended unanswered the dial sent %#x first, want the hello", f)
	}

	// Without the flag: no fallback.
	strict := helloDialer(t, id, false)
	for i := 0; i < 2; i++ {
		if c, err := strict.Dial(o.addr(), 5*time.Second); err == nil {
			c.Close()
			t.Fatal("without --preserve-downgrade a peer that closed at the hello was dialed again without it")
		}
		if f := o.first(); f != clusterHelloMagic {
			t.Fatalf("dial %d without the flag sent %#x first, want the hello", i, f)
		}
	}
}

// A transient failure at the hello (here a reset) is a failed dial, even
// with --preserve-downgrade: the peer is not taken for an older build, and
// the next dial sends the hello (it used to dial without it for a minute,
// skipping the check).
func TestClusterHelloTransientFailureKeepsHello(t *testing.T) {
	o := newOlderStandIn(t)
	d := helloDialer(t, newClusterID(), true)
	o.reset.Store(true)
	if c, err := d.Dial(o.addr(), 5*time.Second); err == nil {
		c.Write([]byte{5})
		c.Close()
		if f1, f2 := o.first(), o.first(); f2 != clusterHelloMagic {
			t.Fatalf("after a reset at the hello the dialer dialed again without it (first bytes %#x then %#x)", f1, f2)
		}
	}
	o.first()
	c, _ := d.Dial(o.addr(), 5*time.Second)
	if c != nil {
		c.Close()
	}
	if f := o.first(); f != clusterHelloMagic {
		t.Fatalf("the dial after a reset sent %#x first, want the hello", f)
	}
}
