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

// A batch's commands take their argument slices from a shared pool: 32
// Redisson EVALSHAs decode in a handful of allocations, not one or more
// per command (the state machine of every node decodes every entry).
func TestDecodeBatchSharesArgs(t *testing.T) {
	b := lockBatch(32)
	n := testing.AllocsPerRun(100, func() {
		if _, err := DecodeEntries(b); err != nil {
			t.Fatal(err)
		}
	})
	// The []Entry, the pool's slice header, and a pool of argPoolSize
	// slots for each argPoolSize/6 commands of six arguments.
	perPool := argPoolSize / 6
	if want := 2.0 + float64((32+perPool-1)/perPool); n > want {
		t.Fatalf("DecodeEntries of 32 commands made %v allocations, want at most %v", n, want)
	}
}
