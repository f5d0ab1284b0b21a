package deadbolt

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
)

// Cluster is an in-process Raft cluster for tests: real nodes with real
// Raft and RESP listeners on 127.0.0.1, links a test can cut, nodes a test
// can kill and restart.
type Cluster struct {
	tb    testing.TB
	Nodes []*Node // nil while a node is down
	Net   *cluster.Network
	Clock *cluster.ManualClock // shared by every node

	mu    sync.Mutex
	cfgs  []Config
	ids   []string
	addrs []string // RESP addresses, kept across restarts
}

// ClusterOption changes every node's configuration.
type ClusterOption func(i int, c *Config)

// RunClusterT starts an n-node cluster, data on disk in t.TempDir(), with
// short Raft timeouts, waits for a leader, and stops every node when the
// test ends. Raft's own log goes to t.Log. An option that sets node 0's Restore
// starts the cluster from that backup.
func RunClusterT(tb testing.TB, n int, opts ...ClusterOption) *Cluster {
	tb.Helper()
	c := &Cluster{tb: tb, Net: cluster.NewNetwork(), Clock: &cluster.ManualClock{}}
	logw := &tbWriter{tb: tb}
	tb.Cleanup(logw.stop) // registered first, so it runs after the nodes stop
	var peers []cluster.Peer
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i+1)
		cfg := Config{
			ID:               id,
			Addr:             "127.0.0.1:0",
			RaftAddr:         "127.0.0.1:0",
			DataDir:          tb.TempDir(),
			HeartbeatTimeout: time.Second,
			ElectionTimeout:  time.Second,
			LeaderLease:      500 * time.Millisecond,
			CommandTimeout:   5 * time.Second,
			Clock:            c.Clock,
			RaftLog:          logw,
			network:          c.Net,
			noBootstrap:      true,
		}
		for _, o := range opts {
			o(i, &cfg)
		}
		node, err := Start(cfg)
		if err != nil {
			c.closeAll()
			tb.Fatalf("deadbolt: start %s: %v", id, err)
		}
		// Keep the ports: a restarted node comes back where it was.
		cfg.Addr = node.Addr()
		cfg.RaftAddr = node.raft.RaftAddr()
		if a := node.SentinelAddr(); a != "" {
			cfg.SentinelAddr = a
		}
		c.cfgs = append(c.cfgs, cfg)
		c.ids = append(c.ids, id)
		c.addrs = append(c.addrs, cfg.Addr)
		c.Nodes = append(c.Nodes, node)
		peers = append(peers, cluster.Peer{ID: id, RaftAddr: cfg.RaftAddr})
	}
	restore := c.cfgs[0].Restore
	for i := range c.cfgs {
		c.cfgs[i].noBootstrap = false
		c.cfgs[i].Peers = peers
		c.cfgs[i].Restore = nil
	}
	tb.Cleanup(c.closeAll)
	if restore != nil {
		// Node 0 starts again from the backup, with every node as a
		// member (its data directory is still empty: it was never
		// bootstrapped); the others install the backup from it.
		c.cfgs[0].Restore = restore
		c.Restart(0)
		c.cfgs[0].Restore = nil
	} else if err := c.Nodes[0].raft.Bootstrap(peers); err != nil {
		c.closeAll()
		tb.Fatal(err)
	}
	c.WaitLeader()
	return c
}

func (c *Cluster) closeAll() {
	c.Net.Heal()
	for i, n := range c.Nodes {
		if n != nil {
			n.Close()
			c.Nodes[i] = nil
		}
	}
}

// IDs returns the node names.
func (c *Cluster) IDs() []string { return append([]string(nil), c.ids...) }

// Addr returns node i's RESP address (also while it is down).
func (c *Cluster) Addr(i int) string { return c.addrs[i] }

// Leader returns the index of the ready leader, or -1.
func (c *Cluster) Leader() int {
	for i, n := range c.Nodes {
		if n != nil && n.raft.IsLeader() {
			return i
		}
	}
	return -1
}

// Followers returns the indexes of the running nodes that do not lead.
func (c *Cluster) Followers() []int {
	var out []int
	l := c.Leader()
	for i, n := range c.Nodes {
		if n != nil && i != l {
			out = append(out, i)
		}
	}
	return out
}

// WaitLeader waits until some node is a ready leader whose address every
// running node knows, and returns its index.
func (c *Cluster) WaitLeader() int {
	c.tb.Helper()
	return c.waitLeader(-1)
}

// WaitNewLeader waits for a leader other than old.
func (c *Cluster) WaitNewLeader(old int) int {
	c.tb.Helper()
	return c.waitLeader(old)
}

func (c *Cluster) waitLeader(not int) int {
	c.tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if l := c.Leader(); l >= 0 && l != not && c.allKnow(l) {
			return l
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.tb.Fatalf("deadbolt: no leader (other than %d) within 15s", not)
	return -1
}

// allKnow reports whether every running node knows l as the leader with
// its client address, and every member's client address is registered.
func (c *Cluster) allKnow(l int) bool {
	members, err := c.Nodes[l].raft.Members()
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.RESPAddr == "" {
			return false
		}
	}
	for _, n := range c.Nodes {
		if n == nil {
			continue
		}
		id, addr, ok := n.raft.Leader()
		if !ok || id != c.ids[l] || addr != c.Nodes[l].raft.RESPAddr() { // the published address (AnnounceAddr)
			return false
		}
	}
	return true
}

// Kill stops node i abruptly (no leadership hand-over).
func (c *Cluster) Kill(i int) {
	c.tb.Helper()
	if c.Nodes[i] == nil {
		return
	}
	c.Nodes[i].Close()
	c.Nodes[i] = nil
}

// Restart starts node i again from its data directory, on its old
// addresses.
func (c *Cluster) Restart(i int) *Node {
	c.tb.Helper()
	n, err := c.TryRestart(i, nil)
	if err != nil {
		c.tb.Fatalf("deadbolt: restart %s: %v", c.ids[i], err)
	}
	return n
}

// TryRestart is Restart returning the start error; edit, if set, changes
// node i's configuration first (for this start and later ones).
func (c *Cluster) TryRestart(i int, edit func(*Config)) (*Node, error) {
	c.tb.Helper()
	c.Kill(i)
	if edit != nil {
		edit(&c.cfgs[i])
	}
	var (
		n   *Node
		err error
	)
	for try := 0; try < 50; try++ {
		if n, err = Start(c.cfgs[i]); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	c.Nodes[i] = n
	return n, nil
}

// DataDir is node i's data directory.
func (c *Cluster) DataDir(i int) string { return c.cfgs[i].DataDir }

// Isolate cuts node i off from every other node.
func (c *Cluster) Isolate(i int) { c.Net.Isolate(c.ids[i], c.ids...) }

// Heal restores every link.
func (c *Cluster) Heal() { c.Net.Heal() }

// tbWriter sends raft's log lines to t.Log until the test ends.
type tbWriter struct {
	mu   sync.Mutex
	tb   testing.TB
	done bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && testing.Verbose() {
		w.tb.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *tbWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

var _ io.Writer = (*tbWriter)(nil)
