package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
)

// The cluster's identity. A node id names a member within a cluster, but
// n1 of one cluster and n1 of another have the same id: a data directory
// copied from one into the other's n1 slot would start, and raft would
// mix the two clusters' logs (the other members take its answers as
// n1's). So each cluster has an id:
//
//   - The first leader of a cluster that has none proposes a random one
//     (ensureClusterID: a new cluster right after its bootstrap, or a
//     cluster an older build made, once this build leads it without
//     --preserve-downgrade, that is once no member runs the older build). It is
//     replicated state (fsm/clusterid.go: the first one applied wins, in
//     the log and in snapshots), so every member, and every member added
//     later, learns it.
//   - Each node keeps it in the file cluster.id of its data directory,
//     written when it learns it (adoptClusterID), read at start-up. The
//     file is new and apart from deadbolt.id, which an older build reads
//     strictly: an older build ignores it, so `deadbolt downgrade` and
//     --preserve-downgrade need nothing more (an older build applies
//     __clusterid as an unknown command: a reply, no change).
//   - The members' handshake carries it (after PeerAuth, before the
//     connection's first byte): the dialer always sends clusterHelloMagic,
//     the id's length and the id (length 0 while it knows none); the
//     acceptor answers the same with its own id, and each side refuses the
//     connection if both have an id and they differ, with a log line
//     naming its data directory and both ids. The dialer keeps each
//     peer's answer (seen): a leader takes its voters' ids before it
//     proposes one (clusterid_leader.go).
//   - A connection with no hello at all comes from an older build. With
//     --preserve-downgrade (members on an older build may be in the
//     cluster) it is accepted; without, an acceptor that knows its id
//     refuses it. An older acceptor hands the unknown first byte to raft,
//     which closes the connection without an answer: with
//     --preserve-downgrade, and only on that clean end of stream right
//     after the hello, the dialer takes the peer for an older build, dials
//     again without the hello, and does so for that address for
//     olderPeerFor, or until such a connection ends before any answer
//     (olderConn: the peer runs this build again). Any other failure is a
//     failed dial.

const (
	clusterIDFile     = "cluster.id"
	clusterIDHead     = "deadbolt cluster"
	clusterHelloMagic = 0xde
	olderPeerFor      = time.Minute
	// otherClusterLogEvery bounds the refusal log lines per peer (raft
	// dials again at every heartbeat).
	otherClusterLogEvery = 10 * time.Second
)

// errOtherCluster: the peer belongs to another cluster.
var errOtherCluster = errors.New("cluster: the peer belongs to another cluster")

// newClusterID returns a random cluster id: 32 hex digits.
func newClusterID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("cluster: no randomness for a cluster id: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// readClusterID reads dataDir's cluster.id; "" if there is none. A damaged
// file is an error that names it.
func readClusterID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, clusterIDFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	id, ok := "", false
	if len(lines) == 2 && lines[0] == clusterIDHead {
		id, ok = strings.CutPrefix(lines[1], "id ")
	}
	if !ok || !fsm.ValidClusterID(id) {
		return "", fmt.Errorf("cluster: %s is damaged (not %q and an id line): it names the cluster the data directory %s belongs to; if the directory is this cluster's, remove the file and start again (the node learns the id from the cluster)", path, clusterIDHead, dataDir)
	}
	return id, nil
}

