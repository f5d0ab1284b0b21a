//go:build !race

package cluster

import (
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
)

// Every command a leader proposes is encoded once: one allocation, sized
// up front (the race detector's instrumentation allocates more).
func TestAppendEntryAllocatesOnce(t *testing.T) {
	e := Entry{Time: 1, Cmd: fsm.Command{Args: args("EVALSHA", "0123456789abcdef0123456789abcdef01234567", "1", "lock:{name}", "30000", "0f5c6a2e-1b1d-4c3e-9a57-6f3c1e2d7b90:1")}}
	if n := testing.AllocsPerRun(100, func() { AppendEntry(nil, e) }); n != 1 {
		t.Fatalf("AppendEntry made %v allocations, want 1", n)
	}
}
