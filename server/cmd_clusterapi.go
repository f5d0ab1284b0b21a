package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// The Cluster API: a Raft cluster presents itself to cluster-mode clients
// as one shard, the leader a master owning all 16384 slots and the
// followers its replicas. See DESIGN.md, "Discovery".
func init() {
	registerConn(
		connSpec{name: "cluster", arity: -2, fn: cmdCluster},
	)
}

const (
	numSlots           = 16384
	msgClusterDisabled = "ERR This instance has cluster support disabled"
)

// raftView is what the Sentinel and Cluster answers need from a member of
// a Raft cluster (*cluster.Node). A backend without it is a single node.
type raftView interface {
	ID() string
	Members() ([]cluster.Member, error)
	AppliedIndex() uint64
	Term() uint64
}

// peer is one member of the cluster as discovery answers present it.
type peer struct {
	name       string // Raft id
	id         string // 40 hex digits derived from name (nodeID)
	host, port string // client address
	busPort    string // Raft transport port, shown as Redis's cluster bus port
	self       bool
}

func (p peer) addr() string { return net.JoinHostPort(p.host, p.port) }

// topology is one consistent view of the cluster for one reply.
type topology struct {
	peers   []peer // this node first, then the others in configuration order
	leader  int    // index of the leader in peers; -1 if none was ever known
	current bool   // Raft knows that leader now (not only remembered from before an election)
	voters  int
	term    uint64
	applied uint64
}

// nodeID is the 40-hex-digit id a node shows as its Cluster node id and
// Sentinel run id: the SHA-1 of its Raft id, the same on every node and
// across restarts.
func nodeID(name string) string {
	sum := sha1.Sum([]byte(name))
	return hex.EncodeToString(sum[:])
}

// topology returns the cluster as this node sees it, and false when the
// backend is a single node without Raft.
func (s *Server) topology(c *conn) (topology, bool, error) {
	rv, ok := s.backend.(raftView)
	if !ok {
		host, port := splitAddr(cmp.Or(s.cfg.AnnounceAddr, s.Addr().String()))
		p := peer{name: s.runID, id: s.runID, host: localHost(c, host), port: port, busPort: "0", self: true}
		return topology{peers: []peer{p}, current: true, voters: 1}, false, nil
	}
	members, err := rv.Members()
	if err != nil {
		return topology{}, true, err
	}
	t := topology{leader: -1, term: rv.Term(), applied: rv.AppliedIndex()}
	remembered := s.discovery().lastLeader()
	me := rv.ID()
	if slices.IndexFunc(members, func(m cluster.Member) bool { return m.ID == me }) < 0 {
		// Joining, or removed: still this node's own line.
		members = append([]cluster.Member{{ID: me}}, members...)
	}
	for _, m := range members {
		if m.Leader && m.RESPAddr != "" {
			s.discovery().knowLeader(m.ID, m.RESPAddr)
		}
		if m.ID == me && m.RESPAddr == "" {
			m.RESPAddr = cmp.Or(s.cfg.AnnounceAddr, s.Addr().String())
		}
		if m.RESPAddr == "" {
			continue // not yet reachable by clients
		}
		if m.Voter {
			t.voters++
		}
		host, port := splitAddr(m.RESPAddr)
		_, bus := splitAddr(m.RaftAddr)
		p := peer{name: m.ID, id: nodeID(m.ID), host: host, port: port, busPort: bus, self: m.ID == me}
		if p.self {
			p.host = localHost(c, host)
			t.peers = append([]peer{p}, t.peers...)
		} else {
			t.peers = append(t.peers, p)
		}
		if m.Leader {
			t.current = true
		}
	}
	for i, p := range t.peers {
		if m := memberByID(members, p.name); m.Leader || (!t.current && p.name == remembered) {
			t.leader = i
		}
	}
	if t.leader < 0 {
		t.current = false
	}
	return t, true, nil
}