// writeClusterID writes dataDir's cluster.id (through a temporary file,
// synced, renamed, the directory synced).
func writeClusterID(dataDir, id string) error {
	path := filepath.Join(dataDir, clusterIDFile)
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, []byte(clusterIDHead+"\nid "+id+"\n"), 0o644)
	var f *os.File
	if err == nil {
		if f, err = os.OpenFile(tmp, os.O_RDWR, 0); err == nil {
			err = f.Sync()
			f.Close()
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		if f, err = os.Open(dataDir); err == nil {
			err = f.Sync()
			f.Close()
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cluster: write %s: %w", path, err)
	}
	return nil
}

// ClusterID is the id of the cluster this node belongs to, "" while it
// knows none.
func (n *Node) ClusterID() string {
	if p := n.clusterID.Load(); p != nil {
		return *p
	}
	return ""
}

// adoptClusterID is told the replicated cluster id (raftFSM, after it is
// applied or restored): a node that knew none keeps it, in its data
// directory too. Once an id is committed the log is the authority: a node
// whose data directory names another (a directory from another cluster,
// or one that kept an id the cluster never committed) refuses to serve,
// naming its data directory and both ids (refuseClusterID).
func (n *Node) adoptClusterID(id string) {
	n.cidMu.Lock()
	defer n.cidMu.Unlock()
	switch cur := n.ClusterID(); {
	case id == "" || cur == id:
		return
	case cur != "":
		n.refuseClusterID(fmt.Errorf("cluster: the log holds cluster id %s, and this node's data directory %s names cluster %s (%s): the directory belongs to another cluster, or kept an id this cluster never took; the node stops. Give it an empty data directory and add it with --join",
			id, n.cfg.DataDir, cur, filepath.Join(n.cfg.DataDir, clusterIDFile)))
		return
	}
	if n.cfg.DataDir != "" {
		if err := writeClusterID(n.cfg.DataDir, id); err != nil {
			n.cfg.Logger.Warn("cluster: keeping the cluster id in the data directory failed; the log still holds it", "err", err)
		}
	}
	n.clusterID.Store(&id)
	n.cfg.Logger.Info("cluster: cluster id", "id", n.cfg.ID, "cluster_id", id)
}

// clusterHello is the members' handshake for the cluster id, on a
// connection that passed PeerAuth.
type clusterHello struct {
	own func() string // this node's cluster id, "" while unknown
	// preserve: --preserve-downgrade, members on an older build may be in
	// the cluster: connections without a hello are accepted, and a peer
	// that closes at the hello is dialed again without.
	preserve bool
	dir      string                        // the data directory, for the log line
	logf     func(msg string, args ...any) // a refusal
	infof    func(msg string, args ...any) // a peer taken for an older build
	mu       sync.Mutex
	older    map[string]time.Time // addresses taken for older builds, until
	ids      map[string]string    // the id each dialed address answered, "" for none
	logged   map[string]time.Time // refusals logged lately, by peer id and host
}

func writeHello(w io.Writer, id string) error {
	b := append([]byte{clusterHelloMagic, byte(len(id))}, id...)
	_, err := w.Write(b)
	return err
}

// readHelloID reads the id of a hello whose magic byte was read.
func readHelloID(r io.Reader) (string, error) {
	var l [1]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return "", err
	}
	if l[0] > fsm.MaxClusterIDLen {
		return "", fmt.Errorf("cluster: a cluster id of %d bytes", l[0])
	}
	id := make([]byte, l[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", err
	}
	return string(id), nil
}

// other reports whether a peer's id says it is in another cluster, and
// logs it (at most every otherClusterLogEvery per peer).
func (h *clusterHello) other(own, theirs, peer, side string) bool {
	if own == "" || theirs == "" || own == theirs {
		return false
	}
	if h.logNow(theirs, peer) && h.logf != nil {
		h.logf("cluster: refused a connection with a member of another cluster: this node's data directory belongs to one cluster, the peer's to another; a data directory copied from another cluster cannot serve here (give the node an empty directory and add it with --join)",
			"dir", h.dir, "cluster_id", own, "peer_cluster_id", theirs, "peer", peer, "side", side)
	}
	return true
}

// logNow reports whether a refusal of kind (the peer's cluster id, or
// "nohello") from peer is to be logged: at most every
// otherClusterLogEvery per kind and host (an accepted connection comes
// from a new port each time). Entries that old are dropped.
func (h *clusterHello) logNow(kind, peer string) bool {
	key := kind + " " + peer
	if host, _, err := net.SplitHostPort(peer); err == nil {
		key = kind + " " + host
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if now.Sub(h.logged[key]) < otherClusterLogEvery {
		return false
	}
	if h.logged == nil {
		h.logged = map[string]time.Time{}
	}
	for k, at := range h.logged {
		if now.Sub(at) >= otherClusterLogEvery {
			delete(h.logged, k)
		}
	}
	h.logged[key] = now
	return true
}

// isOlder reports whether addr was taken for an older build lately.
func (h *clusterHello) isOlder(addr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	until, ok := h.older[addr]
	if ok && time.Now().After(until) {
		delete(h.older, addr)
		return false
	}
	return ok
}

func (h *clusterHello) forgetOlder(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.older, addr)
}

// olderConn is a connection dialed without the hello to an address taken
// for an older build. An older build never closes such a connection
// before it answers; if it ends before a byte came back, the peer may run
// this build again (a node of this build without --preserve-downgrade
// refuses it), so the next dial sends the hello.
type olderConn struct {
	net.Conn
	h    *clusterHello
	addr string
	got  bool // a byte was read
}

func (o *olderConn) Read(b []byte) (int, error) {
	n, err := o.Conn.Read(b)
	if n > 0 {
		o.got = true
	} else if err != nil && !o.got {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			o.h.forgetOlder(o.addr)
		}
	}
	return n, err
}

