package httpapi

import "github.com/prometheus/client_golang/prometheus"

// lockCollectors returns the collectors of the lock-level series
// (deadbolt_locks_held, deadbolt_lock_acquisitions_total, ...), registered
// with the endpoint's registry next to the node's own (httpapi.go, Start).
//
// Those series are being built in another branch, which recognises locks
// in the state machine: return its collectors here (reading counters at
// scrape time, as collector.go does, so that the lock path stays as fast)
// and document them in docs/METRICS.md's "Locks" section.
func lockCollectors(src Source) []prometheus.Collector {
	_ = src
	return nil
}