func memberByID(ms []cluster.Member, id string) cluster.Member {
	for _, m := range ms {
		if m.ID == id {
			return m
		}
	}
	return cluster.Member{}
}

// splitAddr splits "host:port"; an address without a port gets "0".
func splitAddr(addr string) (host, port string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "0"
	}
	return h, p
}

// localHost replaces an unspecified listen host (0.0.0.0, ::) by the
// address the client reached this node on.
func localHost(c *conn, host string) string {
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return host
	}
	if c != nil {
		if h, _, err := net.SplitHostPort(c.laddr); err == nil {
			return h
		}
	}
	return host
}

// isLeader reports whether peer i leads.
func (t topology) isLeader(i int) bool { return i == t.leader }

func cmdCluster(c *conn, args [][]byte) {
	sub, ok := checkSubcommand(c, args)
	if !ok {
		return
	}
	t, clustered, err := c.srv.topology(c)
	switch {
	case !clustered:
		c.reply(resp.Err(msgClusterDisabled))
		return
	case err != nil:
		c.reply(resp.Err(errorText(err)))
		return
	}
	switch sub {
	case "info":
		c.reply(resp.VerbatimReply("txt", t.clusterInfo()))
	case "nodes":
		var b strings.Builder
		for i := range t.peers {
			b.WriteString(t.nodeLine(i))
			b.WriteByte('\n')
		}
		c.reply(resp.VerbatimReply("txt", b.String()))
	case "slots":
		c.reply(t.slots())
	case "shards":
		c.reply(t.shards())
	case "myid":
		c.reply(resp.BulkString(t.peers[0].id))
	case "keyslot":
		c.reply(resp.IntReply(int64(KeySlot(args[2]))))
	case "countkeysinslot":
		slot, err := parseInt(args[2])
		if err != nil {
			c.reply(resp.Err(msgNotInteger))
			return
		}
		if slot < 0 || slot >= numSlots {
			c.reply(resp.Err("ERR Invalid slot"))
			return
		}
		keys, err := c.keysInSlot(int(slot), -1)
		if err != nil {
			c.reply(resp.Err(errorText(err)))
			return
		}
		c.reply(resp.IntReply(int64(len(keys))))
	case "getkeysinslot":
		count, err1 := parseInt(args[3])
		slot, err2 := parseInt(args[2])
		if err1 != nil || err2 != nil {
			c.reply(resp.Err(msgNotInteger))
			return
		}
		if count < 0 || slot < 0 || slot >= numSlots {
			c.reply(resp.Err("ERR Invalid slot or number of keys"))
			return
		}
		keys, err := c.keysInSlot(int(slot), int(min(count, 1<<30)))
		if err != nil {
			c.reply(resp.Err(errorText(err)))
			return
		}
		c.reply(resp.BulkArray(keys))
	case "replicas", "slaves":
		i := t.find(string(args[2]))
		switch {
		case i < 0:
			c.reply(resp.Err("ERR Unknown node " + string(args[2])))
		case !t.isLeader(i):
			c.reply(resp.Err("ERR The specified node is not a master"))
		default:
			var out []resp.Reply
			for j := range t.peers {
				if j != i {
					out = append(out, resp.BulkString(t.nodeLine(j)))
				}
			}
			c.reply(resp.ArrayReply(out...))
		}
	case "count-failure-reports":
		if t.find(string(args[2])) < 0 {
			c.reply(resp.Err("ERR Unknown node " + string(args[2])))
			return
		}
		c.reply(resp.Zero)
	case "links":
		c.reply(resp.EmptyArr)
	case "help":
		c.reply(helpReply("CLUSTER", clusterHelp))
	default:
		// Slot assignment and membership: Raft decides both.
		c.reply(resp.Err("ERR CLUSTER " + strings.ToUpper(sub) + " is not supported by deadbolt: Raft manages membership and the leader owns every slot (see RAFT JOIN, REMOVE, TRANSFER)"))
	}
}

