package deadbolt

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/redis/go-redis/v9"
)

// TestClusterMaxmemory fills a 3-node cluster to its maxmemory through all
// three nodes at once and checks that every node refused the same writes
// (their state machines write the same snapshot at the same index, and
// report the same logical size), that locks can still be released and
// renewed at the limit (DEL, a redlock-style release, Redisson's unlock,
// which Redis 7.0 refuses there and deadbolt lets through, and its
// forceUnlock), that a
// restarted node (restored from its snapshot) agrees, and that writes go
// again once keys are deleted.
func TestClusterMaxmemory(t *testing.T) {
	c := RunClusterT(t, 3, func(i int, cfg *Config) { cfg.SnapshotThreshold = 64 })
	ctx := context.Background()
	const limit = 128 << 10
	admin := client(t, c.Addr(0))
	for i := range 4 {
		if err := admin.SetNX(ctx, "lock:"+strconv.Itoa(i), "owner-"+strconv.Itoa(i), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Redisson's reentrant lock, held four times by id:1 (three unlocks
	// below, one through each node; forceUnlock takes the last).
	if err := admin.HSet(ctx, "rlock", "id:1", 4).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory", strconv.Itoa(limit)).Err(); err != nil {
		t.Fatal(err)
	}

	// Three writers per node until each has been refused a few times.
	value := strings.Repeat("v", 200)
	var (
		mu               sync.Mutex
		acked, refused   []string
		wg               sync.WaitGroup
		errs             = make(chan error, 9)
		oom              = fsm.OOMError
		writersPerNode   = 3
		refusalsToFinish = 5
	)
	for w := range 3 * writersPerNode {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := client(t, c.Addr(w%3))
			fails := 0
			for i := 0; i < 5000 && fails < refusalsToFinish; i++ {
				key := fmt.Sprintf("fill:%d:%d", w, i)
				err := cl.Set(ctx, key, value, 0).Err()
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, key)
				case err.Error() == oom:
					refused = append(refused, key)
					fails++
				default:
					mu.Unlock()
					errs <- fmt.Errorf("writer %d: SET %s: %v", w, key, err)
					return
				}
				mu.Unlock()
			}
			if fails < refusalsToFinish {
				errs <- fmt.Errorf("writer %d was never refused", w)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d writes acknowledged, %d refused", len(acked), len(refused))
	if len(acked)*len(value) > 2*limit {
		t.Fatalf("%d writes of %d bytes acknowledged under a limit of %d", len(acked), len(value), limit)
	}

	sameEverywhere(t, c)
	leader := client(t, c.Addr(c.Leader()))
	for _, k := range acked {
		if n, err := leader.Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Fatalf("acknowledged %s: EXISTS %d, %v", k, n, err)
		}
	}
	for _, k := range refused {
		if n, err := leader.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Fatalf("refused %s: EXISTS %d, %v", k, n, err)
		}
	}

	// At the limit, through every node: locks are read, renewed and
	// released; nothing new is stored. Redisson's unlock script calls
	// HINCRBY first, which Redis 7.0 refuses; deadbolt lets a HINCRBY of
	// a field that exists through (fsm countsInPlace), while a plain
	// HINCRBY outside a script is refused as by Redis.
	release := `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`
	for i := range c.Nodes {
		cl := client(t, c.Addr(i))
		if err := cl.SetNX(ctx, "new:"+strconv.Itoa(i), "x", time.Minute).Err(); err == nil || err.Error() != oom {
			t.Errorf("node %d: SET NX at the limit: %v", i, err)
		}
		if err := cl.HIncrBy(ctx, "rlock", "id:1", 1).Err(); err == nil || err.Error() != oom {
			t.Errorf("node %d: HINCRBY at the limit: %v", i, err)
		}
		// Redisson's unlock: released one level of the hold.
		if n, err := cl.Eval(ctx, redissonUnlock, []string{"rlock", "redisson_lock__channel:{rlock}"}, 0, 30000, "id:1").Int(); err != nil || n != 0 {
			t.Errorf("node %d: Redisson's unlock at the limit: %d, %v", i, n, err)
		}
		if err := cl.Eval(ctx, redissonUnlock, []string{"rlock", "redisson_lock__channel:{rlock}"}, 0, 30000, "id:2").Err(); err != redis.Nil {
			t.Errorf("node %d: Redisson's unlock by another owner at the limit: %v, want nil", i, err)
		}
	}
	for i := range c.Nodes {
		cl := client(t, c.Addr(i))
		lock, owner := "lock:"+strconv.Itoa(i), "owner-"+strconv.Itoa(i)
		if ok, err := cl.PExpire(ctx, lock, 2*time.Minute).Result(); err != nil || !ok {
			t.Errorf("node %d: PEXPIRE %s: %v %v", i, lock, ok, err)
		}
		if n, err := cl.Eval(ctx, release, []string{lock}, owner).Int(); err != nil || n != 1 {
			t.Errorf("node %d: release %s: %d, %v", i, lock, n, err)
		}
		if n, err := cl.Del(ctx, acked[i]).Result(); err != nil || n != 1 {
			t.Errorf("node %d: DEL %s: %d, %v", i, acked[i], n, err)
		}
	}

	// Redisson's forceUnlock deletes first: it goes.
	forceUnlock := `if (redis.call('del', KEYS[1]) == 1) then redis.call('publish', KEYS[2], ARGV[1]); return 1 else return 0 end`
	if n, err := leader.Eval(ctx, forceUnlock, []string{"rlock", "redisson_lock__channel:{rlock}"}, 0).Int(); err != nil || n != 1 {
		t.Errorf("forceUnlock: %d, %v", n, err)
	}

	// A follower restarted from its snapshot and the rest of its log
	// agrees with the others.
	f := c.Followers()[0]
	if err := client(t, c.Addr(f)).Do(ctx, "RAFT", "SNAPSHOT").Err(); err != nil {
		t.Fatal(err)
	}
	c.Kill(f)
	c.Restart(f)
	sameEverywhere(t, c)

	// Room again: writes go.
	for _, k := range acked[3:] {
		leader.Del(ctx, k)
	}
	for i := range c.Nodes {
		if err := client(t, c.Addr(i)).Set(ctx, "after:"+strconv.Itoa(i), value, 0).Err(); err != nil {
			t.Errorf("node %d: SET under the limit: %v", i, err)
		}
	}
	sameEverywhere(t, c)
}

