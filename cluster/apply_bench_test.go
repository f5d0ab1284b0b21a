//go:build unix

package cluster

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Redisson's lock and unlock scripts, as deadbolt-bench sends them.
const (
	benchLockScript = `if (redis.call('exists', KEYS[1]) == 0) then
    redis.call('hset', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;
return redis.call('pttl', KEYS[1]);`
	benchUnlockScript = `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    return 0;
else
    redis.call('del', KEYS[1]);
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1;
end;
return nil;`
)

// BenchmarkApplyLockPairs is what every node's state machine does for the
// lock+unlock pairs of 32 clients: decode a batch entry of 32 lock
// EVALSHAs and apply it, then one of their 32 unlocks. Per pair. No one
// subscribes (Listened), as on the cluster bench's nodes: the unlocks'
// PUBLISH records nothing.
func BenchmarkApplyLockPairs(b *testing.B) {
	const clients = 32
	r := newRaftFSM(fsm.New(fsm.Options{Listened: func() bool { return false }}), nil)
	lockSHA := r.fsm.Apply(0, fsm.Command{Args: args("SCRIPT", "LOAD", benchLockScript)}).Reply.String()
	unlockSHA := r.fsm.Apply(0, fsm.Command{Args: args("SCRIPT", "LOAD", benchUnlockScript)}).Reply.String()
	var locks, unlocks [][]byte
	for i := range clients {
		name := "deadbolt-bench:x:" + strconv.Itoa(i)
		owner := "3f0c7a4e-bench-x:" + strconv.Itoa(i)
		locks = append(locks, AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: args("EVALSHA", lockSHA, "1", name, "30000", owner)}}))
		unlocks = append(unlocks, AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: args("EVALSHA", unlockSHA, "2", name,
			"redisson_lock__channel:{"+name+"}", "0", "30000", owner)}}))
	}
	lockEntry, unlockEntry := AppendBatch(nil, locks...), AppendBatch(nil, unlocks...)
	index := uint64(1)
	apply := func(data []byte) []fsm.Result {
		index++
		out := r.ApplyBatch([]*raft.Log{{Index: index, Type: raft.LogCommand, Data: data}})
		return out[0].([]fsm.Result)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if res := apply(lockEntry); res[0].Reply.Type != 0 {
			b.Fatalf("lock: %q", res[0].Reply.Append(nil))
		}
		if res := apply(unlockEntry); res[0].Reply.Int != 1 {
			b.Fatalf("unlock: %q", res[0].Reply.Append(nil))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*clients), "ns/pair")
	// The process's CPU time, the collector's included: steadier than
	// the elapsed time on a machine shared with other work.
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*clients), "cpu-ns/pair")
}

// processCPU is the process's user plus system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