const msgNotInteger = "ERR value is not an integer or out of range"

// find returns the index of the peer with a node id, or -1.
func (t topology) find(id string) int {
	for i, p := range t.peers {
		if p.id == id {
			return i
		}
	}
	return -1
}

// clusterInfo is CLUSTER INFO: one shard; the state is ok while a leader
// is known.
func (t topology) clusterInfo() string {
	state, assigned, ok, fail, size := "fail", 0, 0, 0, 0
	switch {
	case t.leader >= 0 && t.current:
		state, assigned, ok, size = "ok", numSlots, numSlots, 1
	case t.leader >= 0:
		assigned, fail, size = numSlots, numSlots, 1
	}
	epoch := strconv.FormatUint(t.term, 10)
	lines := kv(
		"cluster_state", state,
		"cluster_slots_assigned", assigned,
		"cluster_slots_ok", ok,
		"cluster_slots_pfail", 0,
		"cluster_slots_fail", fail,
		"cluster_known_nodes", len(t.peers),
		"cluster_size", size,
		"cluster_current_epoch", epoch,
		"cluster_my_epoch", epoch,
		"cluster_stats_messages_sent", 0,
		"cluster_stats_messages_received", 0,
		"total_cluster_links_buffer_limit_exceeded", 0,
	)
	return strings.Join(lines, "\r\n") + "\r\n"
}

// nodeLine is peer i's CLUSTER NODES line, without its newline:
// <id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv>
// <config-epoch> <link-state> [<slot range>].
func (t topology) nodeLine(i int) string {
	p := t.peers[i]
	role, master := "master", "-"
	if t.leader >= 0 && !t.isLeader(i) {
		role, master = "slave", t.peers[t.leader].id
	}
	flags := role
	if p.self {
		flags = "myself," + role
	}
	line := p.id + " " + p.host + ":" + p.port + "@" + p.busPort + " " + flags + " " + master +
		" 0 " + strconv.FormatInt(time.Now().UnixMilli(), 10) + " " + strconv.FormatUint(t.term, 10) + " connected"
	if t.isLeader(i) {
		line += " 0-16383"
	}
	return line
}

// slots is CLUSTER SLOTS: one range, the leader then the followers, each
// [ip, port, id, metadata].
func (t topology) slots() resp.Reply {
	if t.leader < 0 {
		return resp.EmptyArr
	}
	entry := func(p peer) resp.Reply {
		port, _ := strconv.Atoi(p.port)
		return resp.ArrayReply(resp.BulkString(p.host), resp.IntReply(int64(port)), resp.BulkString(p.id), resp.EmptyArr)
	}
	out := []resp.Reply{resp.IntReply(0), resp.IntReply(numSlots - 1), entry(t.peers[t.leader])}
	for i, p := range t.peers {
		if !t.isLeader(i) {
			out = append(out, entry(p))
		}
	}
	return resp.ArrayReply(resp.ArrayReply(out...))
}

// shards is CLUSTER SHARDS: the leader's shard with every node; without a
// known leader, each node a master of an empty shard.
func (t topology) shards() resp.Reply {
	node := func(p peer, role string) resp.Reply {
		port, _ := strconv.Atoi(p.port)
		health := "online"
		if role == "master" && !t.current {
			health = "failed"
		}
		return resp.MapReply(
			resp.BulkString("id"), resp.BulkString(p.id),
			resp.BulkString("port"), resp.IntReply(int64(port)),
			resp.BulkString("ip"), resp.BulkString(p.host),
			resp.BulkString("endpoint"), resp.BulkString(p.host),
			resp.BulkString("role"), resp.BulkString(role),
			resp.BulkString("replication-offset"), resp.IntReply(int64(t.applied)),
			resp.BulkString("health"), resp.BulkString(health),
		)
	}
	shard := func(slots resp.Reply, nodes ...resp.Reply) resp.Reply {
		return resp.MapReply(resp.BulkString("slots"), slots, resp.BulkString("nodes"), resp.ArrayReply(nodes...))
	}
	if t.leader < 0 {
		out := make([]resp.Reply, len(t.peers))
		for i, p := range t.peers {
			out[i] = shard(resp.EmptyArr, node(p, "master"))
		}
		return resp.ArrayReply(out...)
	}
	nodes := []resp.Reply{node(t.peers[t.leader], "master")}
	for i, p := range t.peers {
		if !t.isLeader(i) {
			nodes = append(nodes, node(p, "replica"))
		}
	}
	return resp.ArrayReply(shard(resp.ArrayReply(resp.IntReply(0), resp.IntReply(numSlots-1)), nodes...))
}

