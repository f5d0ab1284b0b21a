package server

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deadbolt/deadbolt/cluster"
)

// Slots as redis-server 7.0.15 computes them (CLUSTER KEYSLOT on a
// cluster-enabled instance).
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443,
		"foo{}{bar}": 8363, "foo{{bar}}zap": 4015, "foo{bar}{zap}": 5061, "": 0, "{}": 15257, "a{b": 13340,
	} {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

// A single node keeps Redis's answers for a server without cluster
// support.
func TestRedisDiffClusterDisabled(t *testing.T) {
	sameReplies(t, split(
		"cluster info", "cluster nodes", "cluster slots", "cluster shards", "cluster myid", "cluster keyslot foo",
		"cluster countkeysinslot 1", "cluster help", "cluster", "cluster bogus", "cluster info x",
		"pubsub shardnumsub 0", "pubsub numpat",
	))
}

// fakeRaft is a single-node backend that claims to be a Raft member with
// the configuration a test sets, for the discovery answers' corner cases.
type fakeRaft struct {
	*cluster.Local
	mu      sync.Mutex
	members []cluster.Member
	term    uint64
}

func (f *fakeRaft) ID() string           { return "n1" }
func (f *fakeRaft) AppliedIndex() uint64 { return 42 }
func (f *fakeRaft) Term() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.term
}

func (f *fakeRaft) Members() ([]cluster.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cluster.Member(nil), f.members...), nil
}

// setLeader makes member id ("" for none) the leader Raft knows.
func (f *fakeRaft) setLeader(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.members {
		f.members[i].Leader = f.members[i].ID == id
	}
}

func newFakeCluster(t *testing.T) (*testServer, *fakeRaft) {
	t.Helper()
	var fr *fakeRaft
	s := newTestServerWith(t, func(l *cluster.Local) Backend {
		fr = &fakeRaft{Local: l, term: 7, members: []cluster.Member{
			{ID: "n1", RaftAddr: "127.0.0.1:7001", Voter: true},
			{ID: "n2", RaftAddr: "127.0.0.1:7002", RESPAddr: "127.0.0.1:6002", Voter: true},
			{ID: "n3", RaftAddr: "127.0.0.1:7003", RESPAddr: "127.0.0.1:6003", Voter: true},
		}}
		return fr
	})
	fr.members[0].RESPAddr = s.addr
	return s, fr
}

