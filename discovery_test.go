package deadbolt

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/resp"
)

// Discovery: how Sentinel, Cluster and replicated-mode clients find the
// leader, against a real three-node cluster.

// rawConn is a RESP2 connection for byte-exact checks.
type rawConn struct {
	tb  testing.TB
	nc  net.Conn
	buf []byte
}

func dialRaw(tb testing.TB, addr string) *rawConn {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { nc.Close() })
	return &rawConn{tb: tb, nc: nc}
}

// read returns the next reply and its bytes.
func (c *rawConn) read(d time.Duration) (string, resp.Reply, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	for {
		if r, n, ok := resp.Parse(c.buf); ok {
			raw := string(c.buf[:n])
			c.buf = c.buf[n:]
			return raw, r, nil
		}
		b := make([]byte, 64<<10)
		n, err := c.nc.Read(b)
		if err != nil {
			return "", resp.Reply{}, err
		}
		c.buf = append(c.buf, b[:n]...)
	}
}

func (c *rawConn) do(args ...string) (string, resp.Reply) {
	c.tb.Helper()
	var req []byte
	req = fmt.Appendf(req, "*%d\r\n", len(args))
	for _, a := range args {
		req = fmt.Appendf(req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.nc.Write(req); err != nil {
		c.tb.Fatalf("%q: %v", args, err)
	}
	raw, r, err := c.read(10 * time.Second)
	if err != nil {
		c.tb.Fatalf("%q: %v", args, err)
	}
	return raw, r
}

func (c *rawConn) must(want string, args ...string) {
	c.tb.Helper()
	if raw, _ := c.do(args...); raw != want {
		c.tb.Errorf("%q:\n got %q\nwant %q", args, raw, want)
	}
}

func hexID(name string) string {
	sum := sha1.Sum([]byte(name))
	return hex.EncodeToString(sum[:])
}

func hostPort(tb testing.TB, addr string) (string, string) {
	tb.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatal(err)
	}
	return h, p
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runCluster starts a three-node cluster and waits until every node knows
// every member's client address (RunClusterT waits only for the leader's).
func runCluster(tb testing.TB, opts ...ClusterOption) *Cluster {
	tb.Helper()
	c := RunClusterT(tb, 3, opts...)
	waitUntil(tb, 10*time.Second, "every node to know every address", func() bool {
		for _, n := range c.Nodes {
			ms, err := n.Raft().Members()
			if err != nil || len(ms) != 3 {
				return false
			}
			for _, m := range ms {
				if m.RESPAddr == "" {
					return false
				}
			}
		}
		return true
	})
	return c
}

func fields(tb testing.TB, r resp.Reply) (keys []string, m map[string]string) {
	tb.Helper()
	if r.Type != resp.Array || len(r.Elems)%2 != 0 {
		tb.Fatalf("not a field/value array: %v", r)
	}
	m = make(map[string]string)
	for i := 0; i < len(r.Elems); i += 2 {
		keys = append(keys, r.Elems[i].String())
		m[r.Elems[i].String()] = r.Elems[i+1].String()
	}
	return keys, m
}

// Redis Sentinel 7.0's field lists (captured from redis-sentinel 7.0.15).
var (
	masterKeys = strings.Fields(`name ip port runid flags link-pending-commands link-refcount last-ping-sent
		last-ok-ping-reply last-ping-reply down-after-milliseconds info-refresh role-reported role-reported-time
		config-epoch num-slaves num-other-sentinels quorum failover-timeout parallel-syncs`)
	replicaKeys = strings.Fields(`name ip port runid flags link-pending-commands link-refcount last-ping-sent
		last-ok-ping-reply last-ping-reply down-after-milliseconds info-refresh role-reported role-reported-time
		master-link-down-time master-link-status master-host master-port slave-priority slave-repl-offset
		replica-announced`)
	sentinelKeys = strings.Fields(`name ip port runid flags link-pending-commands link-refcount last-ping-sent
		last-ok-ping-reply last-ping-reply down-after-milliseconds last-hello-message voted-leader voted-leader-epoch`)
)

// Every node answers the Sentinel API about the leader; the others are
// its replicas and, for Sentinel clients, the other Sentinels.
func TestSentinelAPICluster(t *testing.T) {
	c := runCluster(t)
	l := c.Leader()
	lh, lp := hostPort(t, c.Addr(l))
	for i := range c.Nodes {
		rc := dialRaw(t, c.Addr(i))
		rc.must("*2\r\n$"+strconv.Itoa(len(lh))+"\r\n"+lh+"\r\n$"+strconv.Itoa(len(lp))+"\r\n"+lp+"\r\n",
			"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
		rc.must("$-1\r\n", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "other")
		rc.must("-ERR No such master with that name\r\n", "SENTINEL", "MASTER", "other")
		rc.must("$40\r\n"+hexID(c.IDs()[i])+"\r\n", "SENTINEL", "MYID")
		rc.must("+OK 3 usable Sentinels. Quorum and failover authorization can be reached\r\n", "SENTINEL", "CKQUORUM", "mymaster")
		rc.must("*3\r\n:0\r\n$1\r\n*\r\n:0\r\n", "SENTINEL", "IS-MASTER-DOWN-BY-ADDR", lh, lp, "0", "*")

		_, m := rc.do("SENTINEL", "MASTER", "mymaster")
		keys, f := fields(t, m)
		term := strconv.FormatUint(c.Nodes[i].Raft().Term(), 10)
		if !slices.Equal(keys, masterKeys) || f["name"] != "mymaster" || f["ip"] != lh || f["port"] != lp ||
			f["flags"] != "master" || f["runid"] != hexID(c.IDs()[l]) || f["num-slaves"] != "2" ||
			f["num-other-sentinels"] != "2" || f["quorum"] != "2" || f["config-epoch"] != term {
			t.Errorf("node %d SENTINEL MASTER: %q %v", i, keys, f)
		}
		_, ms := rc.do("SENTINEL", "MASTERS")
		if len(ms.Elems) != 1 {
			t.Errorf("node %d SENTINEL MASTERS: %v", i, ms)
		}

		for _, sub := range []string{"REPLICAS", "SLAVES"} {
			_, reps := rc.do("SENTINEL", sub, "mymaster")
			var got []string
			for _, r := range reps.Elems {
				keys, f := fields(t, r)
				if !slices.Equal(keys, replicaKeys) || f["flags"] != "slave" || f["master-link-status"] != "ok" ||
					f["master-host"] != lh || f["master-port"] != lp || f["name"] != net.JoinHostPort(f["ip"], f["port"]) {
					t.Errorf("node %d SENTINEL %s entry: %q %v", i, sub, keys, f)
				}
				got = append(got, f["name"])
			}
			var want []string
			for j := range c.Nodes {
				if j != l {
					want = append(want, c.Addr(j))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("node %d SENTINEL %s = %v, want %v", i, sub, got, want)
			}
		}

		// The other nodes, as Sentinels: Redisson needs at least two.
		_, sents := rc.do("SENTINEL", "SENTINELS", "mymaster")
		var got, want []string
		for _, s := range sents.Elems {
			keys, f := fields(t, s)
			if !slices.Equal(keys, sentinelKeys) || f["flags"] != "sentinel" || f["name"] != f["runid"] {
				t.Errorf("node %d SENTINEL SENTINELS entry: %q %v", i, keys, f)
			}
			got = append(got, net.JoinHostPort(f["ip"], f["port"]))
		}
		for j := range c.Nodes {
			if j != i {
				want = append(want, c.Addr(j))
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("node %d SENTINEL SENTINELS = %v, want %v", i, got, want)
		}
	}

	// A leadership hand-over is announced on every node.
	subs := make([]*rawConn, len(c.Nodes))
	for i := range c.Nodes {
		subs[i] = dialRaw(t, c.Addr(i))
		subs[i].must("*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n", "SUBSCRIBE", "+switch-master")
	}
	if _, r := dialRaw(t, c.Addr(l)).do("RAFT", "TRANSFER"); r.IsError() {
		t.Fatalf("RAFT TRANSFER: %s", r.Str)
	}
	nl := c.WaitNewLeader(l)
	nh, np := hostPort(t, c.Addr(nl))
	for i, s := range subs {
		_, r, err := s.read(10 * time.Second)
		if err != nil {
			t.Fatalf("node %d: no +switch-master: %v", i, err)
		}
		want := fmt.Sprintf("mymaster %s %s %s %s", lh, lp, nh, np)
		if len(r.Elems) != 3 || r.Elems[0].String() != "message" || r.Elems[1].String() != "+switch-master" || r.Elems[2].String() != want {
			t.Errorf("node %d: %v, want message %q", i, r, want)
		}
	}
}

// go-redis's FailoverClient, given the nodes as Sentinels (their client
// ports, or --sentinel-addr ports), writes to the leader and follows it
// through a leader crash, told by +switch-master.
func TestSentinelFailoverClientFollowsLeader(t *testing.T) {
	t.Run("client ports", func(t *testing.T) { testFailoverClient(t, false) })
	t.Run("sentinel ports", func(t *testing.T) { testFailoverClient(t, true) })
}

func testFailoverClient(t *testing.T, sentinelPorts bool) {
	var opts []ClusterOption
	if sentinelPorts {
		opts = append(opts, func(_ int, cfg *Config) { cfg.SentinelAddr = "127.0.0.1:0"; cfg.MasterName = "locks" })
	}
	c := runCluster(t, opts...)
	ctx := context.Background()
	name := "mymaster"
	var sentinels []string
	for i, n := range c.Nodes {
		if sentinelPorts {
			name = "locks"
			sentinels = append(sentinels, n.SentinelAddr())
		} else {
			sentinels = append(sentinels, c.Addr(i))
		}
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: name, SentinelAddrs: sentinels,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, MaxRetries: -1,
	})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	old := c.Leader()
	servedBy := func() string {
		info, err := rdb.ClientInfo(ctx).Result()
		if err != nil {
			return err.Error()
		}
		return info.LAddr
	}
	if got := servedBy(); got != c.Addr(old) {
		t.Fatalf("FailoverClient talks to %s, leader is %s", got, c.Addr(old))
	}

	// Watch +switch-master on a follower's Sentinel port.
	f := c.Followers()[0]
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[f]})
	t.Cleanup(func() { sc.Close() })
	ps := sc.Subscribe(ctx, "+switch-master")
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	c.Kill(old)
	nl := c.WaitNewLeader(old)
	oh, op := hostPort(t, c.Addr(old))
	nh, np := hostPort(t, c.Addr(nl))
	select {
	case msg := <-ps.Channel():
		if want := fmt.Sprintf("%s %s %s %s %s", name, oh, op, nh, np); msg.Payload != want {
			t.Errorf("+switch-master %q, want %q", msg.Payload, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no +switch-master after the leader was killed")
	}

	// Writes go on, on the new leader, and the data written before is there.
	waitUntil(t, 20*time.Second, "a write after failover", func() bool {
		return rdb.Set(ctx, "k2", "v2", 0).Err() == nil
	})
	waitUntil(t, 10*time.Second, "the FailoverClient on the new leader", func() bool {
		return servedBy() == c.Addr(nl)
	})
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v1" {
		t.Fatalf("GET k after failover = %q, %v", v, err)
	}

	// The crashed node comes back on its Sentinel port, and names the
	// leader: the current one (on a busy machine the leadership may move
	// again as the node rejoins).
	c.Restart(old)
	rs := redis.NewSentinelClient(&redis.Options{Addr: sentinels[old], MaxRetries: -1})
	t.Cleanup(func() { rs.Close() })
	waitUntil(t, 15*time.Second, "the restarted node's Sentinel to name the leader", func() bool {
		addr, err := rs.GetMasterAddrByName(ctx, name).Result()
		l := c.Leader()
		return err == nil && len(addr) == 2 && l >= 0 && net.JoinHostPort(addr[0], addr[1]) == c.Addr(l)
	})
}

var nodeLineRE = regexp.MustCompile(`^([0-9a-f]{40}) ([0-9.]+):(\d+)@(\d+) (myself,)?(master|slave) (-|[0-9a-f]{40}) 0 (\d+) (\d+) connected( 0-16383)?$`)

// The Cluster API in Redis's exact formats: one shard, the leader a master
// with every slot, the followers its replicas.
func TestClusterAPIFormats(t *testing.T) {
	c := runCluster(t)
	l := c.Leader()
	ids := c.IDs()
	lid := hexID(ids[l])
	entry := func(j int) string {
		h, p := hostPort(t, c.Addr(j))
		return "*4\r\n$" + strconv.Itoa(len(h)) + "\r\n" + h + "\r\n:" + p + "\r\n$40\r\n" + hexID(ids[j]) + "\r\n*0\r\n"
	}
	for i := range c.Nodes {
		rc := dialRaw(t, c.Addr(i))
		term := strconv.FormatUint(c.Nodes[i].Raft().Term(), 10)

		_, r := rc.do("CLUSTER", "NODES")
		text := r.String()
		if !strings.HasSuffix(text, "\n") || strings.Contains(text, "\r") {
			t.Errorf("node %d CLUSTER NODES line ends: %q", i, text)
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("node %d CLUSTER NODES:\n%s", i, text)
		}
		seen := map[string]bool{}
		for k, line := range lines {
			m := nodeLineRE.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("node %d CLUSTER NODES line %q", i, line)
			}
			j := slices.IndexFunc(ids, func(id string) bool { return hexID(id) == m[1] })
			if j < 0 || seen[m[1]] || net.JoinHostPort(m[2], m[3]) != c.Addr(j) || m[9] != term {
				t.Errorf("node %d line %q: unknown or repeated id, wrong address or epoch", i, line)
				continue
			}
			seen[m[1]] = true
			if (m[5] != "") != (j == i) || (k == 0) != (j == i) {
				t.Errorf("node %d line %q: myself flag (first line is this node's)", i, line)
			}
			if j == l && (m[6] != "master" || m[7] != "-" || m[10] != " 0-16383") ||
				j != l && (m[6] != "slave" || m[7] != lid || m[10] != "") {
				t.Errorf("node %d line %q: leader is %s", i, line, lid)
			}
		}

		// CLUSTER SLOTS: the leader, then the followers in the order of
		// CLUSTER NODES.
		want := "*1\r\n*5\r\n:0\r\n:16383\r\n" + entry(l)
		for _, line := range lines {
			if j := slices.IndexFunc(ids, func(id string) bool { return strings.HasPrefix(line, hexID(id)) }); j != l {
				want += entry(j)
			}
		}
		rc.must(want, "CLUSTER", "SLOTS")

		_, sh := rc.do("CLUSTER", "SHARDS")
		if len(sh.Elems) != 1 || len(sh.Elems[0].Elems) != 4 || sh.Elems[0].Elems[0].String() != "slots" ||
			sh.Elems[0].Elems[2].String() != "nodes" || len(sh.Elems[0].Elems[3].Elems) != 3 {
			t.Fatalf("node %d CLUSTER SHARDS: %v", i, sh)
		}
		if got := string(sh.Elems[0].Elems[1].Append(nil)); got != "*2\r\n:0\r\n:16383\r\n" {
			t.Errorf("node %d CLUSTER SHARDS slots %q", i, got)
		}
		for k, n := range sh.Elems[0].Elems[3].Elems {
			var keys []string
			m := map[string]resp.Reply{}
			for e := 0; e+1 < len(n.Elems); e += 2 {
				keys = append(keys, n.Elems[e].String())
				m[n.Elems[e].String()] = n.Elems[e+1]
			}
			role := "replica"
			if k == 0 {
				role = "master"
			}
			if !slices.Equal(keys, []string{"id", "port", "ip", "endpoint", "role", "replication-offset", "health"}) ||
				m["role"].String() != role || m["health"].String() != "online" || m["port"].Type != resp.Int ||
				m["replication-offset"].Type != resp.Int || (k == 0) != (m["id"].String() == lid) {
				t.Errorf("node %d CLUSTER SHARDS node %d: %v", i, k, n)
			}
		}

		rc.must("$"+strconv.Itoa(len(clusterInfo(term)))+"\r\n"+clusterInfo(term)+"\r\n", "CLUSTER", "INFO")
		rc.must("$40\r\n"+hexID(ids[i])+"\r\n", "CLUSTER", "MYID")
		rc.must(":12182\r\n", "CLUSTER", "KEYSLOT", "foo")
		rc.must(":3443\r\n", "cluster", "keyslot", "{user1000}.following")
		_, reps := rc.do("CLUSTER", "REPLICAS", lid)
		if len(reps.Elems) != 2 {
			t.Errorf("node %d CLUSTER REPLICAS: %v", i, reps)
		}
		for _, r := range reps.Elems {
			if m := nodeLineRE.FindStringSubmatch(r.String()); m == nil || m[6] != "slave" {
				t.Errorf("node %d CLUSTER REPLICAS line %q", i, r.String())
			}
		}
		rc.must("-ERR The specified node is not a master\r\n", "CLUSTER", "REPLICAS", hexID(ids[(l+1)%3]))
		rc.must("-ERR Unknown node abc\r\n", "CLUSTER", "SLAVES", "abc")
		rc.must("-ERR wrong number of arguments for 'cluster|info' command\r\n", "CLUSTER", "INFO", "x")
		rc.must("-ERR unknown subcommand 'FOO'. Try CLUSTER HELP.\r\n", "CLUSTER", "FOO")
		// Redisson's probes in cluster mode, and the replica connection's
		// start-up.
		rc.must("*2\r\n$1\r\n0\r\n:0\r\n", "PUBSUB", "SHARDNUMSUB", "0")
		rc.must(":0\r\n", "PUBSUB", "NUMPAT")
		rc.must(":0\r\n", "SPUBLISH", "", "") // newer Redisson's probe
		rc.must("+OK\r\n", "READONLY")
		rc.must("+OK\r\n", "READWRITE")
		rc.must("+OK\r\n", "ASKING")
	}

	// Slot key counts read the keyspace through the leader.
	rc := dialRaw(t, c.Addr(c.Followers()[0]))
	for _, k := range []string{"{lock}a", "{lock}b", "other"} {
		rc.must("+OK\r\n", "SET", k, "1")
	}
	slot := strconv.Itoa(12182) // "foo"
	rc.must(":0\r\n", "CLUSTER", "COUNTKEYSINSLOT", slot)
	slot = strconv.Itoa(keySlotOf(t, rc, "lock"))
	rc.must(":2\r\n", "CLUSTER", "COUNTKEYSINSLOT", slot)
	rc.must("*1\r\n$7\r\n{lock}a\r\n", "CLUSTER", "GETKEYSINSLOT", slot, "1")
}

func keySlotOf(tb testing.TB, rc *rawConn, key string) int {
	tb.Helper()
	_, r := rc.do("CLUSTER", "KEYSLOT", key)
	return int(r.Int)
}

// clusterInfo is CLUSTER INFO's text of a healthy three-node cluster.
func clusterInfo(epoch string) string {
	return strings.Join([]string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384",
		"cluster_slots_pfail:0", "cluster_slots_fail:0", "cluster_known_nodes:3", "cluster_size:1",
		"cluster_current_epoch:" + epoch, "cluster_my_epoch:" + epoch, "cluster_stats_messages_sent:0",
		"cluster_stats_messages_received:0", "total_cluster_links_buffer_limit_exceeded:0"}, "\r\n") + "\r\n"
}

// go-redis's ClusterClient, seeded with a follower, finds the leader by
// CLUSTER SLOTS, runs plain commands, scripts, transactions and sharded
// pub/sub, and keeps working through a leadership hand-over (the old
// leader forwards) and a leader crash (after it reloads the slots).
func TestClusterClientFollowsLeader(t *testing.T) {
	c := runCluster(t)
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:       []string{c.Addr(c.Followers()[0])},
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, MaxRedirects: 8,
		// go-redis reloads the slot map on MOVED, or at this interval (60 s
		// by default): a crashed master, of Redis Cluster or of deadbolt,
		// is noticed only by the reload.
		ClusterStateReloadInterval: 500 * time.Millisecond,
	})
	t.Cleanup(func() { rdb.Close() })
	masterIs := func(want string) bool {
		slots, err := rdb.ClusterSlots(ctx).Result()
		return err == nil && len(slots) == 1 && slots[0].Start == 0 && slots[0].End == 16383 &&
			len(slots[0].Nodes) == 3 && slots[0].Nodes[0].Addr == want
	}
	if l := c.Leader(); !masterIs(c.Addr(l)) {
		t.Fatalf("CLUSTER SLOTS does not name the leader %s", c.Addr(l))
	}

	for i := range 20 {
		key := fmt.Sprintf("key%d", i) // many slots, one master
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if n, err := rdb.Incr(ctx, key).Result(); err != nil || n != int64(i+1) {
			t.Fatalf("INCR %s = %d, %v", key, n, err)
		}
	}
	script := redis.NewScript(`redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[2])`)
	if v, err := script.Run(ctx, rdb, []string{"{s}a", "{s}b"}, "x").Result(); err != redis.Nil {
		t.Fatalf("script = %v, %v", v, err)
	}
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{tx}a", "1", 0)
		p.Incr(ctx, "{tx}b")
		return nil
	}); err != nil {
		t.Fatalf("MULTI/EXEC: %v", err)
	}
	ss := rdb.SSubscribe(ctx, "{lock}chan")
	t.Cleanup(func() { ss.Close() })
	if _, err := ss.Receive(ctx); err != nil {
		t.Fatalf("SSUBSCRIBE: %v", err)
	}
	if err := rdb.SPublish(ctx, "{lock}chan", "0").Err(); err != nil {
		t.Fatalf("SPUBLISH: %v", err)
	}
	select {
	case m := <-ss.Channel():
		if m.Payload != "0" {
			t.Fatalf("smessage %v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no smessage")
	}

	// Hand-over: the client still writes to the old leader, which forwards.
	old := c.Leader()
	if err := client(t, c.Addr(old)).Do(ctx, "RAFT", "TRANSFER").Err(); err != nil {
		t.Fatal(err)
	}
	nl := c.WaitNewLeader(old)
	if err := rdb.Set(ctx, "after-transfer", "1", 0).Err(); err != nil {
		t.Fatalf("SET right after a hand-over: %v", err)
	}
	waitUntil(t, 10*time.Second, "CLUSTER SLOTS naming the new leader", func() bool { return masterIs(c.Addr(nl)) })

	// Crash: writes fail until the client reloads the slots from a live node.
	c.Kill(nl)
	nl2 := c.WaitNewLeader(nl)
	waitUntil(t, 20*time.Second, "a write after the leader crashed", func() bool {
		return rdb.Set(ctx, "after-crash", "1", 0).Err() == nil
	})
	if v, err := rdb.Get(ctx, "key7").Result(); err != nil || v != "8" {
		t.Fatalf("GET key7 after failover = %q, %v", v, err)
	}
	waitUntil(t, 10*time.Second, "the new leader as master", func() bool {
		slots, err := rdb.ClusterSlots(ctx).Result()
		return err == nil && len(slots) == 1 && slots[0].Nodes[0].Addr == c.Addr(nl2)
	})
}