// keysInSlot returns up to limit (-1: all) keys of the current database
// that hash to slot, in KEYS order. It reads every key name through the
// backend (linearizably, on the leader): O(keys), unlike Redis's O(1)
// slot index, which deadbolt does not keep.
func (c *conn) keysInSlot(slot, limit int) ([][]byte, error) {
	if limit == 0 {
		return nil, nil
	}
	res, err := c.srv.backend.Read(context.Background(), fsm.Command{DB: c.db, Args: [][]byte{[]byte("keys"), []byte("*")}})
	if err != nil {
		return nil, err
	}
	if res.Reply.IsError() {
		return nil, replyErr(res.Reply.Str)
	}
	var out [][]byte
	for _, k := range res.Reply.Elems {
		if KeySlot(k.Str) == slot {
			out = append(out, k.Str)
			if len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// replyErr carries an error reply's text as a ReplyError.
type replyErr string

func (e replyErr) Error() string      { return string(e) }
func (e replyErr) RedisError() string { return string(e) }

// KeySlot is the Redis Cluster hash slot of a key: CRC16 (XMODEM) of the
// key, or of its hash tag (the part between the first '{' and the next
// '}', if not empty), modulo 16384.
func KeySlot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) & (numSlots - 1))
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), as Redis
// Cluster uses.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, x := range b {
		crc ^= uint16(x) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// infoCluster is INFO's cluster section: enabled on a member of a Raft
// cluster, which answers CLUSTER commands.
func (s *Server) infoCluster() []string {
	if _, ok := s.backend.(raftView); ok {
		return []string{"cluster_enabled:1"}
	}
	return []string{"cluster_enabled:0"}
}

// clusterHelp is CLUSTER HELP's text, Redis 7.0's.
var clusterHelp = []string{
	"ADDSLOTS <slot> [<slot> ...]",
	"    Assign slots to current node.",
	"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Assign slots which are between <start-slot> and <end-slot> to current node.",
	"BUMPEPOCH",
	"    Advance the cluster config epoch.",
	"COUNT-FAILURE-REPORTS <node-id>",
	"    Return number of failure reports for <node-id>.",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"DELSLOTS <slot> [<slot> ...]",
	"    Delete slots information from current node.",
	"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Delete slots information which are between <start-slot> and <end-slot> from current node.",
	"FAILOVER [FORCE|TAKEOVER]",
	"    Promote current replica node to being a master.",
	"FORGET <node-id>",
	"    Remove a node from the cluster.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"FLUSHSLOTS",
	"    Delete current node own slots information.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MEET <ip> <port> [<bus-port>]",
	"    Connect nodes into a working cluster.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"REPLICATE <node-id>",
	"    Configure current node as replica to <node-id>.",
	"RESET [HARD|SOFT]",
	"    Reset current node (default: soft).",
	"SET-CONFIG-EPOCH <epoch>",
	"    Set config epoch of current node.",
	"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
	"    Set slot state.",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SAVECONFIG",
	"    Force saving cluster configuration on disk.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"LINKS",
	"    Return information about all network links between this node and its peers.",
	"    Output format is an array where each array element is a map containing attributes of a link",
}
