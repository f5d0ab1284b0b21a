package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Backups. A backup is the state machine's snapshot (fsm.Snapshot's
// format): keys with their deadlines and versions, tombstones, scripts,
// functions, ACL users, replicated settings, and the state machine's
// clock. It is taken on the leader after an entry of its own (a clock
// tick) has been applied, so it holds every write acknowledged before it
// was asked for, and its clock is the leader's time at that moment.
//
// A new cluster starts from a backup (Config.Restore): the backup becomes
// the snapshot at index 1, term 1 of every node given it, where a
// bootstrap puts its first configuration, with Config.Peers as the
// configuration. The new cluster's first leader continues the state
// machine's clock from the backup's (leader.go, becomeLeader), so time does
// not run between the backup and the restore, as it does not while a
// cluster has no leader: a lock with 30 s left when the backup was taken
// has 30 s left when the new cluster serves.

// ErrNotLeaderBackup is Backup's error on a node that does not lead.
var ErrNotLeaderBackup = errors.New("cluster: backups are taken on the leader")

// Backup returns the state machine's snapshot, taken at an applied index
// no earlier than the commit index when it was asked for (linearizable),
// and that index.
func (n *Node) Backup(ctx context.Context) ([]byte, uint64, error) {
	ts, ok := n.stamp()
	if !ok {
		return nil, 0, ErrNotLeaderBackup
	}
	// A tick through the log: once it is applied, so is every write
	// acknowledged before, and the state machine's clock is the
	// leader's now.
	f := n.raft.Apply(AppendEntry(nil, Entry{Time: ts, Cmd: fsm.TickCommand()}), n.cfg.CommandTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, 0, ErrNotLeaderBackup
		}
		return nil, 0, fmt.Errorf("cluster: backup: %w", err)
	}
	if err := n.fsm.waitApplied(ctx, f.Index()); err != nil {
		return nil, 0, err
	}
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	var b bytes.Buffer
	if err := n.state.Snapshot(&b); err != nil {
		return nil, 0, fmt.Errorf("cluster: backup: %w", err)
	}
	return b.Bytes(), n.fsm.applied, nil
}

// CheckBackup verifies that data is a whole state-machine snapshot that
// this build reads and writes back byte for byte, and returns the state
// machine's clock in it (ms).
func CheckBackup(data []byte) (clock int64, err error) {
	f := fsm.New(fsm.Options{})
	defer f.Close()
	if err := f.Restore(bytes.NewReader(data)); err != nil {
		return 0, fmt.Errorf("not a deadbolt backup: %w", err)
	}
	var b bytes.Buffer
	if err := f.Snapshot(&b); err != nil {
		return 0, err
	}
	if !bytes.Equal(b.Bytes(), data) {
		return 0, errors.New("the backup does not read back to the same bytes (truncated, altered, or from another version of deadbolt)")
	}
	return f.Now(), nil
}

// newClusterSeed is a backup as a new cluster's first snapshot: the same
// state without the backed-up cluster's id, so that the new cluster's
// first leader gives it one of its own (clusterid.go) and the two are
// told apart. The same backup gives the same bytes on every new member.
func newClusterSeed(data []byte) ([]byte, error) {
	f := fsm.New(fsm.Options{})
	defer f.Close()
	if err := f.Restore(bytes.NewReader(data)); err != nil {
		return nil, err
	}
	if f.ClusterID() == "" {
		return data, nil
	}
	f.ForgetClusterID()
	var b bytes.Buffer
	if err := f.Snapshot(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// restoredMarker, in a data directory, holds the SHA-256 of the backup
// the directory was started from: a node restarted with the same
// --restore (left in its configuration) starts from the state it has,
// where any other restore over state is refused.
const restoredMarker = "restored-from.sha256"

// restoreBackup starts a new node from Config.Restore, or refuses to.
func (n *Node) restoreBackup(hasState bool, snaps raft.SnapshotStore) error {
	sum := sha256.Sum256(n.cfg.Restore)
	hexSum := hex.EncodeToString(sum[:])
	marker := ""
	if n.cfg.DataDir != "" {
		marker = filepath.Join(n.cfg.DataDir, restoredMarker)
	}
	if hasState {
		if marker != "" {
			if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == hexSum {
				n.cfg.Logger.Info("cluster: the data directory was started from this backup before: starting from the state it holds", "id", n.cfg.ID, "sha256", hexSum)
				return nil
			}
			return fmt.Errorf("cluster: restore: %s already holds a node's state (a log, a term or snapshots), not started from this backup: a backup is restored only into an empty data directory", n.cfg.DataDir)
		}
		return errors.New("cluster: restore: the node already has state")
	}
	if len(n.cfg.Peers) == 0 {
		return errors.New("cluster: restore: a backup needs the new cluster's members (Peers)")
	}
	if marker != "" {
		// Before the snapshot: a start that fails between the two finds
		// no state, and restores again.
		if err := writeSynced(marker, []byte(hexSum+"\n")); err != nil {
			return fmt.Errorf("cluster: restore: %w", err)
		}
	}
	return n.seedSnapshot(snaps, n.transport, n.cfg.Restore)
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// seedSnapshot stores a backup as the snapshot a new node starts from.
func (n *Node) seedSnapshot(snaps raft.SnapshotStore, trans raft.Transport, data []byte) error {
	clock, err := CheckBackup(data)
	if err != nil {
		return fmt.Errorf("cluster: restore: %w", err)
	}
	sum, size := sha256.Sum256(data), len(data) // the file's, as deadbolt backup printed them
	if data, err = newClusterSeed(data); err != nil {
		return fmt.Errorf("cluster: restore: %w", err)
	}
	var conf raft.Configuration
	for _, p := range n.cfg.Peers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
	}
	sink, err := snaps.Create(raft.SnapshotVersionMax, 1, 1, conf, 1, trans)
	if err != nil {
		return fmt.Errorf("cluster: restore: %w", err)
	}
	if _, err := sink.Write(data); err != nil {
		sink.Cancel()
		return fmt.Errorf("cluster: restore: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("cluster: restore: %w", err)
	}
	n.cfg.Logger.Info("cluster: starting from a backup", "id", n.cfg.ID, "bytes", size,
		"sha256", hex.EncodeToString(sum[:]), "clock_ms", clock, "members", len(conf.Servers))
	return nil
}