// redissonUnlock is the shape of Redisson's unlock script (before its
// unlock latch): HEXISTS, then HINCRBY -1, then PEXPIRE or DEL and PUBLISH.
const redissonUnlock = `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; ` +
	`local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); ` +
	`if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; ` +
	`else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;`

// sameEverywhere waits until every node has applied the leader's last
// index and requires their state machines to write identical snapshots
// and report the same logical size.
func sameEverywhere(t *testing.T, c *Cluster) {
	t.Helper()
	ctx := context.Background()
	// A write through the leader marks where every node must get to.
	l := c.WaitLeader()
	if err := client(t, c.Addr(l)).Do(ctx, "PUBLISH", "sync", "x").Err(); err != nil {
		t.Fatal(err)
	}
	want := c.Nodes[l].raft.AppliedIndex()
	deadline := time.Now().Add(20 * time.Second)
	var snaps [][]byte
	var logical []string
	for {
		// The leader's ticks go on: compare when every node was caught
		// at the same index, past want.
		snaps, logical = snaps[:0], logical[:0]
		same, first := true, uint64(0)
		for i, n := range c.Nodes {
			var b bytes.Buffer
			used, _ := n.raft.LogicalMemory()
			at, err := n.raft.StateSnapshot(&b)
			if err != nil {
				t.Fatal(err)
			}
			if used2, _ := n.raft.LogicalMemory(); used2 != used {
				same = false
			}
			if i == 0 {
				first = at
			}
			snaps = append(snaps, b.Bytes())
			same = same && at == first && at >= want
			logical = append(logical, strconv.FormatInt(used, 10))
		}
		if same {
			want = first
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes did not all apply index %d", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 1; i < len(snaps); i++ {
		if !bytes.Equal(snaps[i], snaps[0]) {
			t.Fatalf("at index %d node %d's snapshot (%d bytes) differs from node 0's (%d bytes)", want, i, len(snaps[i]), len(snaps[0]))
		}
		if logical[i] != logical[0] {
			t.Fatalf("at index %d logical sizes differ: %v", want, logical)
		}
	}
	t.Logf("index %d: %d identical snapshots of %d bytes, logical size %s on every node", want, len(snaps), len(snaps[0]), logical[0])
}
