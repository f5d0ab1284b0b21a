package deadbolt

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	dbclient "github.com/deadbolt/deadbolt/client"
)

// lockSeries are the lock counters of one kind as /metrics has them.
func lockSeries(m map[string]float64, kind string) map[string]float64 {
	out := make(map[string]float64)
	for _, s := range []string{"lock_acquisitions_total", "lock_reentries_total", "lock_contended_total",
		"lock_releases_total", "lock_leases_expired_total", "lock_hold_duration_seconds_count",
		"lock_hold_duration_seconds_sum", "locks_held"} {
		out[s] = m[`deadbolt_`+s+`{kind="`+kind+`"}`]
	}
	return out
}

// lockDelta is what moved between two scrapes, by series.
func lockDelta(before, after map[string]float64, kind string) map[string]float64 {
	b, a := lockSeries(before, kind), lockSeries(after, kind)
	out := make(map[string]float64)
	for k, v := range a {
		if k == "locks_held" {
			out[k] = v
		} else {
			out[k] = v - b[k]
		}
	}
	return out
}

// redisPyContended takes a redis-py lock, fails a second attempt on it and
// releases it, from a python3 process.
func redisPyContended(t *testing.T, addr, name string) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	script := fmt.Sprintf(`import redis
r = redis.Redis(host=%q, port=%s)
a = r.lock(%q, timeout=30)
b = r.lock(%q, timeout=30)
assert a.acquire(blocking=False)
assert not b.acquire(blocking=False)
a.release()
print("ok")`, host, port, name, name)
	py := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3"
	}
	out, err := exec.Command(py, "-c", script).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(string(out), "No module named") {
			t.Skipf("redis-py is not installed: %s", out)
		}
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}

