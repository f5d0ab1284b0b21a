package deadbolt

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testredis"
	"github.com/deadbolt/deadbolt/resp"
)

// pipelineRequest encodes commands as one RESP write.
func pipelineRequest(cmds [][]string) []byte {
	var b []byte
	for _, c := range cmds {
		args := make([]resp.Reply, len(c))
		for i, a := range c {
			args[i] = resp.BulkString(a)
		}
		b = resp.ArrayReply(args...).Append(b)
	}
	return b
}

// pipelineRaw sends cmds in one write on a new connection to addr and
// returns the replies, RESP2-encoded, in order.
func pipelineRaw(t *testing.T, addr string, cmds [][]string) []string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write(pipelineRequest(cmds)); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(nc)
	out := make([]string, len(cmds))
	for i := range cmds {
		r, err := resp.ReadReply(rd, 1<<20)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i, len(cmds), err)
		}
		out[i] = string(r.AppendProto(nil, 2))
	}
	return out
}

// A pipeline of writes with reads, errors, MULTI/EXEC and a script among
// them gets, from the leader and through a follower, the replies
// redis-server gives, in order; and a pipeline of writes is committed
// in far fewer log entries than commands.
func TestClusterPipelineLikeRedis(t *testing.T) {
	redisAddr := testredis.Start(t)
	c := RunClusterT(t, 3)
	leader := c.Leader()
	follower := c.Followers()[0]

	var cmds [][]string
	for i := 0; i < 300; i++ {
		cmds = append(cmds, []string{"RPUSH", "list", strconv.Itoa(i)})
		switch i % 50 {
		case 7:
			cmds = append(cmds, []string{"LPUSH", "str", "x"}) // WRONGTYPE: fails alone
		case 11:
			cmds = append(cmds, []string{"SET", "x"}) // arity: refused before the backend
		case 13:
			cmds = append(cmds, []string{"LLEN", "list"}) // a read sees the writes before it
		case 17:
			cmds = append(cmds, []string{"INCR", "n"}, []string{"INCRBY", "n", "notanumber"}, []string{"INCR", "n"})
		case 23:
			cmds = append(cmds, []string{"MULTI"}, []string{"INCR", "n"}, []string{"RPUSH", "list", "m"}, []string{"EXEC"})
		case 29:
			cmds = append(cmds, []string{"EVAL", "return redis.call('INCR', KEYS[1])", "1", "n"})
		case 31:
			cmds = append(cmds, []string{"SET", "str", strconv.Itoa(i)}, []string{"APPEND", "str", "-"}, []string{"GET", "str"})
		case 37:
			cmds = append(cmds, []string{"PING"}, []string{"NOSUCHCOMMAND"})
		}
	}
	cmds = append(cmds, []string{"LRANGE", "list", "0", "-1"}, []string{"GET", "n"})
	setup := [][]string{{"FLUSHALL"}, {"SET", "str", "s"}}

	pipelineRaw(t, redisAddr, setup)
	want := pipelineRaw(t, redisAddr, cmds)
	for _, i := range []int{leader, follower} {
		pipelineRaw(t, c.Addr(i), setup)
		before := c.Nodes[leader].raft.AppliedIndex()
		got := pipelineRaw(t, c.Addr(i), cmds)
		entries := c.Nodes[leader].raft.AppliedIndex() - before
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("node %d, command %d %q: got %q, redis-server %q", i, k, cmds[k], got[k], want[k])
			}
		}
		// 300 RPUSHes and some 30 other writes; a group ends at each of
		// the 24 reads, transactions and scripts, and wherever the
		// socket's bytes end.
		if entries > 120 {
			t.Errorf("node %d: %d log entries for %d commands: pipelined writes were not grouped", i, entries, len(cmds))
		}
		t.Logf("node %d: %d commands in %d log entries", i, len(cmds), entries)
	}
}

