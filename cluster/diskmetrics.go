package cluster

// DiskMetrics is the data directory's disk as the disk watch last read it
// (diskspace.go, at most diskCheckEvery old), for the metrics endpoint.
type DiskMetrics struct {
	// Status is 0 with room (ok), 1 below --min-free-disk (low), 2 full:
	// an append failed for want of space and no segment fits yet, or the
	// log runs on its reserve segment. A node whose status is not 0
	// refuses the writes it would propose; a follower's refuses nothing
	// itself, but it is one voter fewer with room (diskquorum.go).
	Status int
	// Free is the bytes free for the node at the last check; -1 if
	// statfs failed.
	Free    int64
	MinFree int64 // --min-free-disk
	// Refused counts the writes this node refused for want of space
	// (its own disk, or too few voters with room), as INFO persistence's
	// disk_refused_writes_total.
	Refused int64
}

// diskStatusCodes are DiskMetrics.Status's values by diskWatch.status.
var diskStatusCodes = map[string]int{"ok": 0, "low": 1, "full": 2}

// DiskMetrics returns the data directory's disk figures; false for a
// node without a data directory (its log in memory).
func (n *Node) DiskMetrics() (DiskMetrics, bool) {
	w := n.disk
	if w == nil {
		return DiskMetrics{}, false
	}
	return DiskMetrics{
		Status:  diskStatusCodes[w.status()],
		Free:    w.free.Load(),
		MinFree: w.minFree,
		Refused: w.refused.Load(),
	}, true
}
