package httpapi

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/lathist"
)

// Every series is described in docs/METRICS.md; keep the two together.

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("deadbolt_"+name, help, labels, nil)
}

var (
	// Commands (server: one accounting hook per command, cmdstats.go).
	dCommands       = desc("commands_total", "Commands by name and outcome: ok, error (ran and answered an error), rejected (refused before running).", "command", "outcome")
	dCommandSeconds = desc("command_duration_seconds", "Time from dispatch to reply of the commands that ran.", "command")
	dErrors         = desc("error_replies_total", "Error replies by their first word (INFO errorstats).", "kind")

	// Connections and pub/sub.
	dConns         = desc("connections", "Client connections open now.")
	dConnsAccepted = desc("connections_accepted_total", "Client connections accepted.")
	dConnsRejected = desc("connections_rejected_total", "Client connections refused (maxclients, protected mode).")
	dChannels      = desc("pubsub_channels", "Channels with a subscriber on this node.")
	dPatterns      = desc("pubsub_patterns", "Patterns with a subscriber on this node.")
	dShardChannels = desc("pubsub_shard_channels", "Shard channels with a subscriber on this node.")
	dDelivered     = desc("pubsub_messages_delivered_total", "Messages queued to this node's subscribers.")

	// State machine.
	dKeys      = desc("keys", "Keys in every database, expired ones not yet reaped included.")
	dDeadlines = desc("keys_with_deadline", "Keys with a deadline (TTL).")
	dScripts   = desc("scripts_cached", "Cached Lua script bodies (SCRIPT LOAD, EVAL).")
	dFunctions = desc("functions", "Functions loaded (FUNCTION LOAD).")
	dLibraries = desc("function_libraries", "Function libraries loaded.")
	dLogical   = desc("logical_memory_bytes", "Key names and value bytes as clients wrote them, without the structures holding them.")
	dMaxUsed   = desc("maxmemory_used_bytes", "The size maxmemory limits: MEMORY USAGE's estimate summed over the keys (INFO memory used_memory_logical); counted, and present, only while maxmemory is set.")
	dMaxmemory = desc("maxmemory_bytes", "The maxmemory limit; 0 for none.")

	// Raft (cluster members only).
	dRaftState       = desc("raft_state", "1 for the Raft state this node is in, 0 for the others.", "state")
	dRaftTerm        = desc("raft_term", "The Raft term.")
	dRaftLast        = desc("raft_last_log_index", "Index of the last entry in this node's log.")
	dRaftCommit      = desc("raft_commit_index", "Raft's commit index as this node knows it.")
	dRaftApplied     = desc("raft_applied_index", "Raft's last applied index (no-op and configuration entries included).")
	dRaftFSMApplied  = desc("raft_fsm_applied_index", "Index of the last command entry the state machine applied.")
	dRaftLeaderKnown = desc("raft_leader_known", "1 if this node knows a leader.")
	dRaftContact     = desc("raft_last_contact_seconds", "On a follower: time since it last heard from the leader (absent if never).")
	dRaftFollower    = desc("raft_follower_last_contact_seconds", "On the leader: time since each follower last answered an AppendEntries, heartbeats included (absent if never).", "follower")
	dRaftChanges     = desc("raft_leader_changes_total", "Times this node learned of a leader other than the last one it knew.")
	dRaftGone        = desc("raft_leader_gone_elections_total", "Elections this node stood for at once because its silent leader's Raft address refused connections.")
	dRaftBatch       = desc("raft_apply_batch_entries", "Log entries per batch applied to the state machine.")
	dSnapTaken       = desc("raft_snapshots_taken_total", "Snapshots this node took.")
	dSnapInstalled   = desc("raft_snapshots_installed_total", "Snapshots this node restored (sent by the leader, or at start).")
	dSnapTakeSec     = desc("raft_snapshot_take_duration_seconds", "Time to capture and write a snapshot.")
	dSnapInstallSec  = desc("raft_snapshot_install_duration_seconds", "Time to restore a snapshot.")
	dSnapBytes       = desc("raft_snapshot_last_size_bytes", "Size of the last snapshot taken or installed.", "op")
	dLogWrite        = desc("raft_log_append_duration_seconds", "Time to write a batch of entries to the log (without its sync).")
	dLogSync         = desc("raft_log_sync_duration_seconds", "Time of the log's fdatasync of appended entries.")
	dLogBatch        = desc("raft_log_append_entries", "Entries per append to the log.")
	dLogBytes        = desc("raft_log_disk_bytes", "Size of the log's segment files on disk, preallocated space included.")
	dLogSegments     = desc("raft_log_segments", "Segment files of the log.")

	// The data directory's disk (--data-dir only; cluster/diskmetrics.go).
	dDiskStatus  = desc("disk_status", "The data directory's disk: 0 ok, 1 short of space (below --min-free-disk), 2 full (an append found no space).")
	dDiskFree    = desc("disk_free_bytes", "Bytes free on the data directory's file system at the last check (absent if it could not be read).")
	dDiskMinFree = desc("disk_min_free_bytes", "--min-free-disk: below it the node refuses writes.")
	dDiskRefused = desc("disk_refused_writes_total", "Client writes this node refused with MISCONF for want of space (its own disk, or too few voters with room).")
)

