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

	"github.com/deadbolt/deadbolt/cluster/raftlog"
)

// The log and stable store of a node with a data directory. New data
// directories get raftlog (package cluster/raftlog: segment files, one
// write and one fdatasync per append) in log/. Directories written by
// earlier builds keep their store:
//   - raft-boltdb's raft.db (several pages and two fsyncs per append);
//   - hashicorp/raft-wal's wal/, which some builds of 2026-11-22 wrote.
//     raft-wal v0.4.0, its only release, cannot reopen a log whose suffix
//     raft truncated after a leader change ("sealed segment has no index
//     block", raft-wal issue 31), which is why it was withdrawn.
const (
	boltFile   = "raft.db"
	walDir     = "wal"
	raftlogDir = "log"
	// walSegmentSize is the size of each preallocated WAL segment file.
	walSegmentSize = 16 << 20
	// logCacheSize is how many recent entries are kept in memory, so that
	// replicating them to followers does not read them back from disk.
	logCacheSize = 512
)

// The names LogStoreKind returns.
const (
	StoreRaftlog = "raftlog"
	StoreBolt    = "raft-boltdb"
	StoreWAL     = "raft-wal"
)

// LogStoreKind names the store a data directory uses: StoreBolt if it has
// raft.db, StoreWAL if it has wal/, otherwise StoreRaftlog.
func LogStoreKind(dataDir string) string {
	if _, err := os.Stat(filepath.Join(dataDir, boltFile)); err == nil {
		return StoreBolt
	}
	if st, err := os.Stat(filepath.Join(dataDir, walDir)); err == nil && st.IsDir() {
		return StoreWAL
	}
	return StoreRaftlog
}

// LogStorePath is the file or directory that holds dataDir's log store.
func LogStorePath(dataDir string) string {
	switch LogStoreKind(dataDir) {
	case StoreBolt:
		return filepath.Join(dataDir, boltFile)
	case StoreWAL:
		return filepath.Join(dataDir, walDir)
	}
	return filepath.Join(dataDir, raftlogDir)
}

// OpenLogStore opens (creating if needed) the log and stable store in
// dataDir, which must exist. Close the returned closer when done.
func OpenLogStore(dataDir string, logger hclog.Logger) (raft.LogStore, raft.StableStore, io.Closer, error) {
	return openLogStore(dataDir, logger, raftlog.Options{})
}

// openLogStore is OpenLogStore with the options of a raftlog store.
func openLogStore(dataDir string, logger hclog.Logger, opts raftlog.Options) (raft.LogStore, raft.StableStore, io.Closer, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	switch LogStoreKind(dataDir) {
	case StoreRaftlog:
		st, err := raftlog.Open(filepath.Join(dataDir, raftlogDir), opts)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("cluster: open log store: %w", err)
		}
		return st, st, st, nil
	case StoreBolt:
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
