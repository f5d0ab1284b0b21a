package server

import (
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Every command that goes in the SLOWLOG is also a warning in the node's
// log ("slow command": the command's name, its time, the client, and the
// SLOWLOG id that holds its arguments), so that a log collector sees slow
// commands without polling SLOWLOG GET. The arguments stay out of the log:
// they may hold keys and values an operator's log should not. At most one
// record a second is written; the next one says how many were left out
// ("suppressed"), so that a burst of slow commands cannot flood the log.

// slowRecordEvery is the least time between two "slow command" records.
const slowRecordEvery = time.Second

type slowRecords struct {
	logger *slog.Logger

	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

// note logs the SLOWLOG entry e unless one was logged within the last
// second.
func (r *slowRecords) note(e *slowEntry, cmd string) {
	if r.logger == nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	if !r.last.IsZero() && now.Sub(r.last) < slowRecordEvery {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	r.last = now
	suppressed := r.suppressed
	r.suppressed = 0
	r.mu.Unlock()
	r.logger.Warn("slow command", "command", strings.ToLower(cmd), "duration_us", e.usec,
		"slowlog_id", e.id, "client", e.addr, "client_name", e.clientNm, "suppressed", suppressed)
}
