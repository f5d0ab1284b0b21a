package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
)

// TestStartApplyAcrossLeadershipLoss sends commands by StartApply while
// the leader is cut off and another is elected: every command is answered
// exactly once (the proposal's callback, proposal.applyDone), each one
// answered OK is on the new leader, and a command refused because its node
// lost the lead was retried (Node.applyOutcome), never handed to the caller
// as ErrNotLeader. It fails without the retry.
func TestStartApplyAcrossLeadershipLoss(t *testing.T) {
	c := startTestCluster(t, 3)
	li := c.leader(-1)
	l := c.nodes[li]
	var (
		mu      sync.Mutex
		calls   = map[string]int{}
		outcome = map[string]error{}
		sent    atomic.Int64
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			key := fmt.Sprintf("k%d", i)
			ok := l.StartApply(cmd("SET", key, "1"), func(_ fsm.Result, err error) {
				mu.Lock()
				calls[key]++
				outcome[key] = err
				mu.Unlock()
			})
			if !ok {
				time.Sleep(time.Millisecond)
				continue
			}
			sent.Add(1)
			if i%64 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	ni := c.electAnotherUnderLoad(li, &stop, &wg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(calls)
		mu.Unlock()
		if int64(n) == sent.Load() || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a second answer would come by now
	c.converged()
	nl := c.nodes[ni]
	mu.Lock()
	defer mu.Unlock()
	if int64(len(calls)) != sent.Load() {
		t.Fatalf("%d of %d commands answered", len(calls), sent.Load())
	}
	var ok, other int
	for key, n := range calls {
		if n != 1 {
			t.Errorf("%s answered %d times", key, n)
		}
		nl.fsm.mu.Lock()
		exists := nl.state.Read(0, cmd("EXISTS", key)).Reply.Int == 1
		nl.fsm.mu.Unlock()
		err := outcome[key]
		switch {
		case err == nil:
			ok++
			if !exists {
				t.Errorf("%s acknowledged but missing", key)
			}
		case errors.Is(err, ErrNotLeader):
			t.Errorf("%s: ErrNotLeader reached the caller: not retried", key)
		default:
			other++
		}
	}
	t.Logf("%d sent, %d OK, %d other errors", sent.Load(), ok, other)
}