// alertedErrorKinds are error kinds an alert or a dashboard panel counts
// with increase() or rate(): each is exported from the start, at 0, since
// a series that first appears at 1 has no earlier sample and Prometheus
// sees no increase.
var alertedErrorKinds = []string{"MISCONF", "OOM"}

var raftStates = []string{"Follower", "Candidate", "Leader", "Shutdown"}

// Histogram bounds: every other power of two, from 1 µs to 17 s, in
// nanoseconds; and 2^k-1 entries. Both are lathist bucket edges (exact).
var (
	nsBounds    = powers(10, 34, 2, 0)
	countBounds = powers(0, 12, 1, 1)
	nsLe        = scale(nsBounds, 1e-9)
	countLe     = scale(countBounds, 1)
)

func powers(from, to, step int, minus uint64) []uint64 {
	var out []uint64
	for k := from; k <= to; k += step {
		out = append(out, uint64(1)<<k-minus)
	}
	return out
}

func scale(b []uint64, f float64) []float64 {
	out := make([]float64, len(b))
	for i, v := range b {
		out[i] = float64(v) * f
	}
	return out
}

// histogram turns a lathist snapshot into a Prometheus histogram; scale
// converts its unit (ns to seconds: 1e-9).
func histogram(d *prometheus.Desc, s *lathist.Snap, bounds []uint64, le []float64, scale float64, labels ...string) prometheus.Metric {
	cum := s.Cumulative(bounds)
	buckets := make(map[float64]uint64, len(le))
	for i, b := range le {
		buckets[b] = cum[i]
	}
	m, err := prometheus.NewConstHistogram(d, s.Count, float64(s.Sum)*scale, buckets, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// constMetric is a sample; a label value that is not UTF-8 (a node id
// could be anything) has those bytes replaced rather than panicking in
// the scrape.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels []string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		for i, l := range labels {
			labels[i] = strings.ToValidUTF8(l, "\uFFFD")
		}
		if m, err = prometheus.NewConstMetric(d, t, v, labels...); err != nil {
			return prometheus.NewInvalidMetric(d, err)
		}
	}
	return m
}

// collector reads the node's counters at scrape time.
type collector struct {
	src Source

	// The state machine's counts need its lock and a visit of every key
	// (25 ms for a million small keys): taken at most once a second, and never
	// more often than keeps the lock 1 % of the time, however many scrapes
	// ask.
	sumMu   sync.Mutex
	sumAt   time.Time
	sumTook time.Duration
	summary fsm.Summary
}

func newCollector(src Source) *collector { return &collector{src: src} }

const summaryMaxAge = time.Second