func (h *clusterHello) markOlder(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.older == nil {
		h.older = map[string]time.Time{}
	}
	h.older[addr] = time.Now().Add(olderPeerFor)
}

// seen returns the id each address this node dialed answered with in
// its last hello ("" for none).
func (h *clusterHello) seen() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[string]string, len(h.ids))
	for a, id := range h.ids {
		m[a] = id
	}
	return m
}

func (h *clusterHello) record(addr, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids = map[string]string{}
	}
	h.ids[addr] = id
}

// client runs the dialer's side on c, connected to addr: it sends this
// node's id (none: length 0). older is true when, with preserve, the
// peer ended the stream right after the hello without an answer (an
// older build): the caller dials again without the hello.
func (h *clusterHello) client(c net.Conn, addr string, timeout time.Duration) (older bool, err error) {
	own := h.own()
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if err := writeHello(c, own); err != nil {
		return false, err
	}
	var m [1]byte
	if _, err := io.ReadFull(c, m[:]); err != nil {
		if !h.preserve || err != io.EOF {
			return false, fmt.Errorf("cluster: %s: no answer to the cluster hello: %w", addr, err)
		}
		h.markOlder(addr)
		if h.infof != nil {
			h.infof("cluster: a peer closed the connection at the cluster id's hello, as a build from before cluster ids does: dialing it without, for a while (--preserve-downgrade)", "peer", addr)
		}
		return true, err
	}
	if m[0] != clusterHelloMagic {
		return false, fmt.Errorf("cluster: %s answered the cluster hello with byte %#x", addr, m[0])
	}
	theirs, err := readHelloID(c)
	if err != nil {
		return false, err
	}
	h.record(addr, theirs)
	if h.other(own, theirs, addr, "dialed") {
		return false, fmt.Errorf("%w: %s is in cluster %s, this node in %s", errOtherCluster, addr, theirs, own)
	}
	return false, nil
}

// noHello reports whether a connection that opened without a hello (an
// older build) may go on: with preserve, or while this node knows no id.
// A refusal is logged (at most every otherClusterLogEvery per host).
func (h *clusterHello) noHello(c net.Conn) bool {
	own := h.own()
	if h.preserve || own == "" {
		return true
	}
	peer := c.RemoteAddr().String()
	if h.logNow("nohello", peer) && h.logf != nil {
		h.logf("cluster: refused a connection without the cluster id's hello (a build from before cluster ids): run this build's members with --preserve-downgrade while any member runs an older build",
			"dir", h.dir, "cluster_id", own, "peer", peer)
	}
	return false
}

// server runs the acceptor's side on c, whose first byte was the hello's
// magic: it answers with this node's id and reports whether the
// connection may go on.
func (h *clusterHello) server(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	theirs, err := readHelloID(c)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		return false
	}
	own := h.own()
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	err = writeHello(c, own)
	c.SetWriteDeadline(time.Time{})
	return err == nil && !h.other(own, theirs, c.RemoteAddr().String(), "accepted")
}

// refuseClusterID stops a node whose data directory names another cluster
// id than the log: it logs err and closes the node, and tells
// Config.OnDiskFailure; while NewNode runs, NewNode returns err instead.
func (n *Node) refuseClusterID(err error) {
	n.cidErr.Store(&err)
	n.cfg.Logger.Error(err.Error(), "id", n.cfg.ID, "dir", n.cfg.DataDir)
	if !n.built.Load() || !n.cidStop.CompareAndSwap(false, true) {
		return // NewNode returns it
	}
	go func() {
		n.Close()
		if n.cfg.OnDiskFailure != nil {
			n.cfg.OnDiskFailure(err)
		}
	}()
}
