package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/deadbolt/deadbolt/fsm"
)

// The lock series (docs/METRICS.md, "Locks"), by kind: string, reentrant,
// rwlock, semaphore (fsm.LockKind). The counters are the node's own
// observations as it applied the log (fsm.LockKindStats), read at scrape
// time; the held gauge comes from the state machine's summary, which the
// collector takes at most once a second (collector.go).
var (
	dLocksHeld     = desc("locks_held", "Lock-shaped keys present and not past their lease (semaphores: semaphores that exist).", "kind")
	dLockAcquired  = desc("lock_acquisitions_total", "Locks taken when free (semaphores: permits taken).", "kind")
	dLockReentered = desc("lock_reentries_total", "Holds added to a held lock by its owner, or a second reader.", "kind")
	dLockContended = desc("lock_contended_total", "Attempts that found the lock held.", "kind")
	dLockReleased  = desc("lock_releases_total", "Locks deleted before their lease ran out (semaphores: permits given back).", "kind")
	dLockExpired   = desc("lock_leases_expired_total", "Locks whose lease ran out while held.", "kind")
	dLockHold      = desc("lock_hold_duration_seconds", "Time from a lock's acquisition to its release or the end of its lease.", "kind")
)

// holdLe are the hold histogram's bounds in seconds.
var holdLe = func() []float64 {
	out := make([]float64, len(fsm.HoldBucketsMs))
	for i, ms := range fsm.HoldBucketsMs {
		out[i] = float64(ms) / 1000
	}
	return out
}()

// lockCollector exports the lock series.
type lockCollector struct {
	src     Source
	summary func() fsm.Summary // the node collector's rate-limited count
}

// lockCollectors returns the collectors of the lock-level series,
// registered with the endpoint's registry next to the node's own
// (httpapi.go, Start). summary is the rate-limited state machine count
// the node's collector also uses, so the held gauge costs no scan of its
// own.
func lockCollectors(src Source, summary func() fsm.Summary) []prometheus.Collector {
	if src.Raft == nil && src.Local == nil {
		return nil
	}
	return []prometheus.Collector{&lockCollector{src: src, summary: summary}}
}

func (c *lockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dLocksHeld, dLockAcquired, dLockReentered, dLockContended, dLockReleased, dLockExpired, dLockHold} {
		ch <- d
	}
}

func (c *lockCollector) lockStats() []fsm.LockKindStats {
	if c.src.Raft != nil {
		return c.src.Raft.LockStats()
	}
	return c.src.Local.LockStats()
}

func (c *lockCollector) Collect(ch chan<- prometheus.Metric) {
	held := c.summary().LocksHeld
	for _, st := range c.lockStats() {
		kind := st.Kind.String()
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- constMetric(d, prometheus.CounterValue, float64(v), []string{kind})
		}
		if int(st.Kind) < len(held) {
			ch <- constMetric(dLocksHeld, prometheus.GaugeValue, float64(held[st.Kind]), []string{kind})
		}
		counter(dLockAcquired, st.Acquired)
		counter(dLockReentered, st.Reentered)
		counter(dLockContended, st.Contended)
		counter(dLockReleased, st.Released)
		counter(dLockExpired, st.Expired)
		buckets := make(map[float64]uint64, len(holdLe))
		for i, le := range holdLe {
			buckets[le] = st.HoldBuckets[i]
		}
		m, err := prometheus.NewConstHistogram(dLockHold, st.HoldCount, float64(st.HoldSumMs)/1000, buckets, kind)
		if err != nil {
			m = prometheus.NewInvalidMetric(dLockHold, err)
		}
		ch <- m
	}
}

var _ prometheus.Collector = (*lockCollector)(nil)
