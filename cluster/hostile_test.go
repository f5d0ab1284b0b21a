package cluster

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/transport"
)

// A process that is no member connects to the nodes' Raft addresses and
// speaks raft's own RPCs (attack). Without peer authentication
// (--insecure-cluster) the test shows the damage: the term jumps and the
// stranger's write is applied. With a cluster secret nothing changes: the
// same term, the same leader, no write, and every node counts the failed
// handshake. (hostile_tls_test.go: the same with --tls-cluster.)
func TestHostilePeer(t *testing.T) {
	for _, secure := range []bool{false, true} {
		name := "insecure"
		if secure {
			name = "secret"
		}
		t.Run(name, func(t *testing.T) {
			var auths []*transport.SecretAuth
			c := startTestClusterWith(t, 3, func(i int, cfg *Config) {
				if secure {
					a, err := transport.NewSecretAuth([]byte("a cluster secret of the test"), time.Second)
					if err != nil {
						t.Fatal(err)
					}
					auths = append(auths, a)
					cfg.PeerAuth = a
				}
			})
			stranger, hdr := newStranger(t)
			c.attack(stranger, hdr, secure)
			for i, a := range auths {
				if a.Failures() == 0 {
					t.Fatalf("%s counted no failed handshake", c.ids[i])
				}
			}
		})
	}
}

// attack has stranger send raft RPCs with a far higher term to every
// node: AppendEntries carrying a write to a follower, RequestVote to the
// leader, InstallSnapshot of an empty state to the other follower (only
// when secure: without authentication it makes raft panic in the member,
// which would end the test process: damage enough). Without
// authentication it checks the damage (the follower's term jumps and the
// stranger's write is applied), with it that nothing changed: the same
// term, the same leader, the members' data.
func (c *testCluster) attack(stranger *raft.NetworkTransport, hdr raft.RPCHeader, secure bool) {
	t := c.tb
	t.Helper()
	li := c.leader(-1)
	l := c.nodes[li]
	fi := (li + 1) % 3
	f := c.nodes[fi]
	ctx := context.Background()
	if _, err := l.ApplyLocal(ctx, cmd("SET", "k", "member")); err != nil {
		t.Fatal(err)
	}
	c.converged()
	term := l.raft.CurrentTerm()

	// AppendEntries to a follower: a far higher term, an entry that
	// follows the follower's log, committed at once.
	last := f.raft.LastIndex()
	lastTerm, _ := strconv.ParseUint(f.raft.Stats()["last_log_term"], 10, 64)
	ae := &raft.AppendEntriesRequest{
		RPCHeader: hdr, Term: term + 1000, PrevLogEntry: last, PrevLogTerm: lastTerm,
		Entries: []*raft.Log{{Index: last + 1, Term: term + 1000, Type: raft.LogCommand,
			Data: AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: [][]byte{[]byte("SET"), []byte("k"), []byte("stranger")}}})}},
		LeaderCommitIndex: last + 1,
	}
	var aer raft.AppendEntriesResponse
	aeErr := stranger.AppendEntries(raft.ServerID(c.ids[fi]), raft.ServerAddress(f.RaftAddr()), ae, &aer)

	// RequestVote to the leader with a higher term.
	rv := &raft.RequestVoteRequest{RPCHeader: hdr, Term: term + 2000, LastLogIndex: 1 << 40, LastLogTerm: term + 2000}
	var rvr raft.RequestVoteResponse
	rvErr := stranger.RequestVote(raft.ServerID(c.ids[li]), raft.ServerAddress(l.RaftAddr()), rv, &rvr)

	var isErr error
	if secure {
		isErr = c.installEmpty(stranger, hdr, (li+2)%3, term)
	}

	if !secure {
		// The damage is real: the check can fail.
		if aeErr != nil || rvErr != nil {
			t.Fatalf("the stranger's RPCs failed without authentication: %v, %v", aeErr, rvErr)
		}
		if got := f.raft.CurrentTerm(); got < term+1000 {
			t.Fatalf("follower's term %d after a stranger's AppendEntries of term %d", got, term+1000)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			f.fsm.mu.Lock()
			res := f.state.Read(0, cmd("GET", "k"))
			f.fsm.mu.Unlock()
			if string(res.Reply.Str) == "stranger" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the stranger's write was not applied: GET k = %s", res.Reply.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("insecure: term %d → %d, the stranger's SET applied", term, f.raft.CurrentTerm())
		return
	}
	if aeErr == nil || rvErr == nil || isErr == nil {
		t.Fatalf("a stranger's RPC was answered: AppendEntries %v, RequestVote %v, InstallSnapshot %v", aeErr, rvErr, isErr)
	}
	t.Logf("refused: AppendEntries %v; RequestVote %v; InstallSnapshot %v", aeErr, rvErr, isErr)
	time.Sleep(500 * time.Millisecond) // what a success would have set in motion
	if nl := c.leader(-1); nl != li {
		t.Fatalf("leadership moved from %s to %s", c.ids[li], c.ids[nl])
	}
	for i, n := range c.nodes {
		if got := n.raft.CurrentTerm(); got != term {
			t.Fatalf("%s's term moved from %d to %d", c.ids[i], term, got)
		}
		n.fsm.mu.Lock()
		res := n.state.Read(0, cmd("GET", "k"))
		n.fsm.mu.Unlock()
		if string(res.Reply.Str) != "member" {
			t.Fatalf("%s: GET k = %s", c.ids[i], res.Reply.String())
		}
	}
}