// A follower forwards a cluster-mode client's commands to the leader
// instead of answering -MOVED (server/DESIGN.md, "Discovery"): a raw client
// that routes by CLUSTER SLOTS and follows MOVED never needs to, even on a
// READONLY connection, when its slot map is stale after a hand-over.
func TestClusterModeFollowerForwards(t *testing.T) {
	c := runCluster(t)
	old := c.Leader()
	rc := dialRaw(t, c.Addr(c.Followers()[0]))
	_, slots := rc.do("CLUSTER", "SLOTS")
	master := net.JoinHostPort(slots.Elems[0].Elems[2].Elems[0].String(), strconv.FormatInt(slots.Elems[0].Elems[2].Elems[1].Int, 10))
	if master != c.Addr(old) {
		t.Fatalf("CLUSTER SLOTS master %s, leader %s", master, c.Addr(old))
	}
	conns := map[string]*rawConn{}
	redirects := 0
	do := func(args ...string) string {
		addr := master
		for range 5 {
			if conns[addr] == nil {
				conns[addr] = dialRaw(t, addr)
				conns[addr].must("+OK\r\n", "READONLY")
			}
			raw, r := conns[addr].do(args...)
			if r.IsError() && (strings.HasPrefix(r.String(), "MOVED ") || strings.HasPrefix(r.String(), "ASK ")) {
				redirects++
				addr = strings.Fields(r.String())[2]
				continue
			}
			return raw
		}
		t.Fatalf("%q: too many redirects", args)
		return ""
	}
	if got := do("SET", "k", "v1"); got != "+OK\r\n" {
		t.Fatalf("SET on the leader: %q", got)
	}
	if _, r := dialRaw(t, c.Addr(old)).do("RAFT", "TRANSFER"); r.IsError() {
		t.Fatalf("RAFT TRANSFER: %s", r.Str)
	}
	c.WaitNewLeader(old)
	// The client's map still names the old leader, now a follower.
	for _, step := range []struct {
		want string
		args []string
	}{
		{"+OK\r\n", []string{"SET", "k", "v2"}},
		{"$2\r\nv2\r\n", []string{"GET", "k"}},
		{":1\r\n", []string{"EVAL", "return redis.call('del', KEYS[1])", "1", "k"}},
		{"+OK\r\n", []string{"READWRITE"}},
		{":1\r\n", []string{"INCR", "k"}},
	} {
		if got := do(step.args...); got != step.want {
			t.Errorf("%q on the old leader: %q, want %q", step.args, got, step.want)
		}
	}
	if redirects != 0 {
		t.Errorf("%d redirects, want none", redirects)
	}
}

