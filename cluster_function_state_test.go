package deadbolt

import (
	"context"
	"testing"
)

// A function that counts calls in a library-level local, on a 3-node
// cluster where a follower restarts from its own snapshot taken after
// some calls: every node's state must stay the same (sameEverywhere
// compares their state machines' snapshots at one index). Before such a
// function ran each call in a fresh copy of its library, the restarted
// follower counted from 0 again and wrote 1 where the others wrote 4.
func TestClusterStatefulFunctionSameEverywhere(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	cl := client(t, c.Addr(c.WaitLeader()))
	lib := "#!lua name=counter\nlocal n = 0\n" +
		"redis.register_function('count', function(keys) n = n + 1 redis.call('set', keys[1], n) return n end)"
	if err := cl.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v", err)
	}
	var got []int64
	fcall := func() {
		n, err := cl.FCall(ctx, "count", []string{"calls"}).Int64()
		if err != nil {
			t.Fatalf("FCALL: %v", err)
		}
		got = append(got, n)
	}
	for range 3 {
		fcall()
	}
	f := c.Followers()[0]
	if err := client(t, c.Addr(f)).Do(ctx, "RAFT", "SNAPSHOT").Err(); err != nil {
		t.Fatalf("snapshot on the follower: %v", err)
	}
	c.Kill(f)
	c.Restart(f)
	cl = client(t, c.Addr(c.WaitLeader()))
	fcall()
	sameEverywhere(t, c)
	for i, n := range got {
		if n != 1 {
			t.Errorf("call %d counted %d: every call starts from the state of the load", i, n)
		}
	}
}
