package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/fsm"
)

// A full disk. hashicorp/raft handles a log store that cannot append: a
// leader fails the entries of that append and steps down, a follower
// answers the AppendEntries unsuccessfully, and neither stores anything.
// The stable store never needs new space (raftlog's fixed slots), so an
// election on a full disk does not panic. What deadbolt adds:
//
//   - A write refused for want of space gets a MISCONF error that names the
//     data directory, never "outcome unknown": an append that fails with
//     ENOSPC stored nothing (raftlog.IsNoSpace), so the entry was never in
//     any log and can never be committed.
//   - Below Config.MinFreeDisk bytes free the leader refuses client writes
//     before proposing them, so that the disk never fills completely: the
//     log's housekeeping (a new segment, a snapshot, the compaction that
//     frees space) still has room, and the leader never reaches the
//     append failures that make it step down. Reads, pub/sub and discovery
//     need no log write and go on. The leader's own internal entries
//     (clock ticks, expiry) are small and still proposed.
//   - The free space is read with statfs at most every diskCheckEvery, by
//     a goroutine, never per command; writes resume at the first check
//     that finds enough space again.

// diskCheckEvery is how often the free space of the data directory is read.
const diskCheckEvery = 100 * time.Millisecond

// DefaultMinFreeDisk is the space below which a node refuses writes, unless
// configured: room for four segments of the log.
const DefaultMinFreeDisk = 4 * raftlog.DefaultSegmentSize

// diskWatch follows the free space of a node's data directory.
type diskWatch struct {
	dir     string
	minFree int64
	free    atomic.Int64 // bytes free at the last check; -1 before the first, or if statfs fails
	low     atomic.Bool  // free < minFree at the last check
	// fullAt is when an append last failed with ENOSPC (Unix ns; 0:
	// never, or space came back since).
	fullAt atomic.Int64
	// segsAtFull is the log's SegmentsMade when fullAt was set: a segment
	// made since then ends "full" too.
	segsAtFull atomic.Uint64
	refused    atomic.Int64 // writes refused for want of space
	// log is the raftlog store, if the node has one: its reserve segment
	// in use means the disk is full.
	log reserver
	// peers, while set, refuses writes: the MISCONF message saying which
	// other voters are short of space (diskquorum.go).
	peers atomic.Pointer[string]
	// logged is the status last logged (logChange; run's goroutine only).
	logged string
}

type reserver interface {
	ReserveInUse() bool
	RefillReserve()
	SegmentSize() int64
	SegmentsMade() uint64
}

func newDiskWatch(dir string, minFree int64, log reserver) *diskWatch {
	w := &diskWatch{dir: dir, minFree: minFree, log: log, logged: "ok"}
	w.free.Store(-1)
	w.check()
	return w
}