func TestClusterAPIWithoutLeader(t *testing.T) {
	s, fr := newFakeCluster(t)
	d := s.StartDiscovery(DiscoveryConfig{MasterName: "locks"})
	t.Cleanup(d.Close)
	c := dial(t, s.addr)
	id1, id2, id3 := nodeID("n1"), nodeID("n2"), nodeID("n3")
	_, port1 := splitAddr(s.addr)

	// No leader was ever known: a cluster with no slots assigned.
	c.must(arr(), "cluster", "slots")
	c.must(bulk(clusterInfoText("fail", 0, 0, 0, 3, 0, 7)), "cluster", "info")
	nodes := c.do("cluster", "nodes").String()
	for _, want := range []string{
		id1 + " 127.0.0.1:" + port1 + "@7001 myself,master - 0 ",
		id2 + " 127.0.0.1:6002@7002 master - 0 ",
		id3 + " 127.0.0.1:6003@7003 master - 0 ",
	} {
		if !strings.Contains(nodes, "\n"+want) && !strings.HasPrefix(nodes, want) {
			t.Errorf("CLUSTER NODES lacks %q:\n%s", want, nodes)
		}
	}
	if strings.Contains(nodes, "0-16383") {
		t.Errorf("CLUSTER NODES without a leader assigns slots:\n%s", nodes)
	}
	c.must(nilReply, "sentinel", "get-master-addr-by-name", "locks")
	if m := fieldMap(t, c.do("sentinel", "master", "locks")); m["flags"] != "s_down,o_down,master" || m["num-slaves"] != "3" {
		t.Errorf("SENTINEL MASTER without a leader: %v", m)
	}
	c.must("-NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the majority and authorize a failover\r\n", "sentinel", "ckquorum", "locks")

	// A leader: one shard, the leader owning every slot.
	fr.setLeader("n2")
	d.leaderChanged("n2", "127.0.0.1:6002")
	c.must(arr(arr(integer(0), integer(16383),
		arr(bulk("127.0.0.1"), integer(6002), bulk(id2), arr()),
		arr(bulk("127.0.0.1"), integer(int64(mustAtoi(t, port1))), bulk(id1), arr()),
		arr(bulk("127.0.0.1"), integer(6003), bulk(id3), arr()),
	)), "cluster", "slots")
	c.must(bulk(clusterInfoText("ok", 16384, 16384, 0, 3, 1, 7)), "cluster", "info")
	c.must(bulks("127.0.0.1", "6002"), "sentinel", "get-master-addr-by-name", "locks")

	// The leader is lost (an election): the old one is remembered, down.
	sub := dial(t, s.addr)
	sub.must(arr(bulk("subscribe"), bulk(SwitchMasterChannel), integer(1)), "subscribe", SwitchMasterChannel)
	fr.setLeader("")
	c.must(bulk(clusterInfoText("fail", 16384, 0, 16384, 3, 1, 7)), "cluster", "info")
	c.must(bulks("127.0.0.1", "6002"), "sentinel", "get-master-addr-by-name", "locks")
	if m := fieldMap(t, c.do("sentinel", "master", "locks")); m["flags"] != "s_down,o_down,master" || m["ip"] != "127.0.0.1" || m["port"] != "6002" {
		t.Errorf("SENTINEL MASTER during an election: %v", m)
	}
	c.must(arr(integer(1), bulk("*"), integer(0)), "sentinel", "is-master-down-by-addr", "127.0.0.1", "6002", "0", "*")
	reps := c.do("sentinel", "replicas", "locks")
	for _, r := range reps.Elems {
		if m := fieldMap(t, r); m["master-link-status"] != "err" || m["master-host"] != "?" {
			t.Errorf("SENTINEL REPLICAS during an election: %v", m)
		}
	}

	// A new leader: +switch-master with the old and new addresses.
	fr.setLeader("n3")
	d.leaderChanged("n3", "127.0.0.1:6003")
	sub.must(arr(bulk("message"), bulk(SwitchMasterChannel), bulk("locks 127.0.0.1 6002 127.0.0.1 6003")))
	c.must(bulks("127.0.0.1", "6003"), "sentinel", "get-master-addr-by-name", "locks")
	c.must(arr(integer(0), bulk("*"), integer(0)), "sentinel", "is-master-down-by-addr", "127.0.0.1", "6003", "0", "*")
	c.must(bulks("127.0.0.1", "6003"), "sentinel", "get-master-addr-by-name", "locks")
	c.must(nilReply, "sentinel", "get-master-addr-by-name", "mymaster")

	// Slot commands read the keyspace.
	for _, k := range []string{"{a}1", "{a}2", "b", "{a}3"} {
		c.must(okReply, "set", k, "v")
	}
	slotA := strconv.Itoa(KeySlot([]byte("a")))
	c.must(integer(3), "cluster", "countkeysinslot", slotA)
	c.must(bulks("{a}1", "{a}2"), "cluster", "getkeysinslot", slotA, "2")
	c.must(arr(), "cluster", "getkeysinslot", slotA, "0")
	c.mustErr("ERR Invalid slot", "cluster", "countkeysinslot", "16384")
	c.mustErr("ERR value is not an integer or out of range", "cluster", "countkeysinslot", "x")
	c.mustErr("ERR Invalid slot or number of keys", "cluster", "getkeysinslot", slotA, "-1")
}

// clusterInfoText is CLUSTER INFO's text for one shard of three nodes.
func clusterInfoText(state string, assigned, ok, fail, known, size int, epoch uint64) string {
	e := strconv.FormatUint(epoch, 10)
	return "cluster_state:" + state + "\r\n" +
		"cluster_slots_assigned:" + strconv.Itoa(assigned) + "\r\n" +
		"cluster_slots_ok:" + strconv.Itoa(ok) + "\r\n" +
		"cluster_slots_pfail:0\r\n" +
		"cluster_slots_fail:" + strconv.Itoa(fail) + "\r\n" +
		"cluster_known_nodes:" + strconv.Itoa(known) + "\r\n" +
		"cluster_size:" + strconv.Itoa(size) + "\r\n" +
		"cluster_current_epoch:" + e + "\r\n" +
		"cluster_my_epoch:" + e + "\r\n" +
		"cluster_stats_messages_sent:0\r\n" +
		"cluster_stats_messages_received:0\r\n" +
		"total_cluster_links_buffer_limit_exceeded:0\r\n"
}

func mustAtoi(tb testing.TB, s string) int {
	tb.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestInfoClusterSection(t *testing.T) {
	if got := newTestServer(t).infoCluster(); got[0] != "cluster_enabled:0" {
		t.Errorf("single node: %v", got)
	}
	s, _ := newFakeCluster(t)
	if got := s.infoCluster(); got[0] != "cluster_enabled:1" {
		t.Errorf("cluster member: %v", got)
	}
}
