package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster/raftlog"
	"github.com/deadbolt/deadbolt/fsm"
)

// Checks of a data directory at start-up, before raft reads it (see
// DESIGN.md, "Damaged files"). raft's file snapshot store checks a
// snapshot's state.bin against the CRC-64 in its meta.json when it opens
// it, and falls back to the next older snapshot; but it skips a meta.json
// that does not parse without a word, trusts the index and term in one
// that does, and, when the log does not reach back to the snapshot it fell
// back to, panics on the first entry it cannot find. So every snapshot is
// read and checked here first: its meta.json parses, names its own term
// and index (raft names the directory term-index-time), its state.bin has
// the size and CRC meta.json gives and starts with a state machine header
// this build reads. A damaged snapshot is moved out of raft's way (to
// damaged-snapshots/) if what is left still holds everything the node
// held: the newest good snapshot and the log together reach the log's
// end, with no gap between them. Otherwise the node refuses to start.

// damagedSnapDir is where damaged snapshots are moved, in the data
// directory.
const damagedSnapDir = "damaged-snapshots"

// repairHint says how to repair a node whose data cannot be used.
func repairHint(id, dataDir string) string {
	return fmt.Sprintf("this node must not rejoin with what is left of its data: on the leader run RAFT REMOVE %s, move %s away, and start the node again with --join and the address of a member (it then catches up from the leader)", id, dataDir)
}

type snapInfo struct {
	dir  string
	meta raft.SnapshotMeta
	err  error // why it cannot be used
}

// checkSnapshot reads and checks the snapshot in dir.
func checkSnapshot(dir string) snapInfo {
	si := snapInfo{dir: dir}
	fail := func(format string, a ...any) snapInfo {
		si.err = fmt.Errorf(format, a...)
		return si
	}
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return fail("%v", err)
	}
	var m struct {
		raft.SnapshotMeta
		CRC []byte
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fail("%s: %v", filepath.Join(dir, "meta.json"), err)
	}
	si.meta = m.SnapshotMeta
	// raft names a snapshot term-index-milliseconds.
	parts := strings.Split(filepath.Base(dir), "-")
	if len(parts) != 3 || parts[0] != strconv.FormatUint(m.Term, 10) || parts[1] != strconv.FormatUint(m.Index, 10) {
		return fail("%s: term %d and index %d do not match the snapshot's name", filepath.Join(dir, "meta.json"), m.Term, m.Index)
	}
	state := filepath.Join(dir, "state.bin")
	f, err := os.Open(state)
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	head := make([]byte, fsm.SnapshotHeaderSize)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fail("%s: %v", state, err)
	}
	h.Write(head[:n])
	rest, err := io.Copy(h, f)
	if err != nil {
		return fail("%s: %v", state, err)
	}
	if size := int64(n) + rest; size != m.Size {
		return fail("%s: %d bytes, meta.json says %d", state, size, m.Size)
	}
	if !bytes.Equal(h.Sum(nil), m.CRC) {
		return fail("%s: checksum mismatch", state)
	}
	if err := fsm.CheckSnapshotHeader(head[:n]); err != nil {
		return fail("%s: %w", state, err)
	}
	return si
}

// checkData checks dataDir's snapshots against its log before raft opens
// them, and moves damaged snapshots aside when what is left holds all the
// node held. logs is the log store; floor, if not nil, is the first index
// the log has recorded (raftlog: entries below it were compacted away,
// or given up for an installed snapshot). logger is the node's own log,
// not raft's (which the deadbolt binary discards): an operator must hear
// of a snapshot moved aside.
func checkData(dataDir, id string, logs raft.LogStore, floor func() uint64, logger *slog.Logger) error {
	root := filepath.Join(dataDir, "snapshots")
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		ents = nil
	} else if err != nil {
		return err
	}
	var good, bad []snapInfo
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue // raft removes its temporary snapshots itself
		}
		si := checkSnapshot(filepath.Join(root, e.Name()))
		if errors.Is(si.err, fsm.ErrSnapshotNewer) {
			return fmt.Errorf("cluster: %v: start the node with the newer build that wrote it", si.err)
		}
		if si.err != nil {
			bad = append(bad, si)
		} else {
			good = append(good, si)
		}
	}
	// raft's order: term, index, name.
	slices.SortFunc(good, func(a, b snapInfo) int {
		if a.meta.Term != b.meta.Term {
			return cmpU(a.meta.Term, b.meta.Term)
		}
		if a.meta.Index != b.meta.Index {
			return cmpU(a.meta.Index, b.meta.Index)
		}
		return strings.Compare(a.dir, b.dir)
	})
	var snap uint64 // the newest good snapshot's index
	snapName := "no snapshot"
	if len(good) > 0 {
		snap = good[len(good)-1].meta.Index
		snapName = "snapshot " + good[len(good)-1].dir
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := logs.LastIndex()
	if err != nil {
		return err
	}
	var why []string
	for _, b := range bad {
		why = append(why, b.err.Error())
	}
	damaged := ""
	if len(bad) > 0 {
		damaged = fmt.Sprintf(" (damaged: %s)", strings.Join(why, "; "))
	}
	if last > 0 && first > snap+1 {
		return fmt.Errorf("cluster: %s: the log starts at index %d but the newest usable snapshot is at %d (%s): entries %d to %d are in neither%s; %s",
			dataDir, first, snap, snapName, snap+1, first-1, damaged, repairHint(id, dataDir))
	}
	if len(bad) == 0 {
		return nil
	}
	held := last
	if floor != nil && floor() > 0 {
		held = max(held, floor()-1)
	}
	if max(snap, last) < held {
		return fmt.Errorf("cluster: %s: the node held entries up to index %d, but the newest usable snapshot is at %d and the log ends at %d%s; %s",
			dataDir, held, snap, last, damaged, repairHint(id, dataDir))
	}
	aside := filepath.Join(dataDir, damagedSnapDir)
	if err := os.MkdirAll(aside, 0o755); err != nil {
		return err
	}
	for _, b := range bad {
		to := filepath.Join(aside, filepath.Base(b.dir))
		if err := os.Rename(b.dir, to); err != nil {
			return fmt.Errorf("cluster: move damaged snapshot %s aside: %w", b.dir, err)
		}
		logger.Warn("a damaged snapshot was moved aside; the node starts from an older snapshot and its log",
			"snapshot", b.dir, "moved-to", to, "error", b.err, "from", snapName, "log", fmt.Sprintf("%d..%d", first, last))
	}
	return nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// storeError adds to an error opening the log store what to do about it.
func storeError(err error, id, dataDir string) error {
	var nf *raftlog.NewerFormatError
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("%w; start the node with the newer build that wrote it", err)
	case errors.Is(err, raftlog.ErrLost), errors.Is(err, raftlog.ErrCorrupt):
		return fmt.Errorf("%w; %s", err, repairHint(id, dataDir))
	}
	return err
}
