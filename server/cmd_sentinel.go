package server

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/glob"
	"github.com/deadbolt/deadbolt/resp"
)

// The Sentinel API: every node answers as a Sentinel that monitors one
// master, the Raft leader, under one name. See DESIGN.md, "Discovery".
func init() {
	registerConn(
		connSpec{name: "sentinel", arity: -2, fn: cmdSentinel},
	)
}

// DefaultMasterName is the master's name when none is configured, as in
// Redis's sample sentinel.conf.
const DefaultMasterName = "mymaster"

// SwitchMasterChannel is where a Sentinel announces a new master:
// "<name> <old ip> <old port> <new ip> <new port>".
const SwitchMasterChannel = "+switch-master"

// DiscoveryConfig configures StartDiscovery.
type DiscoveryConfig struct {
	// MasterName is the name Sentinel clients ask for; DefaultMasterName
	// if empty.
	MasterName string
}

// Discovery is the state the Sentinel API keeps between commands: the
// master's name, and the last leader this node saw, so that during an
// election clients still get the old master's address (as from a real
// Sentinel) rather than nothing. In a Raft cluster it watches leadership
// and publishes +switch-master to this node's subscribers.
type Discovery struct {
	srv        *Server
	masterName string
	stopWatch  func()

	mu         sync.Mutex
	leaderID   string
	leaderAddr string
	since      time.Time // when the leader above became known here
}

// discoveries maps a *Server to its *Discovery. (It lives beside the
// Server rather than in it only because server.go has another owner at
// the moment; a Config field would do.)
var discoveries sync.Map

// StartDiscovery sets up s's Sentinel and Cluster answers. Call it before
// Serve; stop it with Close. Without it, s answers with the default master
// name and remembers no leader.
func (s *Server) StartDiscovery(cfg DiscoveryConfig) *Discovery {
	d := &Discovery{srv: s, masterName: cfg.MasterName, since: time.Now()}
	if d.masterName == "" {
		d.masterName = DefaultMasterName
	}
	discoveries.Store(s, d)
	if rn, ok := s.backend.(*cluster.Node); ok {
		d.stopWatch = rn.OnLeaderChange(d.leaderChanged)
	}
	return d
}

// Close stops watching leadership.
func (d *Discovery) Close() {
	if d.stopWatch != nil {
		d.stopWatch()
	}
	discoveries.CompareAndDelete(d.srv, d)
}

func (s *Server) discovery() *Discovery {
	if d, ok := discoveries.Load(s); ok {
		return d.(*Discovery)
	}
	return &Discovery{srv: s, masterName: DefaultMasterName, since: s.start}
}

// leaderChanged remembers the leader and, when it replaces another one,
// announces it on +switch-master as a Sentinel does.
func (d *Discovery) leaderChanged(id, addr string) {
	d.mu.Lock()
	old := d.leaderAddr
	d.leaderID, d.leaderAddr, d.since = id, addr, time.Now()
	d.mu.Unlock()
	if old == "" || old == addr {
		return
	}
	oh, op := splitAddr(old)
	nh, np := splitAddr(addr)
	msg := strings.Join([]string{d.masterName, oh, op, nh, np}, " ")
	d.srv.hub.Deliver([]fsm.Publish{{Channel: []byte(SwitchMasterChannel), Message: []byte(msg)}})
	d.srv.cfg.Logger.Info("sentinel: +switch-master", "master", d.masterName, "from", old, "to", addr)
}

// knowLeader records the leader a command is about to report if none is
// known here yet (the watcher may not have run): once a client has been
// told who the master is, a change of master must be announced. A leader
// other than the known one is the watcher's to record, and to announce.
func (d *Discovery) knowLeader(id, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.leaderAddr == "" {
		d.leaderID, d.leaderAddr, d.since = id, addr, time.Now()
	}
}

func (d *Discovery) lastLeader() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leaderID
}

// roleAge is how long the leader has been the one known here, in ms.
func (d *Discovery) roleAge() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strconv.FormatInt(time.Since(d.since).Milliseconds(), 10)
}

