package cluster

import (
	"fmt"
	"math/bits"

	"github.com/hashicorp/raft"
)

// Big values. A write travels whole in one log entry, and every node holds
// it several times on its way: the leader encodes it, raft's transport
// encodes it for each follower and decodes it there, the log store writes
// it, the log cache keeps it, the state machine stores the value. The
// decoder of hashicorp/raft's transport (go-msgpack, whose handle raft
// creates without MaxInitLen) reads a byte string in 256 KiB steps and
// copies what it has read at each step, so decoding an entry of N bytes
// allocates about N²/512 KiB: 2.5 MB for 1 MiB, 34 MB for 4 MiB, 2 GB for
// 32 MiB. And with Go's collector at --gc-percent 400, a collection that
// finds those copies live lets the heap grow to five times them. A 150 MB
// SET drove followers past 4 GB.
//
// So the size of an entry is bounded (Config.MaxEntryBytes,
// --max-entry-bytes, DefaultMaxEntryBytes): a write whose entry would be
// larger is refused before it is proposed, with an error that names the
// limit; the follower a client wrote to refuses it before forwarding it,
// and the leader refuses it before proposing it. Bounded too: the bytes of
// entries one AppendEntries carries (maxAppendBytes, or one entry alone)
// and the bytes the log cache keeps (logCacheBytes).

// DefaultMaxEntryBytes is the largest log entry a write may take unless
// Config.MaxEntryBytes says otherwise: 1 MiB, where a node's memory stays
// at what it is without big values (docs/OPERATIONS.md, "Big values").
// etcd refuses requests over 1.5 MiB by default for the same reason;
// Redis takes bulks up to its proto-max-bulk-len, 512 MB.
const DefaultMaxEntryBytes = 1 << 20

// maxAppendBytes bounds the entries' data one AppendEntries carries: the
// entries up to this many bytes, or the first one alone if it is larger.
// hashicorp/raft bounds an AppendEntries by a count of entries only
// (MaxAppendEntries).
const maxAppendBytes = 1 << 20

// logCacheBytes bounds the bytes of entries' data the log cache keeps; an
// entry larger than that is not cached (logcache.go).
const logCacheBytes = 2 << 20

// entryTooLarge is the error of a write whose entry would take size bytes,
// more than limit.
func entryTooLarge(size, limit int64) error {
	return replyError{fmt.Sprintf("ERR write refused: its log entry would take %d bytes, more than max-entry-bytes %d; store big values elsewhere, or split them", size, limit)}
}

// MaxEntryBytes is the largest log entry this node proposes or forwards (0:
// no limit of its own).
func (n *Node) MaxEntryBytes() int64 { return max(n.cfg.MaxEntryBytes, 0) }

// checkEntrySize refuses an entry of size bytes over the node's limit.
func (n *Node) checkEntrySize(size int) error {
	if limit := n.cfg.MaxEntryBytes; limit > 0 && int64(size) > limit {
		return entryTooLarge(int64(size), limit)
	}
	return nil
}

// EntrySize is the length of cmd's envelope (AppendEntry) with the
// smallest time stamp: what a follower checks before forwarding, at most
// the length of the envelope the leader will write (a stamp takes a few
// more bytes), so that a follower never refuses what the leader would
// take.
func EntrySize(cmd Entry) int {
	n := 1 + varintLen(cmd.Time) + uvarintLen(uint64(cmd.Cmd.DB)) + argsSize(cmd.Cmd.Args)
	n += uvarintLen(uint64(len(cmd.Cmd.Tx)))
	for _, args := range cmd.Cmd.Tx {
		n += argsSize(args)
	}
	n += uvarintLen(uint64(len(cmd.Cmd.Watch)))
	for _, w := range cmd.Cmd.Watch {
		n += uvarintLen(uint64(w.DB)) + bytesSize(len(w.Key)) + uvarintLen(w.Version)
	}
	if cmd.Cmd.FoldFunctionNames {
		n++ // version 4's flags
	}
	if cmd.Cmd.User != "" {
		n += bytesSize(len(cmd.Cmd.User))
	}
	return n
}

func uvarintLen(x uint64) int { return max(1, (bits.Len64(x)+6)/7) }

func varintLen(x int64) int {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	return uvarintLen(ux)
}

func bytesSize(n int) int { return uvarintLen(uint64(n)) + n }

func argsSize(args [][]byte) int {
	n := uvarintLen(uint64(len(args)))
	for _, a := range args {
		n += bytesSize(len(a))
	}
	return n
}

// trimAppend cuts req's entries to those within maxAppendBytes (at least
// one), in place: raft reads req.Entries again once the follower has
// answered, to advance what it has sent and what the follower holds, so
// the rest go in the next AppendEntries. A request cut this way is like
// one cut by MaxAppendEntries; capCommit then keeps its commit index to
// its last entry (commitcap.go).
func trimAppend(req *raft.AppendEntriesRequest, budget int) {
	size := 0
	for i, l := range req.Entries {
		size += len(l.Data) + len(l.Extensions)
		if i > 0 && size > budget {
			clear(req.Entries[i:])
			req.Entries = req.Entries[:i]
			return
		}
	}
}
