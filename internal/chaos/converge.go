package chaos

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
)

// NodeState is what one stopped node left on disk, replayed.
type NodeState struct {
	ID        string
	First     uint64 // first log index kept
	Last      uint64 // last log index
	LastTerm  uint64
	Snapshots []SnapState       // the snapshots it kept, newest first
	Digests   map[uint64]string // state after applying each target index, by replay
	Terms     map[uint64]uint64 // term of the log entry at each target index
	BaseIndex uint64            // the snapshot replay started from (0: none)
	Err       string
}

// SnapState is one snapshot kept on a node: the state machine as that node
// held it in memory at that index.
type SnapState struct {
	Index, Term uint64
	Digest      string
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// ReadNode (with nil targets: only lists what is there) opens a stopped
// node's data directory (its log store is copied
// first, so nothing of the node's is changed), lists its snapshots and
// replays its log from its oldest snapshot, recording the digest of the
// state machine's snapshot after each target index.
func ReadNode(id, dataDir, scratch string, targets map[uint64]bool) (st NodeState) {
	st = NodeState{ID: id, Digests: map[uint64]string{}, Terms: map[uint64]uint64{}}
	fail := func(err error) NodeState { st.Err = err.Error(); return st }
	copyDir := filepath.Join(scratch, id+"-data")
	if err := copyLogStore(dataDir, copyDir); err != nil {
		return fail(err)
	}
	store, _, closer, err := cluster.OpenLogStore(copyDir, nil)
	if err != nil {
		return fail(err)
	}
	defer closer.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, hclog.NewNullLogger())
	if err != nil {
		return fail(err)
	}
	metas, err := snaps.List()
	if err != nil {
		return fail(err)
	}
	var (
		base     []byte
		baseTerm uint64
	)
	for i, m := range metas {
		_, rc, err := snaps.Open(m.ID)
		if err != nil {
			return fail(fmt.Errorf("open snapshot %s: %w", m.ID, err))
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fail(fmt.Errorf("read snapshot %s: %w", m.ID, err))
		}
		st.Snapshots = append(st.Snapshots, SnapState{Index: m.Index, Term: m.Term, Digest: digest(b)})
		if i == 0 { // List returns the newest first: raft restores that one
			base, st.BaseIndex, baseTerm = b, m.Index, m.Term
		}
	}
	if st.First, err = store.FirstIndex(); err != nil {
		return fail(err)
	}
	if st.Last, err = store.LastIndex(); err != nil {
		return fail(err)
	}
	if targets == nil {
		return st // listing only
	}
	f := fsm.New(fsm.Options{})
	defer f.Close()
	if base != nil {
		if err := f.Restore(bytes.NewReader(base)); err != nil {
			return fail(fmt.Errorf("restore snapshot at %d: %w", st.BaseIndex, err))
		}
	}
	if st.Last > st.BaseIndex && st.First > st.BaseIndex+1 {
		return fail(fmt.Errorf("gap: snapshot ends at %d but the log starts at %d", st.BaseIndex, st.First))
	}
	record := func(i uint64) error {
		var buf bytes.Buffer
		if err := f.Snapshot(&buf); err != nil {
			return err
		}
		st.Digests[i] = digest(buf.Bytes())
		return nil
	}
	if targets[st.BaseIndex] && base != nil {
		st.Terms[st.BaseIndex] = baseTerm // the log may not hold that entry
		if err := record(st.BaseIndex); err != nil {
			return fail(err)
		}
	}
	for i := st.BaseIndex + 1; i <= st.Last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			return fail(fmt.Errorf("log %d: %w", i, err))
		}
		if i == st.Last {
			st.LastTerm = l.Term
		}
		if l.Type == raft.LogCommand {
			es, err := cluster.DecodeEntries(l.Data)
			if err != nil {
				return fail(fmt.Errorf("log %d: %w", i, err))
			}
			for _, e := range es {
				f.Apply(e.Time, e.Cmd)
			}
		}
		if targets[i] {
			st.Terms[i] = l.Term
			if err := record(i); err != nil {
				return fail(err)
			}
		}
	}
	return st
}

// copyLogStore copies the log store of a data directory (raftlog's log/,
// raft-wal's wal/ or raft-boltdb's raft.db, whichever it has) to dst.
func copyLogStore(dataDir, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	src := cluster.LogStorePath(dataDir)
	to := filepath.Join(dst, filepath.Base(src))
	if cluster.LogStoreKind(dataDir) == cluster.StoreBolt {
		return copyFile(src, to)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(to, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

// CheckConverge compares what the nodes left: each snapshot a node took
// (its in-memory state) must equal every node's replay of its log to the
// same index, and all nodes' replays must agree at the last index they all
// have. It returns the violations and the common index compared.
func CheckConverge(nodes []NodeState) ([]Violation, uint64) {
	var out []Violation
	var common uint64
	first := true
	for _, n := range nodes {
		if n.Err != "" {
			out = append(out, Violation{Check: "converge", Detail: fmt.Sprintf("%s: %s", n.ID, n.Err)})
			continue
		}
		if first || n.Last < common {
			common = n.Last
		}
		first = false
	}
	for _, n := range nodes {
		for _, s := range n.Snapshots {
			for _, m := range nodes {
				d, ok := m.Digests[s.Index]
				if ok && d != s.Digest {
					out = append(out, Violation{Check: "converge", Detail: fmt.Sprintf(
						"%s's snapshot at index %d (term %d) is %s, but replaying %s's log to that index gives %s",
						n.ID, s.Index, s.Term, s.Digest, m.ID, d)})
				}
			}
		}
	}
	var ids []string
	digs := map[string][]string{}
	for _, n := range nodes {
		if n.Err != "" {
			continue
		}
		d, ok := n.Digests[common]
		if !ok {
			out = append(out, Violation{Check: "converge", Detail: fmt.Sprintf("%s: cannot replay to the common index %d (its snapshot is at %d)", n.ID, common, n.BaseIndex)})
			continue
		}
		key := fmt.Sprintf("%s@term%d", d, n.Terms[common])
		if _, ok := digs[key]; !ok {
			ids = append(ids, key)
		}
		digs[key] = append(digs[key], n.ID)
	}
	if len(digs) > 1 {
		sort.Strings(ids)
		detail := fmt.Sprintf("nodes disagree at index %d:", common)
		for _, k := range ids {
			detail += fmt.Sprintf(" %v=%s", digs[k], k)
		}
		out = append(out, Violation{Check: "converge", Detail: detail})
	}
	return out, common
}

// Targets is the set of indexes to record digests at: every node's
// snapshot indexes and the last index all nodes have.
func Targets(snaps map[string][]SnapState, last map[string]uint64) map[uint64]bool {
	t := map[uint64]bool{}
	var common uint64
	first := true
	for id, ss := range snaps {
		for _, s := range ss {
			t[s.Index] = true
		}
		if l := last[id]; first || l < common {
			common = l
		}
		first = false
	}
	t[common] = true
	return t
}