// TestLockMetricsCluster drives a lock workload with the clients deadbolt
// serves against a three-node cluster (through a follower and the leader)
// and scrapes every node's /metrics: an acquisition, a contended attempt
// and a release each count once, a lease that runs out counts once (not
// again when its key is taken anew), the hold histogram has every hold,
// and the held gauge follows the locks; on the followers as on the leader.
func TestLockMetricsCluster(t *testing.T) {
	c := RunClusterT(t, 3, func(_ int, cfg *Config) { withHTTP(cfg) })
	l := c.WaitLeader()
	f := c.Followers()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before := make([]map[string]float64, 3)
	for i, n := range c.Nodes {
		before[i] = scrape(t, n.HTTPAddr())
	}
	viaFollower := redis.NewClient(&redis.Options{Addr: c.Addr(f[0])})
	viaLeader := redis.NewClient(&redis.Options{Addr: c.Addr(l)})
	defer viaFollower.Close()
	defer viaLeader.Close()

	// Redisson's lock through the project's client: taken through a
	// follower, a contended attempt through the leader, released.
	a := dbclient.New(viaFollower)
	b := dbclient.New(viaLeader)
	orders := a.NewLock("orders", dbclient.WithOwner(dbclient.OwnerOf("svc-a", 1)))
	if err := orders.LockLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.NewLock("orders", dbclient.WithOwner(dbclient.OwnerOf("svc-b", 1))).TryLock(ctx, 0, time.Minute); err != nil || ok {
		t.Fatalf("second owner's attempt: %v %v", ok, err)
	}
	// redsync: held, a contended attempt, then held while we look.
	rs := redsync.New(goredis.NewPool(viaFollower))
	m1 := rs.NewMutex("rs", redsync.WithExpiry(20*time.Second), redsync.WithTries(1))
	if err := m1.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := rs.NewMutex("rs", redsync.WithExpiry(20*time.Second), redsync.WithTries(1)).Lock(); err == nil {
		t.Fatal("redsync: second mutex took a held lock")
	}
	for i, n := range c.Nodes {
		m := waitScrape(t, n.HTTPAddr(), func(m map[string]float64) bool {
			return m[`deadbolt_locks_held{kind="reentrant"}`] == 1 && m[`deadbolt_locks_held{kind="string"}`] == 1
		})
		if r, s := m[`deadbolt_locks_held{kind="reentrant"}`], m[`deadbolt_locks_held{kind="string"}`]; r != 1 || s != 1 {
			t.Errorf("node %d: locks held reentrant %v, string %v; want 1 and 1", i, r, s)
		}
	}
	if err := orders.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := m1.Unlock(); err != nil || !ok {
		t.Fatalf("redsync unlock: %v %v", ok, err)
	}
	// redis-py: taken, contended, released.
	redisPyContended(t, c.Addr(l), "py")
	// node-redlock and node-redisson through a follower: two locks each,
	// taken and released (locks_node_test.go), and node-redlock's refused
	// attempt, contended (its script finds the held lock with EXISTS).
	nodeLocks(t, c.Addr(f[0]), true)
	// redislock: a 2 s lease that runs out (the owner died), then the key
	// taken anew and released; the expiry counts once.
	rl := redislock.New(viaFollower)
	if _, err := rl.Obtain(ctx, "job", 2*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	c.Clock.Advance(3 * time.Second)
	job, err := rl.Obtain(ctx, "job", 2*time.Second, nil)
	if err != nil {
		t.Fatalf("redislock after the lease ran out: %v", err)
	}
	if err := job.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := viaLeader.Set(ctx, "job", "data", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The last write is through the leader: WAIT 2 has every node apply
	// all of the above.
	if got, err := viaLeader.Do(ctx, "wait", 2, 5000).Int(); err != nil || got != 2 {
		t.Fatalf("WAIT: %d %v", got, err)
	}

	want := map[string]map[string]float64{
		// orders, node-redisson's nrs and nrs2.
		"reentrant": {"lock_acquisitions_total": 3, "lock_reentries_total": 0, "lock_contended_total": 1,
			"lock_releases_total": 3, "lock_leases_expired_total": 0, "lock_hold_duration_seconds_count": 3, "locks_held": 0},
		// rs, py, job twice, node-redlock's nrl and nrl2; contended rs,
		// py and nrl; released rs, py, job's second, nrl, nrl2.
		"string": {"lock_acquisitions_total": 6, "lock_reentries_total": 0, "lock_contended_total": 3,
			"lock_releases_total": 5, "lock_leases_expired_total": 1, "lock_hold_duration_seconds_count": 6, "locks_held": 0},
	}
	for i, n := range c.Nodes {
		role := "follower"
		if i == l {
			role = "leader"
		}
		after := waitScrape(t, n.HTTPAddr(), func(m map[string]float64) bool {
			return m[`deadbolt_locks_held{kind="reentrant"}`] == 0 && m[`deadbolt_locks_held{kind="string"}`] == 0
		})
		for kind, w := range want {
			d := lockDelta(before[i], after, kind)
			for s, v := range w {
				if d[s] != v {
					t.Errorf("%s %s: %s{kind=%q} moved by %v, want %v", role, c.IDs()[i], s, kind, d[s], v)
				}
			}
		}
		// The expired lease held for exactly its 2 s; the others for
		// moments.
		if sum := lockDelta(before[i], after, "string")["lock_hold_duration_seconds_sum"]; sum < 2 || sum > 10 {
			t.Errorf("%s: string hold time sum %v s, want 2 s and a little", role, sum)
		}
		if b := after[`deadbolt_lock_hold_duration_seconds_bucket{kind="string",le="+Inf"}`]; b != after[`deadbolt_lock_hold_duration_seconds_count{kind="string"}`] {
			t.Errorf("%s: +Inf bucket %v, count %v", role, b, after[`deadbolt_lock_hold_duration_seconds_count{kind="string"}`])
		}
		if b := after[`deadbolt_lock_hold_duration_seconds_bucket{kind="string",le="1"}`] - before[i][`deadbolt_lock_hold_duration_seconds_bucket{kind="string",le="1"}`]; b > 5 {
			t.Errorf("%s: %v string holds of at most 1 s, want the expired one's 2 s left out", role, b)
		}
		for _, kind := range []string{"rwlock", "semaphore"} {
			if _, ok := after[`deadbolt_lock_acquisitions_total{kind="`+kind+`"}`]; !ok {
				t.Errorf("%s: no series for kind %s", role, kind)
			}
		}
	}
}

// TestLockMetricsSingleNode: on a single node, whose active expiry reaps
// a lock whose lease ran out, the expiry counts once and the held gauge
// drops; a later lock on the same key is a new acquisition.
func TestLockMetricsSingleNode(t *testing.T) {
	n := RunT(t, withHTTP)
	ctx := context.Background()
	rdb := resp2(t, n.Addr())
	rs := redsync.New(goredis.NewPool(rdb))
	if err := rs.NewMutex("job", redsync.WithExpiry(2*time.Second), redsync.WithTries(1)).Lock(); err != nil {
		t.Fatal(err)
	}
	m := waitScrape(t, n.HTTPAddr(), func(m map[string]float64) bool { return m[`deadbolt_locks_held{kind="string"}`] == 1 })
	if s := lockSeries(m, "string"); s["locks_held"] != 1 || s["lock_acquisitions_total"] != 1 || s["lock_leases_expired_total"] != 0 {
		t.Fatalf("while held: %v", s)
	}
	n.Advance(3 * time.Second) // active expiry reaps the key
	if got, _ := rdb.Exists(ctx, "job").Result(); got != 0 {
		t.Fatalf("the lock is still there after its lease")
	}
	if err := rdb.Set(ctx, "other", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m = waitScrape(t, n.HTTPAddr(), func(m map[string]float64) bool { return m[`deadbolt_locks_held{kind="string"}`] == 0 })
	s := lockSeries(m, "string")
	if s["locks_held"] != 0 || s["lock_leases_expired_total"] != 1 || s["lock_releases_total"] != 0 ||
		s["lock_hold_duration_seconds_count"] != 1 || s["lock_hold_duration_seconds_sum"] != 2 {
		t.Errorf("after the lease ran out: %v", s)
	}
	if b := m[`deadbolt_lock_hold_duration_seconds_bucket{kind="string",le="1"}`]; b != 0 {
		t.Errorf("a 2 s hold in the 1 s bucket: %v", b)
	}
	if b := m[`deadbolt_lock_hold_duration_seconds_bucket{kind="string",le="5"}`]; b != 1 {
		t.Errorf("the 2 s hold not in the 5 s bucket: %v", b)
	}
}