// installEmpty sends node i an InstallSnapshot of an empty state machine
// from stranger, with a far higher term.
func (c *testCluster) installEmpty(stranger *raft.NetworkTransport, hdr raft.RPCHeader, i int, term uint64) error {
	var empty bytes.Buffer
	if err := fsm.New(fsm.Options{}).Snapshot(&empty); err != nil {
		c.tb.Fatal(err)
	}
	is := &raft.InstallSnapshotRequest{RPCHeader: hdr, SnapshotVersion: raft.SnapshotVersionMax, Term: term + 3000,
		LastLogIndex: 1 << 40, LastLogTerm: term + 3000, Size: int64(empty.Len())}
	var isr raft.InstallSnapshotResponse
	return stranger.InstallSnapshot(raft.ServerID(c.ids[i]), raft.ServerAddress(c.nodes[i].RaftAddr()), is, &isr, bytes.NewReader(empty.Bytes()))
}

// An entry whose envelope does not decode is refused before it is stored
// or acknowledged, so it can neither stop the node when applied nor again
// at every start. The stranger here is let in (no secret) to deliver it;
// without validLogs the follower stores it and its state machine panics.
func TestBadEntryRefusedOnReceipt(t *testing.T) {
	c := startTestCluster(t, 3)
	li := c.leader(-1)
	fi := (li + 1) % 3
	f := c.nodes[fi]
	ctx := context.Background()
	if _, err := c.nodes[li].ApplyLocal(ctx, cmd("SET", "k", "v")); err != nil {
		t.Fatal(err)
	}
	c.converged()
	term := f.raft.CurrentTerm()
	stranger, hdr := newStranger(t)
	last := f.raft.LastIndex()
	lastTerm, _ := strconv.ParseUint(f.raft.Stats()["last_log_term"], 10, 64)
	ae := &raft.AppendEntriesRequest{
		RPCHeader: hdr, Term: term, PrevLogEntry: last, PrevLogTerm: lastTerm,
		Entries:           []*raft.Log{{Index: last + 1, Term: term, Type: raft.LogCommand, Data: []byte{9, 9, 9, 9}}},
		LeaderCommitIndex: last + 1,
	}
	var aer raft.AppendEntriesResponse
	if err := stranger.AppendEntries(raft.ServerID(c.ids[fi]), raft.ServerAddress(f.RaftAddr()), ae, &aer); err != nil {
		t.Fatal(err)
	}
	if aer.Success {
		t.Fatal("the follower acknowledged an entry that does not decode")
	}
	if got := f.raft.LastIndex(); got != last {
		t.Fatalf("the follower's log went from %d to %d", last, got)
	}
	// The cluster goes on: the leader's next write reaches every node.
	if _, err := c.nodes[c.leader(-1)].ApplyLocal(ctx, cmd("SET", "k", "after")); err != nil {
		t.Fatal(err)
	}
	c.converged()
}

func TestValidLogs(t *testing.T) {
	v := validLogs{LogStore: raft.NewInmemStore()}
	good := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: AppendEntry(nil, Entry{Time: 1, Cmd: cmd("SET", "k", "v")})}
	bad := &raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte{1, 2, 3, 4}}
	if err := v.StoreLogs([]*raft.Log{good, bad}); err == nil {
		t.Fatal("a batch with a bad entry was stored")
	}
	if last, _ := v.LastIndex(); last != 0 {
		t.Fatalf("part of a refused batch was stored: last index %d", last)
	}
	if err := v.StoreLog(good); err != nil {
		t.Fatal(err)
	}
	noop := &raft.Log{Index: 2, Term: 1, Type: raft.LogNoop}
	if err := v.StoreLog(noop); err != nil {
		t.Fatalf("a no-op refused: %v", err)
	}
}

// newStranger is raft's own transport in a process that is no member, and
// the header of its RPCs.
func newStranger(t *testing.T) (*raft.NetworkTransport, raft.RPCHeader) {
	t.Helper()
	stream, err := listenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger := raft.NewNetworkTransport(helloStream{stream}, 2, time.Second, io.Discard)
	t.Cleanup(func() { stranger.Close() })
	return stranger, raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("stranger"), Addr: []byte(stranger.LocalAddr())}
}

// helloStream dials as a node of this build that knows no cluster id: it
// opens each connection with the cluster hello (length 0), which a
// member that knows its id requires of a connection (clusterid.go).
type helloStream struct{ raft.StreamLayer }

func (s helloStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.StreamLayer.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	h := &clusterHello{own: func() string { return "" }}
	if _, err := h.client(c, string(addr), timeout); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
