package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// The log and stable store of a node with a data directory: raft-boltdb's
// raft.db. hashicorp/raft-wal (segment files, one write and one fsync per
// append where bolt writes several pages and fsyncs twice) measured about
// 1.5 × the cluster's throughput, but v0.4.0, the only release, cannot
// reopen a log whose suffix raft truncated after a leader change: the
// segment it sealed has no index block, and NewRaft panics ("sealed
// segment has no index block", raft-wal issue 31). The chaos run found a
// node that never came back after a kill. So new data directories get
// raft-boltdb; a directory written by a build that used raft-wal (it has
// wal/ and no raft.db) is still opened with it.
const (
	boltFile = "raft.db"
	walDir   = "wal"
	// walSegmentSize is the size of each preallocated WAL segment file.
	walSegmentSize = 16 << 20
	// logCacheSize is how many recent entries are kept in memory, so that
	// replicating them to followers does not read them back from disk.
	logCacheSize = 512
)

// LogStoreKind names the store a data directory uses: "raft-boltdb" or
// "raft-wal".
func LogStoreKind(dataDir string) string {
	if _, err := os.Stat(filepath.Join(dataDir, boltFile)); err == nil {
		return "raft-boltdb"
	}
	if st, err := os.Stat(filepath.Join(dataDir, walDir)); err == nil && st.IsDir() {
		return "raft-wal"
	}
	return "raft-boltdb"
}

// OpenLogStore opens (creating if needed) the log and stable store in
// dataDir, which must exist. Close the returned closer when done.
func OpenLogStore(dataDir string, logger hclog.Logger) (raft.LogStore, raft.StableStore, io.Closer, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if LogStoreKind(dataDir) == "raft-boltdb" {
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dataDir, boltFile)})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("cluster: open log store: %w", err)
		}
		return bolt, bolt, bolt, nil
	}
	dir := filepath.Join(dataDir, walDir)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, nil, nil, err
	}
	// raft-wal v0.4.0's Close leaves its meta database open (and locked),
	// so a node restarted in the same process would wait for the lock
	// forever: the meta database is passed in and closed here.
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithLogger(logger.Named("wal")), wal.WithSegmentSize(walSegmentSize), wal.WithMetaStore(meta))
	if err != nil {
		meta.Close()
		return nil, nil, nil, fmt.Errorf("cluster: open log store: %w", err)
	}
	return w, w, walCloser{w, meta}, nil
}

type walCloser struct {
	w    *wal.WAL
	meta *metadb.BoltMetaDB
}

func (c walCloser) Close() error {
	return errors.Join(c.w.Close(), c.meta.Close())
}
