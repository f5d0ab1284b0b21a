package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/fsm"
)

// Downgrades. A newer build turns what it opens into its own formats: the
// stable store into the slotted file, and its snapshots carry what it
// knows (lock shapes: snapshot version 3). An older build refuses those
// (cluster/UPGRADES.md, "Upgrades and downgrades"), so a node goes back to
// an older build through Downgrade, run by the newer build on the stopped
// node's data directory: it writes the stable store in its first layout
// and every snapshot in a format version no higher than the older build
// reads. The log's segments and the identity file need nothing: every
// build so far reads the segments, and a build from before the identity
// file leaves it alone.

// DowngradeReport says what Downgrade changed.
type DowngradeReport struct {
	StableRewritten bool     // the stable store was slotted
	Snapshots       []string // the snapshots written again, by raft's id
}

// Downgrade rewrites the data directory of a stopped node so that a build
// reading snapshot format versions up to snapshotMax (2 for builds before
// lock shapes, 2026-11-26) and the first stable store layout can start on
// it. It refuses a directory a newer build than this one wrote, and
// changes nothing the older build reads already.
func Downgrade(dataDir string, snapshotMax int) (DowngradeReport, error) {
	var rep DowngradeReport
	logDir := filepath.Join(dataDir, "log")
	if _, err := os.Stat(logDir); err != nil {
		return rep, fmt.Errorf("cluster: downgrade: %s is not a node's data directory: %w", dataDir, err)
	}
	if err := refuseInUse(dataDir); err != nil {
		return rep, err
	}
	if ident, ok, err := readIdentity(dataDir); err != nil {
		return rep, err
	} else if ok && ident.format > dataFormat {
		return rep, fmt.Errorf("cluster: downgrade: %s is in format %d, written by a newer build than this one (format %d): downgrade it with that build", filepath.Join(dataDir, identityFile), ident.format, dataFormat)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 1<<20, hclog.NewNullLogger())
	if err != nil {
		return rep, fmt.Errorf("cluster: downgrade: %w", err)
	}
	metas, err := snaps.List()
	if err != nil {
		return rep, fmt.Errorf("cluster: downgrade: %w", err)
	}
	// Snapshots first: a failure leaves the stable store as this build
	// reads it, so the node can still start with this build.
	for _, meta := range metas {
		rewrote, err := downgradeSnapshot(dataDir, snaps, meta, snapshotMax)
		if err != nil {
			return rep, err
		}
		if rewrote {
			rep.Snapshots = append(rep.Snapshots, meta.ID)
		}
	}
	if rep.StableRewritten, err = raftlog.DowngradeStable(logDir); err != nil {
		return rep, fmt.Errorf("cluster: downgrade: %w", err)
	}
	return rep, nil
}

// downgradeSnapshot writes meta's snapshot again at snapshotMax if it is
// newer, as a snapshot of the same index, term and configuration, then
// removes the original.
func downgradeSnapshot(dataDir string, snaps *raft.FileSnapshotStore, meta *raft.SnapshotMeta, snapshotMax int) (bool, error) {
	path := filepath.Join(dataDir, "snapshots", meta.ID, "state.bin")
	_, rc, err := snaps.Open(meta.ID)
	if err != nil {
		return false, fmt.Errorf("cluster: downgrade: snapshot %s: %w", path, err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return false, fmt.Errorf("cluster: downgrade: snapshot %s: %w", path, err)
	}
	if len(data) < fsm.SnapshotHeaderSize {
		return false, fmt.Errorf("cluster: downgrade: snapshot %s: %w", path, fsm.ErrSnapshotFormat)
	}
	if err := fsm.CheckSnapshotHeader(data); err != nil {
		return false, fmt.Errorf("cluster: downgrade: snapshot %s: %w", path, err)
	}
	if int(data[fsm.SnapshotHeaderSize-1]) <= snapshotMax {
		return false, nil
	}
	f := fsm.New(fsm.Options{})
	defer f.Close()
	if err := f.Restore(bytes.NewReader(data)); err != nil {
		return false, fmt.Errorf("cluster: downgrade: snapshot %s: %w", path, err)
	}
	var b bytes.Buffer
	if err := f.SnapshotUpTo(&b, snapshotMax); err != nil {
		return false, fmt.Errorf("cluster: downgrade: snapshot %s: %w", path, err)
	}
	// The transport only encodes the legacy peer list raft still writes
	// into the snapshot's metadata (addresses as they are).
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(meta.Version, meta.Index, meta.Term, meta.Configuration, meta.ConfigurationIndex, trans)
	if err != nil {
		return false, fmt.Errorf("cluster: downgrade: %w", err)
	}
	if sink.ID() == meta.ID {
		sink.Cancel()
		return false, errors.New("cluster: downgrade: the rewritten snapshot would take the original's name: try again")
	}
	if _, err := sink.Write(b.Bytes()); err != nil {
		sink.Cancel()
		return false, fmt.Errorf("cluster: downgrade: %w", err)
	}
	if err := sink.Close(); err != nil {
		return false, fmt.Errorf("cluster: downgrade: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(dataDir, "snapshots", meta.ID)); err != nil {
		return false, fmt.Errorf("cluster: downgrade: %w", err)
	}
	return true, nil
}