// Redisson's replicated mode polls INFO REPLICATION on every node: exactly
// one says role:master, the others role:slave pointing at it, before and
// after a leader crash.
func TestReplicatedModeInfo(t *testing.T) {
	c := runCluster(t)
	ctx := context.Background()
	clients := make([]*redis.Client, len(c.Nodes))
	for i := range c.Nodes {
		clients[i] = client(t, c.Addr(i))
	}
	// poll returns the one master among the live nodes, or -1.
	poll := func(live []int) int {
		master, masters := -1, 0
		infos := map[int]string{}
		for _, i := range live {
			info, err := clients[i].Info(ctx, "replication").Result()
			if err != nil {
				return -1
			}
			infos[i] = info
			switch {
			case strings.Contains(info, "\r\nrole:master\r\n"):
				master, masters = i, masters+1
			case !strings.Contains(info, "\r\nrole:slave\r\n"):
				t.Fatalf("node %d INFO replication without role:master|slave:\n%s", i, info)
			}
		}
		if masters != 1 {
			return -1
		}
		mh, mp := hostPort(t, c.Addr(master))
		for i, info := range infos {
			if i == master {
				// (A crashed follower is still a member, and still counted.)
				n := -1
				if _, v, ok := strings.Cut(info, "\r\nconnected_slaves:"); ok {
					n, _ = strconv.Atoi(v[:strings.Index(v, "\r\n")])
				}
				if n < len(live)-1 {
					return -1
				}
				continue
			}
			for _, want := range []string{"master_host:" + mh, "master_port:" + mp, "master_link_status:up"} {
				if !strings.Contains(info, "\r\n"+want+"\r\n") {
					return -1
				}
			}
		}
		return master
	}
	old := -1
	waitUntil(t, 10*time.Second, "one master in INFO replication", func() bool {
		old = poll([]int{0, 1, 2})
		return old >= 0
	})
	if old != c.Leader() {
		t.Fatalf("INFO says node %d leads, Raft says %d", old, c.Leader())
	}
	c.Kill(old)
	live := c.Followers()
	nl := -1
	waitUntil(t, 20*time.Second, "one new master in INFO replication", func() bool {
		nl = poll(live)
		return nl >= 0 && nl != old
	})
	if l := c.WaitNewLeader(old); l != nl {
		t.Fatalf("INFO says node %d leads, Raft says %d", nl, l)
	}
}

