package deadbolt

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/resp"
	"github.com/redis/go-redis/v9"
)

func client(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}

func TestClusterWriteThroughFollowerReadEverywhere(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	f := c.Followers()
	if err := client(t, c.Addr(f[0])).Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatalf("SET through follower: %v", err)
	}
	for i := range c.Nodes {
		got, err := client(t, c.Addr(i)).Get(ctx, "k").Result()
		if err != nil || got != "v1" {
			t.Fatalf("GET on node %d = %q, %v", i, got, err)
		}
	}
	// Many concurrent writers through every node: each command applied
	// exactly once, each reply to its own client.
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for w := 0; w < 30; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := client(t, c.Addr(w%3))
			for i := 0; i < 20; i++ {
				key := fmt.Sprintf("w%d", w)
				n, err := cl.Incr(ctx, key).Result()
				if err != nil || n != int64(i+1) {
					errs <- fmt.Errorf("writer %d INCR %d = %d, %v", w, i, n, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A lock taken through a follower survives the leader's death: the other
// owner still cannot take it on the new leader, its TTL keeps counting
// from where it was, and it expires on time.
func TestClusterLockSurvivesLeaderKill(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	old := c.Leader()
	f := c.Followers()
	ok, err := client(t, c.Addr(f[0])).SetNX(ctx, "lock", "owner-1", 30*time.Second).Result()
	if err != nil || !ok {
		t.Fatalf("lock through follower: %v %v", ok, err)
	}
	c.Kill(old)
	nl := c.WaitNewLeader(old)
	cl := client(t, c.Addr(nl))
	if ok, err := cl.SetNX(ctx, "lock", "owner-2", 30*time.Second).Result(); err != nil || ok {
		t.Fatalf("second owner on new leader: granted=%v err=%v", ok, err)
	}
	ttl, err := cl.PTTL(ctx, "lock").Result()
	if err != nil || ttl <= 25*time.Second || ttl > 30*time.Second {
		t.Fatalf("PTTL on new leader = %v, %v", ttl, err)
	}
	c.Clock.Advance(31 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := cl.SetNX(ctx, "lock", "owner-2", 30*time.Second).Result()
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock never expired on the new leader: %v %v", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A leader cut off from the others cannot grant or read anything; the
// majority elects a new leader and goes on; after healing, the old leader
// has what the majority wrote.
func TestClusterPartitionedLeader(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	old := c.Leader()
	if err := client(t, c.Addr(old)).Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Isolate(old)
	isolated := client(t, c.Addr(old))
	if ok, err := isolated.SetNX(ctx, "lock", "a", time.Minute).Result(); err == nil {
		t.Fatalf("isolated leader granted a lock: %v", ok)
	}
	if v, err := isolated.Get(ctx, "k").Result(); err == nil {
		t.Fatalf("isolated leader served a read: %q", v)
	}
	var nl int
	deadline := time.Now().Add(10 * time.Second)
	for {
		nl = c.Leader()
		if nl >= 0 && nl != old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("majority elected no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	maj := client(t, c.Addr(nl))
	if ok, err := maj.SetNX(ctx, "lock", "b", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("majority leader lock: %v %v", ok, err)
	}
	c.Heal()
	c.WaitLeader()
	deadline = time.Now().Add(10 * time.Second)
	for {
		v, err := isolated.Get(ctx, "lock").Result()
		if err == nil && v == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("old leader after heal: %q %v", v, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Restarting every node loses nothing.
func TestClusterRestartAll(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	cl := client(t, c.Addr(c.Leader()))
	for i := 0; i < 50; i++ {
		if err := cl.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.Nodes {
		c.Kill(i)
	}
	for i := range c.Nodes {
		c.Restart(i)
	}
	c.WaitLeader()
	for i := range c.Nodes {
		cl := client(t, c.Addr(i))
		for k := 0; k < 50; k++ {
			v, err := cl.Get(ctx, fmt.Sprint("k", k)).Int()
			if err != nil || v != k {
				t.Fatalf("node %d key k%d = %d, %v", i, k, v, err)
			}
		}
	}
}

// A follower that was down while the leader compacted its log catches up
// from a snapshot.
func TestClusterFollowerCatchesUpFromSnapshot(t *testing.T) {
	c := RunClusterT(t, 3, func(i int, cfg *Config) { cfg.SnapshotThreshold = 16 })
	ctx := context.Background()
	l := c.Leader()
	lagger := c.Followers()[0]
	c.Kill(lagger)
	cl := client(t, c.Addr(l))
	for i := 0; i < 200; i++ {
		if err := cl.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Do(ctx, "RAFT", "SNAPSHOT").Err(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	want := c.Nodes[l].raft.AppliedIndex()
	n := c.Restart(lagger)
	deadline := time.Now().Add(10 * time.Second)
	for n.raft.AppliedIndex() < want {
		if time.Now().After(deadline) {
			t.Fatalf("lagging follower applied %d, leader %d", n.raft.AppliedIndex(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A message published through one node reaches a subscriber on another,
// once.
func TestClusterPubSubAcrossNodes(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	f := c.Followers()
	sub := client(t, c.Addr(f[0])).Subscribe(ctx, "redisson_lock__channel:{x}")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := client(t, c.Addr(f[1])).Publish(ctx, "redisson_lock__channel:{x}", "0").Result()
	if err != nil {
		t.Fatalf("publish: %d %v", n, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "0" {
		t.Fatalf("message = %+v, %v", msg, err)
	}
	select {
	case extra := <-sub.Channel():
		t.Fatalf("delivered twice: %+v", extra)
	case <-time.After(200 * time.Millisecond):
	}
}

// Adding and removing a voter while clients write: nothing acknowledged is
// lost, and the removed node stops serving.
func TestClusterMembershipChangeUnderLoad(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl := client(t, c.Addr(c.Leader()))
		for i := 0; ctx.Err() == nil; i++ {
			k := fmt.Sprint("m", i)
			if err := cl.Set(ctx, k, i, 0).Err(); err == nil {
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	// A fourth node joins through a follower's client address.
	n4, err := Start(Config{
		ID: "n4", Addr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Join: c.Addr(c.Followers()[0]), HeartbeatTimeout: time.Second,
		ElectionTimeout: time.Second, LeaderLease: 500 * time.Millisecond, Clock: c.Clock,
	})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	defer n4.Close()
	members, err := client(t, c.Addr(c.Leader())).Do(ctx, "RAFT", "MEMBERS").Slice()
	if err != nil || len(members) != 4 {
		t.Fatalf("members after join = %v, %v", members, err)
	}
	// Remove a follower (not the one the writer talks to).
	victim := c.Followers()[0]
	if err := client(t, c.Addr(c.Leader())).Do(ctx, "RAFT", "REMOVE", c.IDs()[victim]).Err(); err != nil {
		t.Fatalf("remove: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	wg.Wait()
	if err := client(t, c.Addr(victim)).Get(context.Background(), "m0").Err(); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("removed node still serves: %v", err)
	}
	cl := client(t, n4.Addr())
	mu.Lock()
	defer mu.Unlock()
	for _, k := range acked {
		if err := cl.Get(context.Background(), k).Err(); err != nil {
			t.Fatalf("acknowledged %s lost on the new member: %v", k, err)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged during the membership change")
	}
}

// WAIT counts the followers that have the writes; ROLE and INFO
// replication tell who leads.
func TestClusterWaitRoleInfo(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	for _, i := range []int{c.Leader(), c.Followers()[0]} {
		cl := client(t, c.Addr(i))
		if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := cl.Do(ctx, "WAIT", 2, 2000).Int()
		if err != nil || n != 2 {
			t.Fatalf("WAIT 2 through node %d = %d, %v", i, n, err)
		}
	}
	role, err := client(t, c.Addr(c.Leader())).Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("leader ROLE = %v, %v", role, err)
	}
	f := c.Followers()[0]
	role, err = client(t, c.Addr(f)).Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "slave" {
		t.Fatalf("follower ROLE = %v, %v", role, err)
	}
	info, err := client(t, c.Addr(f)).Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "role:slave\r\n") || !strings.Contains(info, "master_port:"+strings.Split(c.Addr(c.Leader()), ":")[1]) {
		t.Fatalf("follower INFO replication:\n%s %v", info, err)
	}
	info, err = client(t, c.Addr(c.Leader())).Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "role:master\r\n") || !strings.Contains(info, "connected_slaves:2\r\n") {
		t.Fatalf("leader INFO replication:\n%s %v", info, err)
	}
}

// The Redisson-style lock and unlock scripts (see fsm/bench_test.go).
const (
	rLock = `if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	rUnlock = `if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`
	rRenew = `if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0`
)

// A Redisson lock taken through a follower (EVALSHA) survives the leader's
// death: the other owner gets a PTTL on the new leader, the watchdog's
// renew works there, the TTL keeps counting, and the unlock wakes a
// subscriber connected to another node.
func TestClusterRedissonLockFailover(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	old := c.Leader()
	f := c.Followers()
	owner1 := client(t, c.Addr(f[0]))
	lockSHA, err := owner1.ScriptLoad(ctx, rLock).Result()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := owner1.EvalSha(ctx, lockSHA, []string{"{res}"}, 30000, "uuid-1:1").Result(); err != redis.Nil {
		t.Fatalf("first acquire = %v, %v (want nil)", r, err)
	}
	c.Kill(old)
	nl := c.WaitNewLeader(old)
	var survivor int
	for _, i := range c.Followers() {
		survivor = i
	}
	owner2 := client(t, c.Addr(nl))
	// EVALSHA works on the new leader: the script cache is replicated.
	pttl, err := owner2.EvalSha(ctx, lockSHA, []string{"{res}"}, 30000, "uuid-2:1").Int64()
	if err != nil || pttl <= 0 || pttl > 30000 {
		t.Fatalf("second owner on new leader = %d, %v (want the holder's PTTL)", pttl, err)
	}
	c.Clock.Advance(20 * time.Second)
	renewed, err := client(t, c.Addr(survivor)).Eval(ctx, rRenew, []string{"{res}"}, 30000, "uuid-1:1").Int()
	if err != nil || renewed != 1 {
		t.Fatalf("renew = %d, %v", renewed, err)
	}
	if p, err := owner2.PTTL(ctx, "{res}").Result(); err != nil || p <= 25*time.Second {
		t.Fatalf("PTTL after renew = %v, %v", p, err)
	}
	sub := client(t, c.Addr(survivor)).Subscribe(ctx, "redisson_lock__channel:{res}")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := owner2.Eval(ctx, rUnlock, []string{"{res}", "redisson_lock__channel:{res}"}, 0, 30000, "uuid-1:1").Int()
	if err != nil || r != 1 {
		t.Fatalf("unlock = %d, %v", r, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "0" {
		t.Fatalf("wake-up = %+v, %v", msg, err)
	}
	if r, err := owner2.EvalSha(ctx, lockSHA, []string{"{res}"}, 30000, "uuid-2:1").Result(); err != redis.Nil {
		t.Fatalf("second owner after unlock = %v, %v (want nil)", r, err)
	}
}

// Time does not run while there is no leader: a lock's TTL is the same
// after a leaderless pause as before it (within a tick interval).
func TestClusterTimeStopsWithoutLeader(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	l := c.Leader()
	cl := client(t, c.Addr(l))
	if err := cl.Set(ctx, "lock", "x", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	before, err := cl.PTTL(ctx, "lock").Result()
	if err != nil {
		t.Fatal(err)
	}
	// No quorum: two nodes down; the clock moves 30 s meanwhile.
	f := c.Followers()
	c.Kill(f[0])
	c.Kill(f[1])
	deadline := time.Now().Add(10 * time.Second)
	for c.Nodes[l].raft.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("leader without quorum never stepped down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Clock.Advance(30 * time.Second)
	c.Restart(f[0])
	c.Restart(f[1])
	nl := c.WaitLeader()
	after, err := client(t, c.Addr(nl)).PTTL(ctx, "lock").Result()
	if err != nil || after <= 0 {
		t.Fatalf("lock expired during a leaderless pause: PTTL %v, %v", after, err)
	}
	// The old leader read PTTL at its own time, which may run ahead of the
	// last entry it committed by up to the idle tick interval; the new
	// leader's time starts from that entry (docs/SAFETY.md, "Time, clock
	// jumps and leases"): a TTL may grow by that much, never by the pause.
	if after > before+250*time.Millisecond {
		t.Fatalf("TTL grew by more than a tick interval: %v then %v", before, after)
	}
}

// A new cluster's clock starts at the wall clock, so absolute expiry
// times mean what clients expect.
func TestClusterTimeStartsAtWallClock(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	cl := client(t, c.Addr(c.Followers()[0]))
	now, err := cl.Time(ctx).Result()
	if err != nil || now.Sub(c.Clock.Now()).Abs() > 5*time.Second {
		t.Fatalf("TIME = %v, %v; clock %v", now, err, c.Clock.Now())
	}
	at := c.Clock.Now().Add(time.Hour)
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ExpireAt(ctx, "k", at).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl, err := cl.TTL(ctx, "k").Result(); err != nil || ttl < 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL after EXPIREAT now+1h = %v, %v", ttl, err)
	}
}

// A follower answers a RESP2 and a RESP3 client byte for byte as the leader
// does, although it forwards their commands: maps, sets, doubles and pairs
// keep their types over the members' connection, and RESP2's two nulls
// (a nil bulk and an aborted EXEC's nil array) stay apart.
func TestClusterRESP3ThroughFollower(t *testing.T) {
	c := RunClusterT(t, 3)
	setup := dialRaw(t, c.Addr(c.Leader()))
	for _, cmd := range [][]string{
		{"HSET", "h", "f1", "v1", "f2", "v2"},
		{"ZADD", "z", "1.5", "a", "2", "b"},
		{"SADD", "s", "only"},
		{"SET", "w", "0"},
	} {
		if raw, r := setup.do(cmd...); r.IsError() {
			t.Fatalf("%q: %s", cmd, raw)
		}
	}
	cmds := [][]string{
		{"HGETALL", "h"}, {"HGETALL", "nosuch"}, {"ZRANGE", "z", "0", "-1", "WITHSCORES"},
		{"ZSCORE", "z", "a"}, {"ZPOPMIN", "nosuch", "2"}, {"SMEMBERS", "s"}, {"GET", "nosuch"},
		{"EVAL", "redis.setresp(3); return {redis.call('zrange', 'z', 0, -1, 'withscores'), true}", "0"},
		{"ZINCRBY", "z", "0", "b"}, // a write (forwarded) whose reply is a double
	}
	answers := func(addr, proto string) []string {
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		if _, r := a.do("HELLO", proto); r.IsError() {
			t.Fatalf("HELLO %s: %v", proto, r)
		}
		var out []string
		for _, cmd := range cmds {
			raw, _ := a.do(cmd...)
			out = append(out, raw)
		}
		// WATCH broken by another client: EXEC answers a nil array.
		a.do("WATCH", "w")
		b.do("INCR", "w")
		a.do("MULTI")
		a.do("GET", "w")
		raw, _ := a.do("EXEC")
		return append(out, raw)
	}
	for _, proto := range []string{"2", "3"} {
		want := answers(c.Addr(c.Leader()), proto)
		for _, f := range c.Followers() {
			got := answers(c.Addr(f), proto)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("RESP%s through a follower, step %d: %q, the leader answers %q", proto, i, got[i], want[i])
				}
			}
		}
		hgetall, exec := want[0], want[len(want)-1]
		if proto == "3" && (!strings.HasPrefix(hgetall, "%2\r\n") || exec != "_\r\n") {
			t.Errorf("RESP3: HGETALL %q, aborted EXEC %q", hgetall, exec)
		}
		if proto == "2" && (!strings.HasPrefix(hgetall, "*4\r\n") || exec != "*-1\r\n") {
			t.Errorf("RESP2: HGETALL %q, aborted EXEC %q", hgetall, exec)
		}
	}
}

// notify-keyspace-events set through one follower is in force on every
// node, and a key's active expiry, decided by the leader, reaches a
// subscriber of another follower exactly once.
func TestClusterKeyspaceNotifications(t *testing.T) {
	c := RunClusterT(t, 3)
	ctx := context.Background()
	f := c.Followers()
	if err := client(t, c.Addr(f[0])).ConfigSet(ctx, "notify-keyspace-events", "Ex").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range c.Nodes {
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, err := client(t, c.Addr(i)).ConfigGet(ctx, "notify-keyspace-events").Result()
			if err == nil && v["notify-keyspace-events"] == "xE" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: notify-keyspace-events %v %v, want xE", i, v, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sub := client(t, c.Addr(f[1])).Subscribe(ctx, "__keyevent@0__:expired")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client(t, c.Addr(c.Leader())).Set(ctx, "lease", "owner", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	ch := sub.Channel()
	select {
	case m := <-ch:
		if m.Payload != "lease" {
			t.Errorf("expired event for %q", m.Payload)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no expired event on the follower")
	}
	select {
	case m := <-ch:
		t.Errorf("a second event: %v", m)
	case <-time.After(time.Second):
	}
}

// A function library loaded through a follower is on every node, survives
// the leader's death, and reaches a node that catches up from a snapshot.
func TestClusterFunctionLibrary(t *testing.T) {
	c := RunClusterT(t, 3, func(i int, cfg *Config) { cfg.SnapshotThreshold = 16 })
	ctx := context.Background()
	f := c.Followers()
	lib := "#!lua name=locks\nredis.register_function('take', function(keys, args) return redis.call('set', keys[1], args[1], 'nx', 'px', 60000) end)\n" +
		"redis.register_function{function_name='holder', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
	if name, err := client(t, c.Addr(f[0])).FunctionLoad(ctx, lib).Result(); err != nil || name != "locks" {
		t.Fatalf("FUNCTION LOAD through a follower: %q %v", name, err)
	}
	if err := client(t, c.Addr(f[1])).FCall(ctx, "take", []string{"l1"}, "a").Err(); err != nil {
		t.Fatalf("FCALL through the other follower: %v", err)
	}
	lagger := f[1]
	c.Kill(lagger)
	old := c.Leader()
	c.Kill(old)
	c.Restart(old)
	nl := c.WaitNewLeader(-1)
	cl := client(t, c.Addr(nl))
	if v, err := cl.FCallRO(ctx, "holder", []string{"l1"}).Result(); err != nil || v != "a" {
		t.Fatalf("FCALL_RO after the leader's death: %v %v", v, err)
	}
	for i := range 60 {
		if err := cl.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Do(ctx, "RAFT", "SNAPSHOT").Err(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	want := c.Nodes[nl].raft.AppliedIndex()
	n := c.Restart(lagger)
	deadline := time.Now().Add(20 * time.Second)
	for n.raft.AppliedIndex() < want {
		if time.Now().After(deadline) {
			t.Fatalf("lagging node applied %d, leader %d", n.raft.AppliedIndex(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lc := client(t, c.Addr(lagger))
	if v, err := lc.FCallRO(ctx, "holder", []string{"l1"}).Result(); err != nil || v != "a" {
		t.Fatalf("FCALL_RO on the node restored from a snapshot: %v %v", v, err)
	}
	if libs, err := lc.FunctionList(ctx, redis.FunctionListQuery{}).Result(); err != nil || len(libs) != 1 || len(libs[0].Functions) != 2 {
		t.Fatalf("FUNCTION LIST on the restored node: %+v %v", libs, err)
	}
}

// The encoding thresholds are replicated settings and encodings are state
// machine state: set through a follower, they decide OBJECT ENCODING alike
// on every node, and MEMORY USAGE's estimate is the same everywhere. A
// transaction through a follower answers its connection commands at their
// place (server/multi.go), MEMORY USAGE among the keyspace commands.
func TestClusterEncodingsAndMultiThroughFollower(t *testing.T) {
	c := RunClusterT(t, 3)
	f := c.Followers()
	a := dialRaw(t, c.Addr(f[0]))
	if raw, r := a.do("CONFIG", "SET", "hash-max-listpack-entries", "2"); r.IsError() {
		t.Fatal(raw)
	}
	want := []string{":3\r\n", "$9\r\nhashtable\r\n", "", "+OK\r\n", "*2\r\n$25\r\nhash-max-listpack-entries\r\n$1\r\n2\r\n", "$1\r\nx\r\n"}
	for _, cmd := range [][]string{{"MULTI"}, {"HSET", "h", "a", "1", "b", "2", "c", "3"}, {"OBJECT", "ENCODING", "h"},
		{"MEMORY", "USAGE", "h"}, {"CLIENT", "SETNAME", "x"}, {"CONFIG", "GET", "hash-max-listpack-entries"}, {"CLIENT", "GETNAME"},
		{"WAIT", "5", "0"}} { // five replicas never answer: outside MULTI this would wait for ever
		if raw, _ := a.do(cmd...); raw != "+OK\r\n" && raw != "+QUEUED\r\n" {
			t.Fatalf("%q: %q", cmd, raw)
		}
	}
	_, r := a.do("EXEC")
	if len(r.Elems) != len(want)+1 {
		t.Fatalf("EXEC: %v", r)
	}
	if w := r.Elems[len(want)]; w.Type != resp.Int || w.Int < 0 || w.Int > 2 {
		t.Errorf("WAIT inside EXEC: %v", w)
	}
	for i, w := range want {
		got := string(r.Elems[i].AppendProto(nil, 2))
		if i == 2 {
			if r.Elems[i].Type != resp.Int || r.Elems[i].Int <= 0 {
				t.Errorf("MEMORY USAGE in EXEC: %q", got)
			}
			continue
		}
		if got != w {
			t.Errorf("EXEC element %d: %q, want %q", i, got, w)
		}
	}
	usage := r.Elems[2].Int
	for i := range c.Nodes {
		b := dialRaw(t, c.Addr(i))
		deadline := time.Now().Add(10 * time.Second)
		for {
			enc, _ := b.do("OBJECT", "ENCODING", "h")
			_, mem := b.do("MEMORY", "USAGE", "h")
			if enc == "$9\r\nhashtable\r\n" && mem.Int == usage {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: OBJECT ENCODING %q, MEMORY USAGE %v (want hashtable, %d)", i, enc, mem, usage)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