// ServeSentinel serves connections from a second listener, such as a
// Sentinel port (26379), with the same commands as the main one, until ln
// is closed or the server is closed. It returns nil then.
func (s *Server) ServeSentinel(ln net.Listener) error {
	var tempDelay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				time.Sleep(tempDelay)
				continue
			}
			return err
		}
		tempDelay = 0
		s.accept(nc)
	}
}

// Sentinel's error replies.
const (
	msgNoSuchMaster = "ERR No such master with that name"
)

// sentinelArity is each SENTINEL subcommand's arity (Redis 7.0's table).
var sentinelArity = map[string]int{
	"ckquorum": 3, "config": -3, "debug": -2, "failover": 3, "flushconfig": 2,
	"get-master-addr-by-name": 3, "help": 2, "info-cache": -3, "is-master-down-by-addr": 6,
	"master": 3, "masters": 2, "monitor": 6, "myid": 2, "pending-scripts": 2, "remove": 3,
	"replicas": 3, "reset": 3, "sentinels": 3, "set": -5, "simulate-failure": -3, "slaves": 3,
}

func cmdSentinel(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	arity, known := sentinelArity[sub]
	if !known || len(args[1]) > 64 {
		c.reply(unknownSubcommand(args))
		return
	}
	if !arityOK(arity, len(args)) {
		c.reply(resp.Err(fsm.WrongArity("sentinel|" + sub)))
		return
	}
	d := c.srv.discovery()
	t, _, err := c.srv.topology(c)
	if err != nil {
		c.reply(resp.Err(errorText(err)))
		return
	}
	// Subcommands about one master check its name first.
	switch sub {
	case "master", "replicas", "slaves", "sentinels", "ckquorum", "failover", "remove", "set":
		if string(args[2]) != d.masterName {
			c.reply(resp.Err(msgNoSuchMaster))
			return
		}
	}
	switch sub {
	case "get-master-addr-by-name":
		if string(args[2]) != d.masterName || t.leader < 0 {
			c.reply(resp.NilReply)
			return
		}
		l := t.peers[t.leader]
		c.reply(resp.ArrayReply(resp.BulkString(l.host), resp.BulkString(l.port)))
	case "masters":
		c.reply(resp.ArrayReply(d.masterFields(t)))
	case "master":
		c.reply(d.masterFields(t))
	case "replicas", "slaves":
		var out []resp.Reply
		for i := range t.peers {
			if !t.isLeader(i) {
				out = append(out, d.replicaFields(t, i))
			}
		}
		c.reply(resp.ArrayReply(out...))
	case "sentinels":
		var out []resp.Reply
		for _, p := range t.peers {
			if !p.self {
				out = append(out, sentinelFields(p))
			}
		}
		c.reply(resp.ArrayReply(out...))
	case "myid":
		c.reply(resp.BulkString(t.peers[0].id))
	case "ckquorum":
		if !t.current {
			c.reply(resp.Err("NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the majority and authorize a failover"))
			return
		}
		c.reply(resp.StatusReply("OK " + strconv.Itoa(max(t.voters, 1)) + " usable Sentinels. Quorum and failover authorization can be reached"))
	case "is-master-down-by-addr":
		_, err1 := parseInt(args[3])
		_, err2 := parseInt(args[4])
		if err1 != nil || err2 != nil {
			c.reply(resp.Err(msgNotInteger))
			return
		}
		down := int64(0)
		if t.leader >= 0 && !t.current && net.JoinHostPort(string(args[2]), string(args[3])) == t.peers[t.leader].addr() {
			down = 1
		}
		c.reply(resp.ArrayReply(resp.IntReply(down), resp.BulkString("*"), resp.Zero))
	case "failover":
		c.reply(sentinelFailover(c, t))
	case "config":
		c.reply(sentinelConfig(args))
	case "pending-scripts", "info-cache":
		c.reply(resp.EmptyArr)
	case "flushconfig":
		c.reply(resp.OK) // nothing to write: the configuration is the Raft log's
	case "reset":
		n := int64(0)
		if glob.Match(args[2], []byte(d.masterName)) {
			n = 1
		}
		c.reply(resp.IntReply(n)) // nothing to forget: the state is Raft's
	case "help":
		c.reply(helpReply("SENTINEL", sentinelHelp))
	default: // monitor remove set simulate-failure debug
		c.reply(resp.Err("ERR SENTINEL " + strings.ToUpper(sub) + " is not supported by deadbolt: the master is the Raft leader"))
	}
}

