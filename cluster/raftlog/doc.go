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
//	00000000000000000001.seg     segments, named by the index of their first entry
//	00000000000000004711.seg
//	spare.tmp                    the next segment, zero-filled in the background, paced
//	reserve                      one more zero-filled segment, kept for a full disk (reserve.go)
//	reserve.tmp                  the reserve being made
//	00000000000000000001.3.dead  a segment a compaction dropped, being removed
//	meta                         the first index the log still holds (written on compaction)
//	stable                       raft's stable store: current term, last vote, synced mark (two fixed slots)
//
// Segments are files of a fixed size (16 MiB) written full of zeros before
// they are used, so that an append rewrites data blocks and changes no
// metadata: its fdatasync then flushes only the data (on the benchmark
// machine 165 µs instead of 257 µs, with a third less CPU). The spare is
// written a chunk at a time, each sent to the disk before a short pause,
// so that no append's sync waits behind a whole segment of zeros
// (zeroFile). An append that does not fit starts the next segment; one
// larger than a segment grows its file. A segment starts with a 16-byte
// header (magic, version, the base index), written with its first records,
// followed by records, one per entry, and zeros:
//
//	u32 length of the payload, little-endian
//	u32 CRC-32C of the payload
//	payload: u64 index, u64 term, u64 batch (the first index the same
//	         append wrote), u8 type, i64 appended-at (Unix ns),
//	         uvarint length + data, uvarint length + extensions
//
// Entries are contiguous: a segment's records have consecutive indexes from
// its base, and each segment starts where the one before ended. The store is
// monotonic (raft.MonotonicLogStore): raft empties it before storing entries
// after an installed snapshot, so it never has to hold a gap.
//
// # Crashes
//
// An append writes the records after the last one and then fdatasyncs;
// raft is told the entries are stored only after that, except while the
// node leads: then the sync runs after the append returns (deferred.go),
// and the node holds back what commit leads to until it is done. Either
// way an append starts only once the one before is synced. On Linux both are
// raw system calls that keep the goroutine's P (appendio_linux.go): the
// scheduler's bookkeeping for a blocking call cost two thread switches and
// woke the runtime's monitor thread on every append. Records end at a
// zero length. On opening, every segment is read and checked: a record that
// is cut short or fails its CRC ends the log if it is in the last segment
// (the tail of an append that never completed, so never acknowledged) and
// is overwritten with zeros, as is anything else after it, unless a whole
// record of a later append follows it (its batch is above the damaged
// index): appends wait for the one before to be synced, so the damaged
// record was acknowledged, and opening fails instead. (Damage to the last
// acknowledged records with nothing of a later append after them cannot be
// told from a torn tail, except by the synced mark, below.) In any other
// segment it is corruption and opening fails, as is anything but zeros
// after a segment's last record. So only zeros ever follow the last record,
// and nothing left of an old write can read as a record again. A last
// segment whose header is still zeros (the crash came before its first
// append was synced) held nothing acknowledged and is dropped; a header
// that is neither zeros nor valid is corruption.
//
// Deleting a suffix (a follower dropping a deposed leader's entries) removes
// whole segments from the last one backwards, then zeroes the deleted
// records of the segment that held the first of them and fsyncs it, all before raft stores the
// replacement entries, so a crash at any point leaves a prefix of the old
// log and never old entries after new ones. Deleting a prefix (compaction)
// first records the new first index in meta (written to a temporary file,
// fsynced and renamed), then renames the segments that hold only deleted
// entries to NAME.N.dead and, once appends may go on, removes them
// (opening removes any a crash left, and drops segments below the first
// index); entries below the first index that remain in a partly deleted
// segment are never served.
//
// # A full disk
//
// hashicorp/raft panics when its stable store fails to save a new term, so
// the stable file never needs new space: it has a fixed size, two slots of
// 4 KiB made when the store is first opened (a file of an earlier build,
// the whole state after a CRC, is rewritten so then; DowngradeStable
// writes it back for such a build, downgrade.go), and each set
// overwrites the older slot in place and fdatasyncs it, then the other
// (two syncs per set: a term or a vote, and the synced mark once a
// second). Opening takes the valid slot with the higher sequence number;
// a slot torn by a crash leaves the other, and a bit flipped in one slot
// after a set leaves its copy, never an older term or vote; opening then
// rewrites the damaged slot from the good one and warns through
// Options.Logger, naming the file (stablerepair.go). Raft saves a
// vote in two sets (LastVoteTerm, then LastVoteCand): a set of a new
// LastVoteTerm drops LastVoteCand in the same slot, so a failure or crash
// between the two leaves no vote in the new term, never the previous
// term's candidate under it (stable.go). Appends overwrite a segment's zeros and need no space
// either, until a new segment is due: if the spare could not be made
// (ENOSPC), the append tries once more at once, then takes the reserve as
// its segment (ReserveInUse), then fails with the file system's error
// (IsNoSpace), having stored nothing. A spare that failed is not made
// again in the background (that would take the last free blocks from a
// snapshot, again and again) but by the next append that needs it; the
// reserve is made after a spare, or by RefillReserve once space returns.
// The meta file is still replaced through a temporary file: a compaction
// on a full disk fails (raft logs it and tries at the next snapshot).
//
// # Damage and failing disks
//
// A log that lost its last entries reads, to raft, as one that never had
// them, and a node that votes on it may elect a leader without entries it
// acknowledged. So the stable store also holds the synced mark, the highest
// index the log has held synced (synced.go): raised about once a second
// while appends go on and at Close, lowered durably before a suffix
// deletion or an emptied log started lower gives entries up; it records
// the term of its entry too. Open fails with ErrLost when the log ends
// below the mark (a segment truncated or removed) or a record at or below
// it is damaged in the last segment (not a torn tail: it was synced),
// unless Options.RepairLost: then the log is cut at the damage and Lost
// says what was lost, for the caller to keep the node out of elections
// until it has caught up past SyncedMark (repair.go). It fails with
// ErrLost, whatever the options, when the stable file is missing or empty
// while the log holds anything (the term and vote are gone); before
// writing anything. A file of ours with a higher format version fails
// with a NewerFormatError. A write (other than for want of space) or sync
// that fails makes the store fail for good (failure.go): no append is
// tried again as if the data might still reach the disk, every call
// returns the first error (ErrFailed, naming the file), Options.OnFailure
// is told once, and only reopening, which reads and checks every record,
// brings the store back. A failed write or sync of the stable file (a
// term, a vote, the synced mark) fails the store the same way, naming that
// file, and so does any set once the store has failed: raft, which panics
// when it cannot save its term, must be stopped by the caller before that
// error reaches it (failure.go; cluster/stablefail.go).
package raftlog