// What clients send when they connect (CLIENTS.md) gets an answer they
// accept, on a single node and on a follower: errors only where the client
// ignores them or falls back.
func TestStartupCommands(t *testing.T) {
	cl := runCluster(t)
	for name, addr := range map[string]string{"single": RunT(t).Addr(), "follower": cl.Addr(cl.Followers()[0])} {
		t.Run(name, func(t *testing.T) {
			type step struct {
				args []string
				ok   func(raw string, r resp.Reply) bool
			}
			noError := func(_ string, r resp.Reply) bool { return !r.IsError() }
			anything := func(string, resp.Reply) bool { return true } // the client ignores errors
			exactly := func(want string) func(string, resp.Reply) bool {
				return func(raw string, _ resp.Reply) bool { return raw == want }
			}
			infoHas := func(fields ...string) func(string, resp.Reply) bool {
				return func(_ string, r resp.Reply) bool {
					for _, f := range fields {
						if !strings.Contains(r.String(), "\r\n"+f) {
							return false
						}
					}
					return !strings.Contains(r.String(), "\r\nloading:1")
				}
			}
			for client, steps := range map[string][]step{
				"go-redis": {
					{[]string{"HELLO", "3"}, func(raw string, r resp.Reply) bool {
						return r.Type == resp.Map && strings.Contains(raw, "proto\r\n:3\r\n")
					}},
					{[]string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis(,go1.26.0)"}, anything},
					{[]string{"CLIENT", "SETINFO", "LIB-VER", "9.23.0"}, anything},
					{[]string{"PING"}, exactly("+PONG\r\n")},
				},
				"redis-py": {
					{[]string{"CLIENT", "SETINFO", "LIB-NAME", "redis-py"}, anything},
					{[]string{"CLIENT", "SETINFO", "LIB-VER", "5.0.1"}, anything},
					{[]string{"CLIENT", "SETNAME", "app"}, exactly("+OK\r\n")},
					{[]string{"SELECT", "0"}, exactly("+OK\r\n")},
					{[]string{"HELLO", "2", "AUTH", "default", "pw"}, func(_ string, r resp.Reply) bool { return r.Type == resp.Array }},
				},
				"ioredis": {
					{[]string{"INFO"}, infoHas("redis_version:", "role:")},
					{[]string{"CLIENT", "SETNAME", "app"}, exactly("+OK\r\n")},
					{[]string{"SELECT", "0"}, exactly("+OK\r\n")},
				},
				"redisson": {
					{[]string{"CLIENT", "SETNAME", "redisson"}, exactly("+OK\r\n")},
					{[]string{"READONLY"}, exactly("+OK\r\n")},
					{[]string{"PING"}, exactly("+PONG\r\n")},
					// WAIT and WAITAOF both work, or both are unknown commands.
					{[]string{"WAIT", "0", "0"}, func(_ string, r resp.Reply) bool { return r.Type == resp.Int }},
					{[]string{"WAITAOF", "0", "0", "0"}, noError},
					{[]string{"INFO", "ALL"}, infoHas("connected_slaves:", "aof_enabled:")},
					{[]string{"INFO", "REPLICATION"}, infoHas("role:")},
					{[]string{"PUBSUB", "SHARDNUMSUB", "0"}, exactly("*2\r\n$1\r\n0\r\n:0\r\n")},
					{[]string{"PUBSUB", "NUMPAT"}, exactly(":0\r\n")},
				},
				"redis-cli": {
					{[]string{"COMMAND", "DOCS"}, func(_ string, r resp.Reply) bool { return r.Type == resp.Array && len(r.Elems) > 0 }},
				},
				"tools": {
					{[]string{"CONFIG", "GET", "maxmemory-policy"}, exactly("*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n")},
					{[]string{"CONFIG", "GET", "databases"}, exactly("*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n")},
					{[]string{"CONFIG", "GET", "notify-keyspace-events"}, noError},
					{[]string{"CONFIG", "GET", "cluster-enabled"}, noError},
					{[]string{"CLIENT", "CAPA", "redirect"}, anything}, // Redis 7.4's; 7.0 does not know it either
				},
			} {
				rc := dialRaw(t, addr)
				for _, s := range steps {
					if raw, r := rc.do(s.args...); !s.ok(raw, r) {
						t.Errorf("%s: %q answered %q", client, s.args, truncate(raw, 300))
					}
				}
			}
		})
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