// sentinelFailover hands leadership to another voter, as SENTINEL
// FAILOVER promotes a replica. Only the leader can; a follower names it.
func sentinelFailover(c *conn, t topology) resp.Reply {
	rn, ok := c.srv.backend.(*cluster.Node)
	if !ok || len(t.peers) < 2 {
		return resp.Err("NOGOODSLAVE No suitable replica to promote")
	}
	if !rn.IsLeader() {
		return rn.NotLeaderReply()
	}
	if err := rn.TransferLeadership(); err != nil {
		return resp.Err(errorText(err))
	}
	return resp.OK
}

// sentinelConfig is SENTINEL CONFIG GET <pattern>: Sentinel's global
// parameters, at their defaults. SET is refused.
func sentinelConfig(args [][]byte) resp.Reply {
	if strings.EqualFold(string(args[2]), "get") && len(args) == 4 {
		params := []string{"resolve-hostnames", "no", "announce-hostnames", "no", "announce-ip", "",
			"announce-port", "0", "sentinel-user", "", "sentinel-pass", ""}
		var out []resp.Reply
		for i := 0; i < len(params); i += 2 {
			if glob.Match([]byte(strings.ToLower(string(args[3]))), []byte(params[i])) {
				out = append(out, resp.BulkString(params[i]), resp.BulkString(params[i+1]))
			}
		}
		return resp.MapReply(out...)
	}
	if strings.EqualFold(string(args[2]), "set") && len(args) >= 5 && len(args)%2 == 1 {
		return resp.Err("ERR SENTINEL CONFIG SET is not supported by deadbolt")
	}
	return resp.Err("ERR Only SENTINEL CONFIG GET <option> / SET <option> <value> are supported.")
}

// fields is a map of bulk strings, as Sentinel answers (RESP2: a flat
// field/value array).
func fields(kv ...string) resp.Reply {
	out := make([]resp.Reply, len(kv))
	for i, s := range kv {
		out[i] = resp.BulkString(s)
	}
	return resp.MapReply(out...)
}

// Values Sentinel reports that have no counterpart in Raft: its defaults.
const (
	downAfterMs     = "30000"
	failoverTimeout = "180000"
)

// masterFields is SENTINEL MASTER's reply, in Redis 7.0's field order.
// Without a leader Raft knows now, the master is down (s_down,o_down),
// at the last address known.
func (d *Discovery) masterFields(t topology) resp.Reply {
	ip, port, runid := "", "0", ""
	if t.leader >= 0 {
		l := t.peers[t.leader]
		ip, port, runid = l.host, l.port, l.id
	}
	kv := []string{"name", d.masterName, "ip", ip, "port", port, "runid", runid}
	if t.current {
		kv = append(kv, "flags", "master")
	} else {
		kv = append(kv, "flags", "s_down,o_down,master")
	}
	kv = append(kv, "link-pending-commands", "0", "link-refcount", "1",
		"last-ping-sent", "0", "last-ok-ping-reply", "0", "last-ping-reply", "0")
	if !t.current {
		kv = append(kv, "s-down-time", "0", "o-down-time", "0")
	}
	replicas := len(t.peers)
	if t.leader >= 0 {
		replicas--
	}
	kv = append(kv, "down-after-milliseconds", downAfterMs, "info-refresh", "0",
		"role-reported", "master", "role-reported-time", d.roleAge(),
		"config-epoch", strconv.FormatUint(t.term, 10),
		"num-slaves", strconv.Itoa(replicas),
		"num-other-sentinels", strconv.Itoa(len(t.peers)-1),
		"quorum", strconv.Itoa(t.voters/2+1),
		"failover-timeout", failoverTimeout, "parallel-syncs", "1")
	return fields(kv...)
}