// check reads the free space now.
func (w *diskWatch) check() {
	var st syscall.Statfs_t
	if err := syscall.Statfs(w.dir, &st); err != nil {
		w.free.Store(-1)
		w.low.Store(false) // unknown: appends will tell
		return
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	w.free.Store(free)
	w.low.Store(free < w.minFree)
	// An append fails for want of space when the log needs a new
	// segment: "full" lasts until one fits, or one was made (an append
	// that got past the refusal, such as a PUBLISH or the node's own
	// entries, may take the returned space before this looks). Were it
	// cleared sooner, every write would be proposed, fail again, and (on
	// a leader) cost an election; so it did on a disk too small for the
	// reserve segment.
	if w.fullAt.Load() != 0 && (free >= w.fullNeeds() || w.log != nil && w.log.SegmentsMade() != w.segsAtFull.Load()) {
		w.fullAt.Store(0)
	}
	if w.log != nil && w.log.ReserveInUse() && free > 2*w.log.SegmentSize() {
		w.log.RefillReserve()
	}
}

// fullNeeds is the free space that ends "full": a segment of the log,
// and never less than --min-free-disk or 1 MiB.
func (w *diskWatch) fullNeeds() int64 {
	need := max(w.minFree, 1<<20)
	if w.log != nil {
		need = max(need, w.log.SegmentSize())
	}
	return need
}

func (w *diskWatch) run(stop <-chan struct{}, logger *slog.Logger, id string) {
	t := time.NewTicker(diskCheckEvery)
	defer t.Stop()
	for {
		w.logChange(logger, id)
		select {
		case <-stop:
			return
		case <-t.C:
		}
		w.check()
	}
}

// logChange logs the disk status when it differs from the one last
// logged ("ok" before the first): the node's own log says when and why it
// starts and stops refusing writes, not only the clients' MISCONF replies.
func (w *diskWatch) logChange(logger *slog.Logger, id string) {
	s := w.status()
	if s == w.logged {
		return
	}
	w.logged = s
	free := max(w.free.Load(), 0)
	switch s {
	case "low":
		logger.Warn("disk short of space: writes are refused (MISCONF) until the data directory has --min-free-disk free; reads go on",
			"id", id, "dir", w.dir, "free", free, "min_free", w.minFree)
	case "full":
		logger.Warn("disk full: the log found no space for its next segment (or runs on its reserve); writes are refused (MISCONF) until space returns; reads go on",
			"id", id, "dir", w.dir, "free", free, "needs", w.fullNeeds())
	default:
		logger.Info("disk space returned: writes are taken again", "id", id, "dir", w.dir, "free", free)
	}
}

// refusal returns the error that refuses a write if there is too little
// space, else nil. The caller counts the refusal.
func (w *diskWatch) refusal() error {
	if w == nil {
		return nil
	}
	switch w.status() {
	case "low":
		return replyError{fmt.Sprintf("MISCONF writes are refused: the data directory %s has %d bytes free, below --min-free-disk %d; reads keep working, writes resume when space returns",
			w.dir, max(w.free.Load(), 0), w.minFree)}
	case "full":
		return replyError{fmt.Sprintf("MISCONF writes are refused: the disk of the data directory %s is full (%d bytes free, the log needs %d for its next segment); reads keep working, writes resume when space returns",
			w.dir, max(w.free.Load(), 0), w.fullNeeds())}
	}
	return nil
}

// appendNoSpace notes a log append that failed for want of space, on a
// leader or a follower: the disk is "full" until a new segment fits or the
// log has made one (check). A follower's went unnoted before: with
// --min-free-disk 0 (or above the threshold, with no reserve segment made)
// it answered "ok" to a leader looking for a member to hand over to, and
// showed so on /metrics.
func (w *diskWatch) appendNoSpace() {
	if w != nil {
		if w.log != nil {
			w.segsAtFull.Store(w.log.SegmentsMade())
		}
		w.fullAt.Store(time.Now().UnixNano())
	}
}

// noSpace is the error for a write whose append failed with ENOSPC.
func (w *diskWatch) noSpace(err error) error {
	w.appendNoSpace()
	w.refused.Add(1)
	return replyError{fmt.Sprintf("MISCONF write refused: no space left on the disk of the data directory %s (%v); nothing was written, writes resume when space returns", w.dir, err)}
}

// status is "ok", "low" (below the threshold) or "full" (an append failed
// for want of space since the last check that found space, or the log
// runs on its reserve segment).
func (w *diskWatch) status() string {
	switch {
	case w.fullAt.Load() != 0, w.log != nil && w.log.ReserveInUse():
		return "full"
	case w.low.Load():
		return "low"
	}
	return "ok"
}

// Persistence returns the disk fields of INFO's "# Persistence" section:
// the data directory's free space, the threshold, whether writes are
// being refused for want of space, and how many were.
func (n *Node) Persistence() []string {
	w := n.disk
	if w == nil {
		return nil
	}
	refusing := 0
	if w.status() != "ok" || w.peers.Load() != nil {
		refusing = 1
	}
	return []string{
		"disk_free_bytes:" + strconv.FormatInt(w.free.Load(), 10),
		"disk_min_free_bytes:" + strconv.FormatInt(w.minFree, 10),
		"disk_status:" + w.status(),
		"disk_writes_refused:" + strconv.Itoa(refusing),
		"disk_refused_writes_total:" + strconv.FormatInt(w.refused.Load(), 10),
	}
}

// DiskStatus is the data directory's disk status ("ok", "low", "full";
// "" without a data directory) and its free bytes, read now (a leader
// choosing whom to hand over to must not go by a reading 100 ms old).
func (n *Node) DiskStatus() (string, int64) {
	if n.disk == nil {
		return "", 0
	}
	n.disk.check()
	return n.disk.status(), n.disk.free.Load()
}

// isNoSpace reports whether raft's answer to an entry is a log store's
// failure for want of space: the entry was not stored.
func isNoSpace(err error) bool {
	return err != nil && raftlog.IsNoSpace(err)
}

// refuseWrite returns the error for a client write this leader refuses:
// a format an older build could not read (upgrade.go), or MISCONF for
// want of space (diskRefusal), counted.
func (n *Node) refuseWrite(cmd fsm.Command) error {
	if err := n.refuseNewFormat(cmd); err != nil { // upgrade.go
		return err
	}
	err := n.diskRefusal(cmd)
	if err != nil {
		n.disk.refused.Add(1)
	}
	return err
}

// QueuedWriteRefused returns the MISCONF error for args, a command being
// queued in MULTI, if this node leads and refuses writes for want of
// space (its own disk, or too few voters with space) and Redis 7.0 would
// refuse args before queueing it (EXEC then aborts), or nil. Redis refuses
// then a command flagged write: a write command (not PUBLISH), a FUNCTION
// subcommand that changes the libraries, and a script or function whose
// declared flags lack no-writes; a script without a shebang and SCRIPT are
// queued (deadbolt refuses a transaction holding one at EXEC). A follower
// returns nil: the leader decides, at EXEC, since a follower's own full
// disk does not stop the cluster's writes.
func (n *Node) QueuedWriteRefused(args [][]byte) error {
	if n.disk == nil || len(args) == 0 {
		return nil
	}
	refusal := n.diskRefusal(fsm.Command{Args: [][]byte{[]byte("set")}})
	if refusal == nil || !n.IsLeader() {
		return nil
	}
	spec, ok := fsm.Lookup(args[0])
	if !ok || spec.Flags&fsm.Write == 0 || spec.Flags&fsm.PubSub != 0 {
		return nil
	}
	if spec.Flags&fsm.Scripting != 0 {
		switch spec.Name {
		case "function":
			if len(args) < 2 {
				return nil
			}
			switch strings.ToLower(string(args[1])) {
			case "load", "delete", "flush", "restore":
			default:
				return nil
			}
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
			n.fsm.mu.Lock()
			runs := n.state.RunsWhileWritesRefused(n.withRule(fsm.Command{Args: args})) // upgrade.go
			n.fsm.mu.Unlock()
			if runs {
				return nil
			}
		default:
			return nil // SCRIPT
		}
	}
	n.disk.refused.Add(1)
	return refusal
}

// diskRefusal returns the MISCONF error for a client write this leader
// refuses for want of space, or nil. PUBLISH and SPUBLISH pass, as in
// Redis (they are not write commands there), and so do the node's own
// entries (its client address, for discovery): both are small. A
// transaction (EXEC: no Args of its own, its commands in Tx) is refused
// unless every command it queued passes. A script command Redis would
// run is served as a read instead (scriptsrefused.go).
func (n *Node) diskRefusal(cmd fsm.Command) error {
	if n.disk == nil {
		return nil
	}
	peers := n.disk.peers.Load()
	own := n.disk.status() != "ok"
	if !own && peers == nil {
		return nil
	}
	pass := true
	if len(cmd.Args) == 0 {
		for _, c := range cmd.Tx {
			if len(c) > 0 && !mayPassFullDisk(c[0]) {
				pass = false
			}
		}
	} else {
		pass = mayPassFullDisk(cmd.Args[0])
	}
	switch {
	case pass:
		return nil
	case own:
		return n.disk.refusal()
	}
	return replyError{*peers}
}

// mayPassFullDisk: a command proposed even when the disk is short of
// space.
func mayPassFullDisk(name []byte) bool {
	return strings.EqualFold(string(name), "publish") || strings.EqualFold(string(name), "spublish") ||
		len(name) > 2 && name[0] == '_' && name[1] == '_'
}

// A leader short of space refuses writes; if another voter has space, it
// should lead instead. So a leader whose disk is not "ok" asks the other
// voters for theirs (DEADBOLT.FORWARD d, on the members' connections), at
// most every handOverEvery, and hands leadership to the first that
// answers "ok". When every disk is short, leadership stays where it is
// and reads go on.
const handOverEvery = 2 * time.Second

// handOverForSpace runs on leaderDuties' goroutine while this leader's
// disk is short of space.
func (n *Node) handOverForSpace() {
	now := time.Now()
	if now.Sub(n.lastHandOver) < handOverEvery {
		return
	}
	n.lastHandOver = now
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter || string(s.ID) == n.cfg.ID {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		res, err := n.member.forward(ctx, string(s.Address), modeDisk, fsm.Command{Args: [][]byte{[]byte("disk")}})
		cancel()
		if err != nil || string(res.Reply.Str) != "ok" {
			continue
		}
		if n.raft.State() != raft.Leader {
			return
		}
		status, free := n.DiskStatus()
		n.cfg.Logger.Warn("disk short of space: handing leadership to a member with space", "id", n.cfg.ID, "to", s.ID,
			"dir", n.cfg.DataDir, "status", status, "free", free)
		if err := n.raft.LeadershipTransferToServer(s.ID, s.Address).Error(); err != nil {
			n.cfg.Logger.Warn("leadership hand-over for space failed", "to", s.ID, "err", err)
		}
		return
	}
}
