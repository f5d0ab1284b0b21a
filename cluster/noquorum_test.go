package cluster

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestNoLeaderSaysWhy: a node left without a quorum (the two other voters
// stopped) logs why it has no leader, naming the voters, how many a leader
// needs, and what dialing each one gave. Before, its own log said only that
// writes failed ("no leader"), and raft's, which names the peers, is not
// the node's.
func TestNoLeaderSaysWhy(t *testing.T) {
	var b syncBuffer
	c := startTestClusterWith(t, 3, func(i int, cfg *Config) {
		if i == 0 {
			cfg.Logger = slog.New(slog.NewTextHandler(&b, nil))
		}
	})
	c.nodes[1].Close()
	c.nodes[2].Close()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(b.String(), "cluster: no leader for") {
		if time.Now().After(deadline) {
			t.Fatalf("n1, alone of three voters, did not say why it has no leader within 20 s:\n%s", b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	line := b.String()[strings.Index(b.String(), "cluster: no leader for"):]
	line = line[:strings.IndexByte(line, '\n')]
	for _, want := range []string{"needs the votes of 2 of the 3 voters", "n2=" + c.nodes[1].RaftAddr(), "n3=" + c.nodes[2].RaftAddr(), "failed"} {
		if !strings.Contains(line, want) {
			t.Errorf("the warning lacks %q: %s", want, line)
		}
	}
}