// replicaFields is one entry of SENTINEL REPLICAS. A follower's link to
// the master is "ok" while a leader is known.
func (d *Discovery) replicaFields(t topology, i int) resp.Reply {
	p := t.peers[i]
	status, mhost, mport := "err", "?", "0"
	if t.leader >= 0 && t.current {
		l := t.peers[t.leader]
		status, mhost, mport = "ok", l.host, l.port
	}
	return fields(
		"name", p.addr(), "ip", p.host, "port", p.port, "runid", p.id, "flags", "slave",
		"link-pending-commands", "0", "link-refcount", "1",
		"last-ping-sent", "0", "last-ok-ping-reply", "0", "last-ping-reply", "0",
		"down-after-milliseconds", downAfterMs, "info-refresh", "0",
		"role-reported", "slave", "role-reported-time", d.roleAge(),
		"master-link-down-time", "0", "master-link-status", status,
		"master-host", mhost, "master-port", mport,
		"slave-priority", "100", "slave-repl-offset", strconv.FormatUint(t.applied, 10),
		"replica-announced", "1",
	)
}

// sentinelFields is one entry of SENTINEL SENTINELS: another node, whose
// client port answers SENTINEL too.
func sentinelFields(p peer) resp.Reply {
	return fields(
		"name", p.id, "ip", p.host, "port", p.port, "runid", p.id, "flags", "sentinel",
		"link-pending-commands", "0", "link-refcount", "1",
		"last-ping-sent", "0", "last-ok-ping-reply", "0", "last-ping-reply", "0",
		"down-after-milliseconds", downAfterMs,
		"last-hello-message", "0", "voted-leader", "?", "voted-leader-epoch", "0",
	)
}

// sentinelHelp is SENTINEL HELP's text, Redis 7.0's.
var sentinelHelp = []string{
	"CKQUORUM <master-name>",
	"    Check if the current Sentinel configuration is able to reach the quorum",
	"    needed to failover a master and the majority needed to authorize the",
	"    failover.",
	"CONFIG SET <param> <value>",
	"    Set a global Sentinel configuration parameter.",
	"CONFIG GET <param>",
	"    Get global Sentinel configuration parameter.",
	"DEBUG [<param> <value> ...]",
	"    Show a list of configurable time parameters and their values (milliseconds).",
	"    Or update current configurable parameters values (one or more).",
	"GET-MASTER-ADDR-BY-NAME <master-name>",
	"    Return the ip and port number of the master with that name.",
	"FAILOVER <master-name>",
	"    Manually failover a master node without asking for agreement from other",
	"    Sentinels",
	"FLUSHCONFIG",
	"    Force Sentinel to rewrite its configuration on disk, including the current",
	"    Sentinel state.",
	"INFO-CACHE <master-name>",
	"    Return last cached INFO output from masters and all its replicas.",
	"IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
	"    Check if the master specified by ip:port is down from current Sentinel's",
	"    point of view.",
	"MASTER <master-name>",
	"    Show the state and info of the specified master.",
	"MASTERS",
	"    Show a list of monitored masters and their state.",
	"MONITOR <name> <ip> <port> <quorum>",
	"    Start monitoring a new master with the specified name, ip, port and quorum.",
	"MYID",
	"    Return the ID of the Sentinel instance.",
	"PENDING-SCRIPTS",
	"    Get pending scripts information.",
	"REMOVE <master-name>",
	"    Remove master from Sentinel's monitor list.",
	"REPLICAS <master-name>",
	"    Show a list of replicas for this master and their state.",
	"RESET <pattern>",
	"    Reset masters for specific master name matching this pattern.",
	"SENTINELS <master-name>",
	"    Show a list of Sentinel instances for this master and their state.",
	"SET <master-name> <option> <value> [<option> <value> ...]",
	"    Set configuration parameters for certain masters.",
	"SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]",
	"    Simulate a Sentinel crash.",
}
