package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// logCache keeps the newest entries of the log in memory, so that the
// leader replicates them without reading them back from disk. Unlike
// raft.LogCache, which keeps a number of entries whatever their size (512
// entries of 100 MB each would be 50 GB), it keeps at most maxCount
// entries and maxBytes of their data, and an entry larger than maxBytes
// is not kept at all (bigentry.go). A store's error comes back as the
// store returned it (raft.LogCache turns it into text).
type logCache struct {
	raft.LogStore
	maxCount, maxBytes int

	mu    sync.RWMutex
	logs  []*raft.Log // consecutive indexes, oldest first
	bytes int         // data and extensions of logs
}

func newLogCache(store raft.LogStore, maxCount, maxBytes int) *logCache {
	return &logCache{LogStore: store, maxCount: maxCount, maxBytes: maxBytes}
}

func logBytes(l *raft.Log) int { return len(l.Data) + len(l.Extensions) }

// IsMonotonic passes on the store's answer (raft.MonotonicLogStore).
func (c *logCache) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (c *logCache) GetLog(index uint64, log *raft.Log) error {
	c.mu.RLock()
	if n := len(c.logs); n > 0 && index >= c.logs[0].Index && index-c.logs[0].Index < uint64(n) {
		*log = *c.logs[index-c.logs[0].Index]
		c.mu.RUnlock()
		return nil
	}
	c.mu.RUnlock()
	return c.LogStore.GetLog(index, log)
}

func (c *logCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		if n := len(c.logs); n > 0 && l.Index != c.logs[n-1].Index+1 {
			c.resetLocked()
		}
		size := logBytes(l)
		if size > c.maxBytes {
			c.resetLocked() // the cache holds consecutive entries only
			continue
		}
		c.logs = append(c.logs, l)
		c.bytes += size
		for len(c.logs) > c.maxCount || c.bytes > c.maxBytes {
			c.bytes -= logBytes(c.logs[0])
			c.logs[0] = nil
			c.logs = c.logs[1:]
		}
	}
	return nil
}

func (c *logCache) DeleteRange(lo, hi uint64) error {
	c.mu.Lock()
	c.resetLocked()
	c.mu.Unlock()
	return c.LogStore.DeleteRange(lo, hi)
}

func (c *logCache) resetLocked() {
	clear(c.logs)
	c.logs = c.logs[:0]
	c.bytes = 0
}
