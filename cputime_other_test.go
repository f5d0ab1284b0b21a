//go:build !unix

package deadbolt

import "time"

// cpuTime is not measured here: benchmarks report 0 CPU per operation.
func cpuTime() time.Duration { return 0 }
