// Package raftlog is the log and stable store of a deadbolt node with a data
// directory: an append-only log in segment files, written with one write and
// one fdatasync per append, for github.com/hashicorp/raft.
//
// raft-boltdb, the store it replaces for new data directories, writes
// several B+tree pages and fsyncs twice per append; on the machine the
// benchmarks run on one fdatasync costs about 0.35 ms, and the leader's
// append and a follower's append lie one after the other on the path of
// every commit, so the second fsync of each was a large share of a lock's
// latency. raft-wal v0.4.0 has the same one-fsync design but cannot reopen
// a log whose suffix raft truncated (see ../DESIGN.md).
//
// # Files
//
// A store owns one directory:
//
//	00000000000000000001.seg   segments, named by the index of their first entry
//	00000000000000004711.seg
//	meta                       the first index the log still holds (written on compaction)
//	stable                     raft's stable store: current term, last vote
//
// A segment starts with a 16-byte header (magic, version, the base index)
// followed by records, one per entry:
//
//	u32 length of the payload, little-endian
//	u32 CRC-32C of the payload
//	payload: u64 index, u64 term, u8 type, i64 appended-at (Unix ns),
//	         uvarint length + data, uvarint length + extensions
//
// Entries are contiguous: a segment's records have consecutive indexes from
// its base, and each segment starts where the one before ended. The store is
// monotonic (raft.MonotonicLogStore): raft empties it before storing entries
// after an installed snapshot, so it never has to hold a gap.
//
// # Crashes
//
// An append writes the records at the end of the last segment and then
// fdatasyncs; raft is told the entries are stored only after that. On
// opening, every segment is read and checked: a record that is cut short or
// fails its CRC ends the log if it is in the last segment (the tail of an
// append that never completed, so never acknowledged) and is truncated away;
// in any other segment it is corruption and opening fails.
//
// Deleting a suffix (a follower dropping a deposed leader's entries) removes
// whole segments from the last one backwards, then truncates the segment
// that held the first deleted entry and fsyncs it, all before raft stores the
// replacement entries, so a crash at any point leaves a prefix of the old
// log and never old entries after new ones. Deleting a prefix (compaction)
// first records the new first index in meta (written to a temporary file,
// fsynced and renamed), then removes the segments that hold only deleted
// entries; entries below the first index that remain in a partly deleted
// segment are never served.
package raftlog