func (c *collector) fsmSummary() fsm.Summary {
	c.sumMu.Lock()
	defer c.sumMu.Unlock()
	if time.Since(c.sumAt) < max(summaryMaxAge, 100*c.sumTook) {
		return c.summary
	}
	start := time.Now()
	switch {
	case c.src.Local != nil:
		c.summary = c.src.Local.Summary()
	case c.src.Raft != nil:
		c.summary = c.src.Raft.Summary()
	}
	c.sumAt = time.Now()
	c.sumTook = c.sumAt.Sub(start)
	return c.summary
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dCommands, dCommandSeconds, dErrors, dConns, dConnsAccepted, dConnsRejected,
		dChannels, dPatterns, dShardChannels, dDelivered, dKeys, dDeadlines, dScripts, dFunctions, dLibraries, dLogical, dMaxUsed, dMaxmemory,
		dRaftState, dRaftTerm, dRaftLast, dRaftCommit, dRaftApplied, dRaftFSMApplied, dRaftLeaderKnown, dRaftContact,
		dRaftFollower, dRaftChanges, dRaftGone, dRaftBatch, dSnapTaken, dSnapInstalled, dSnapTakeSec, dSnapInstallSec, dSnapBytes,
		dLogWrite, dLogSync, dLogBatch, dLogBytes, dLogSegments, dDiskStatus, dDiskFree, dDiskMinFree, dDiskRefused} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	srv := c.src.Server
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.CounterValue, v, labels)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.GaugeValue, v, labels)
	}

	for _, st := range srv.CommandStats() {
		counter(dCommands, float64(st.Calls-st.Failed), st.Name, "ok")
		counter(dCommands, float64(st.Failed), st.Name, "error")
		counter(dCommands, float64(st.Rejected), st.Name, "rejected")
		ch <- histogram(dCommandSeconds, st.Latency, nsBounds, nsLe, 1e-9, st.Name)
	}
	// Error kinds come from replies, which scripts make up: they are at
	// most 128, and bytes that are not UTF-8 (which a label cannot hold)
	// are replaced, adding up kinds that then read the same.
	kinds := make(map[string]int64)
	for kind, n := range srv.ErrorStats() {
		kinds[strings.ToValidUTF8(kind, "\uFFFD")] += n
	}
	for _, kind := range alertedErrorKinds {
		if _, ok := kinds[kind]; !ok {
			kinds[kind] = 0
		}
	}
	for kind, n := range kinds {
		counter(dErrors, float64(n), kind)
	}

	cs := srv.ConnStats()
	gauge(dConns, float64(cs.Current))
	counter(dConnsAccepted, float64(cs.Accepted))
	counter(dConnsRejected, float64(cs.Rejected))
	ps := srv.PubSubStats()
	gauge(dChannels, float64(ps.Channels))
	gauge(dPatterns, float64(ps.Patterns))
	gauge(dShardChannels, float64(ps.ShardChannels))
	counter(dDelivered, float64(ps.Delivered))

	if c.src.Raft != nil {
		c.collectRaft(ch, counter, gauge)
	}
	sum := c.fsmSummary()
	gauge(dKeys, float64(sum.Keys))
	gauge(dDeadlines, float64(sum.Expires))
	gauge(dScripts, float64(sum.Scripts))
	gauge(dFunctions, float64(sum.Functions))
	gauge(dLibraries, float64(sum.Libraries))
	gauge(dLogical, float64(sum.Bytes))
	if sum.Maxmemory > 0 {
		// The size is counted only while there is a limit
		// (fsm/DESIGN.md, "maxmemory"): without one the series is
		// absent rather than a 0 that reads as "empty".
		gauge(dMaxUsed, float64(sum.MaxmemoryUsed))
	}
	gauge(dMaxmemory, float64(sum.Maxmemory))
}

type emit func(d *prometheus.Desc, v float64, labels ...string)

func (c *collector) collectRaft(ch chan<- prometheus.Metric, counter, gauge emit) {
	m := c.src.Raft.RaftMetrics()
	for _, s := range raftStates {
		v := 0.0
		if s == m.State {
			v = 1
		}
		gauge(dRaftState, v, s)
	}
	gauge(dRaftTerm, float64(m.Term))
	gauge(dRaftLast, float64(m.LastIndex))
	gauge(dRaftCommit, float64(m.CommitIndex))
	gauge(dRaftApplied, float64(m.RaftApplied))
	gauge(dRaftFSMApplied, float64(m.Applied))
	known := 0.0
	if m.LeaderID != "" {
		known = 1
	}
	gauge(dRaftLeaderKnown, known)
	if m.LastContact >= 0 && m.State != "Leader" {
		gauge(dRaftContact, m.LastContact.Seconds())
	}
	for id, d := range m.Followers {
		if d >= 0 {
			gauge(dRaftFollower, d.Seconds(), id)
		}
	}
	counter(dRaftChanges, float64(m.LeaderChanges))
	counter(dRaftGone, float64(m.LeaderGone))
	ch <- histogram(dRaftBatch, m.ApplyBatch, countBounds, countLe, 1)
	counter(dSnapTaken, float64(m.SnapshotsTaken))
	counter(dSnapInstalled, float64(m.SnapshotsInstalled))
	ch <- histogram(dSnapTakeSec, m.SnapshotTakeNs, nsBounds, nsLe, 1e-9)
	ch <- histogram(dSnapInstallSec, m.SnapshotInstallNs, nsBounds, nsLe, 1e-9)
	gauge(dSnapBytes, float64(m.LastSnapshotBytes), "take")
	gauge(dSnapBytes, float64(m.LastInstallBytes), "install")
	if l := m.Log; l != nil {
		ch <- histogram(dLogWrite, l.Write, nsBounds, nsLe, 1e-9)
		ch <- histogram(dLogSync, l.Sync, nsBounds, nsLe, 1e-9)
		ch <- histogram(dLogBatch, l.Batch, countBounds, countLe, 1)
		gauge(dLogBytes, float64(l.DiskBytes))
		gauge(dLogSegments, float64(l.Segments))
	}
	if d, ok := c.src.Raft.DiskMetrics(); ok {
		gauge(dDiskStatus, float64(d.Status))
		if d.Free >= 0 {
			gauge(dDiskFree, float64(d.Free))
		}
		gauge(dDiskMinFree, float64(d.MinFree))
		counter(dDiskRefused, float64(d.Refused))
	}
}

var _ prometheus.Collector = (*collector)(nil)
