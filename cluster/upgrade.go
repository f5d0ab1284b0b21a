package cluster

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Rolling upgrades and downgrades (UPGRADES.md, "Upgrades and downgrades").
// Every build writes the oldest log envelope and snapshot format that
// carries what it writes: a command is envelope version 1 unless a
// restricted ACL user sent it (version 3), a batch version 2, a snapshot
// version 1, 2 with replicated settings or functions, 3 with lock shapes.
// An older build refuses what it does not know, by name (an envelope of
// an unknown version is refused before it is stored; a snapshot of an
// unknown version is not installed), never applying it as something else.
//
// That leaves what a newer build writes on its own: lock shapes, in any
// snapshot taken while a lock is held, and ACL users, which an older build
// would not apply (it answers __acl as an unknown command, so users would
// differ between members). While a cluster mixes builds, and for as long
// as a downgrade must stay possible, the newer nodes run with
// Config.PreserveDowngrade (--preserve-downgrade): snapshots at version 2
// (without lock shapes, which only DEADBOLT LOCKS and the lock counters
// read), and the leader refuses what only envelope version 3 or new
// replicated state could carry. A node's own files (the stable store's
// layout) are turned back by Downgrade (downgrade.go) before an older
// build starts on them.

// The rule a leader writes under: function names compare without case
// (Redis 7.0's), marked on each command whose outcome depends on it
// (fsm.NamesFunctions) and so written in envelope version 4; with
// PreserveDowngrade the old rule (exact case), in the envelope an older
// build reads. The mark is the leader's alone: a follower forwards
// commands unmarked (so an older leader can decode them), and a leader
// marks what it proposes whatever it was sent. What this node serves
// outside the log (a script while writes are refused) follows the same
// rule, as the entry it would have written.

// foldsFunctionNames reports the rule this node writes and reads under.
func (n *Node) foldsFunctionNames() bool { return !n.cfg.PreserveDowngrade }

// withRule returns cmd marked with the rule this node writes under as
// leader.
func (n *Node) withRule(cmd fsm.Command) fsm.Command {
	cmd.FoldFunctionNames = n.foldsFunctionNames() && fsm.NamesFunctions(cmd)
	return cmd
}

// unmarked returns cmd as a follower forwards it: the leader decides the
// rule (withRule).
func unmarked(cmd fsm.Command) fsm.Command {
	cmd.FoldFunctionNames = false
	return cmd
}

// preservedSnapshotVersion is the highest snapshot format written with
// PreserveDowngrade: what builds before lock shapes read.
const preservedSnapshotVersion = 2

func snapshotMax(preserve bool) int {
	if preserve {
		return preservedSnapshotVersion
	}
	return fsm.SnapshotVersion
}

// refuseNewFormat refuses, with PreserveDowngrade, a command an older
// build could not store or would not apply: one from a restricted ACL
// user (envelope version 3) or one that changes ACL users.
func (n *Node) refuseNewFormat(cmd fsm.Command) error {
	if !n.cfg.PreserveDowngrade {
		return nil
	}
	if cmd.User != "" {
		return preserveRefusal("ACL users")
	}
	if err := refuseNewCommand(cmd.Args); err != nil {
		return err
	}
	for _, args := range cmd.Tx { // queued in MULTI
		if err := refuseNewCommand(args); err != nil {
			return err
		}
	}
	return nil
}

func refuseNewCommand(args [][]byte) error {
	if len(args) == 0 {
		return nil
	}
	switch name := strings.ToLower(string(args[0])); {
	case name == "__acl":
		return preserveRefusal("ACL users")
	case name == "__setconfig" && len(args) > 1 && !preservedSettings[string(args[1])]:
		return preserveRefusal("the replicated setting " + string(args[1]))
	}
	return nil
}

// preservedSettings are the replicated settings (CONFIG SET through the
// log) that builds before lock shapes know; they refuse a snapshot with
// any other.
var preservedSettings = map[string]bool{"notify-keyspace-events": true}

func preserveRefusal(what string) error {
	return replyError{"ERR " + what + " refused: the cluster keeps its formats readable by an older build (--preserve-downgrade on the leader) until every member runs this build and the flag is dropped on every member"}
}

// ErrNewerEnvelope: a log entry's first byte is a version above the
// newest this build knows, so a newer build wrote it.
var ErrNewerEnvelope = errors.New("cluster: log entry in an envelope version this build does not know (written by a newer build)")

// newestEnvelope is the newest envelope version this build knows.
const newestEnvelope = flagsVersion

// unknownVersion is the error for an entry whose version byte is no
// envelope this build decodes.
func unknownVersion(b []byte) error {
	if len(b) > 0 && b[0] > newestEnvelope {
		return fmt.Errorf("%w: version %d, this build knows 1 to %d", ErrNewerEnvelope, b[0], newestEnvelope)
	}
	return fmt.Errorf("%w: unknown version", ErrBadEnvelope)
}

// refuseNewer stops applying at an entry of a newer envelope version: it
// is not damage (every member holds it), and this build cannot apply it.
// The node stops, as for a failed disk (the binary exits with the error,
// naming the entry and version); every start stops there again, until the
// node runs a build that knows the version. Called under r.mu.
func (r *raftFSM) refuseNewer(l *raft.Log, err error) {
	r.failed = true
	r.onNewer(fmt.Errorf("cluster: log entry %d: %w: start this node with that build", l.Index, err))
}

// formatRefused is raftFSM.onNewer: it stops the node on a goroutine of
// its own (raft's apply goroutine cannot wait for raft to stop).
func (n *Node) formatRefused(err error) {
	go func() {
		n.cfg.Logger.Error("the log holds an entry this build cannot apply: the node stops", "err", err)
		if n.raftRef.Load() != nil {
			n.Close()
		}
		if n.cfg.OnDiskFailure != nil {
			n.cfg.OnDiskFailure(err)
		}
	}()
}