// A leader killed while clients pipeline writes through a follower and
// through the leader: every write acknowledged is applied exactly once,
// and the writes of a connection are applied in the order sent, whatever
// was retried.
func TestClusterPipelineLeaderKill(t *testing.T) {
	c := RunClusterT(t, 3)
	leader := c.Leader()
	follower := c.Followers()[0]

	type result struct {
		acked   []int // values acknowledged
		unknown []int // values whose outcome is unknown (error replies)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = map[string]*result{}
		stop    = make(chan struct{})
	)
	run := func(name, addr string) {
		defer wg.Done()
		res := &result{}
		mu.Lock()
		results[name] = res
		mu.Unlock()
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		rd := bufio.NewReader(nc)
		next := 0
		for round := 0; ; round++ {
			select {
			case <-stop:
				return
			default:
			}
			var cmds [][]string
			for k := 0; k < 200; k++ {
				cmds = append(cmds, []string{"RPUSH", name, strconv.Itoa(next + k)})
			}
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := nc.Write(pipelineRequest(cmds)); err != nil {
				return // the leader's connection, closed by the kill
			}
			for k := range cmds {
				r, err := resp.ReadReply(rd, 1<<20)
				mu.Lock()
				if err != nil {
					for ; k < len(cmds); k++ {
						res.unknown = append(res.unknown, next+k)
					}
					mu.Unlock()
					return
				}
				switch r.Type {
				case resp.Int:
					res.acked = append(res.acked, next+k)
				case resp.Error:
					res.unknown = append(res.unknown, next+k)
				default:
					t.Errorf("%s: unexpected reply %v", name, r)
				}
				mu.Unlock()
			}
			next += len(cmds)
		}
	}
	wg.Add(2)
	go run("via-follower", c.Addr(follower))
	go run("via-leader", c.Addr(leader))
	// Let some pipelines through, then kill the leader in the middle.
	waitFor(t, 20*time.Second, "pipelines to start", func() bool {
		n, _ := client(t, c.Addr(follower)).LLen(context.Background(), "via-follower").Result()
		return n >= 1000
	})
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(results["via-follower"].acked)
	}
	c.Kill(leader)
	nl := c.WaitNewLeader(leader)
	atKill := acked()
	waitFor(t, 30*time.Second, "pipelines through the follower after the kill", func() bool {
		return acked() >= atKill+2000
	})
	close(stop)
	wg.Wait()

	rc := client(t, c.Addr(nl))
	for name, res := range results {
		vals, err := rc.LRange(context.Background(), name, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		last := -1
		for _, v := range vals {
			n, _ := strconv.Atoi(v)
			if seen[n] {
				t.Fatalf("%s: %d applied twice", name, n)
			}
			if n <= last {
				t.Fatalf("%s: %d applied after %d", name, n, last)
			}
			seen[n], last = true, n
		}
		for _, n := range res.acked {
			if !seen[n] {
				t.Fatalf("%s: acknowledged %d is missing", name, n)
			}
		}
		t.Logf("%s: %d acknowledged, %d unknown, %d applied", name, len(res.acked), len(res.unknown), len(vals))
	}
}

// A pipelined write over --max-entry-bytes (default 1 MiB) is refused as
// it is when sent alone, on the leader and through a follower: a group's
// entry never carries more than the limit (a big command goes alone).
// Without the server's group bound and the backend's group check, the
// MSET followed by a PING was applied whole (found in review).
func TestClusterPipelineEntryLimit(t *testing.T) {
	c := RunClusterT(t, 3)
	v := strings.Repeat("v", 900<<10)
	small := strings.Repeat("s", 300<<10)
	for _, i := range []int{c.Leader(), c.Followers()[0]} {
		n := strconv.Itoa(i)
		alone := pipelineRaw(t, c.Addr(i), [][]string{{"MSET", "a1:" + n, v, "a2:" + n, v}})
		piped := pipelineRaw(t, c.Addr(i), [][]string{{"MSET", "p1:" + n, v, "p2:" + n, v}, {"PING"}})
		if !strings.HasPrefix(alone[0], "-ERR write refused") || !strings.HasPrefix(piped[0], "-ERR write refused") {
			t.Fatalf("node %d: 1.8 MiB MSET alone %.60q, pipelined %.60q: both must be refused", i, alone[0], piped[0])
		}
		// Writes each under the limit but over it together are taken,
		// each in an entry of its own size.
		many := pipelineRaw(t, c.Addr(i), [][]string{{"SET", "s1:" + n, small}, {"SET", "s2:" + n, small}, {"SET", "s3:" + n, small}, {"SET", "s4:" + n, small}, {"PING"}})
		for j, r := range many[:4] {
			if r != "+OK\r\n" {
				t.Fatalf("node %d: SET %d of 300 KiB in a pipeline: %.60q", i, j+1, r)
			}
		}
		got := pipelineRaw(t, c.Addr(i), [][]string{{"EXISTS", "p1:" + n}, {"STRLEN", "s4:" + n}})
		if got[0] != ":0\r\n" || got[1] != ":"+strconv.Itoa(len(small))+"\r\n" {
			t.Fatalf("node %d: EXISTS p1, STRLEN s4: %q", i, got)
		}
	}
}
