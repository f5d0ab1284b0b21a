package deadbolt

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAnnounceAddrRule(t *testing.T) {
	for _, tc := range []struct{ announce, listen, raft, want string }{
		{"", "127.0.0.1:6379", "127.0.0.1:7000", "127.0.0.1:6379"},
		{"", "0.0.0.0:6379", "10.0.0.5:7000", "10.0.0.5:6379"},
		{"", "[::]:6379", "[fd00::1]:7000", "[fd00::1]:6379"},
		{"", ":6379", "10.0.0.5:7000", "10.0.0.5:6379"},
		{"", "0.0.0.0:6379", "0.0.0.0:7000", "0.0.0.0:6379"}, // nothing better known
		{"db1.example:16379", "0.0.0.0:6379", "10.0.0.5:7000", "db1.example:16379"},
		{"203.0.113.7:6380", "127.0.0.1:6379", "127.0.0.1:7000", "203.0.113.7:6380"},
	} {
		if got := announceAddr(tc.announce, tc.listen, tc.raft); got != tc.want {
			t.Errorf("announceAddr(%q, %q, %q) = %q, want %q", tc.announce, tc.listen, tc.raft, got, tc.want)
		}
	}
	for a, ok := range map[string]bool{"": true, "10.0.0.5:6379": true, "db1:6379": true,
		"10.0.0.5": false, "0.0.0.0:6379": false, "[::]:6379": false, "10.0.0.5:0": false, "10.0.0.5:x": false} {
		if err := checkAnnounce(a); (err == nil) != ok {
			t.Errorf("checkAnnounce(%q) = %v", a, err)
		}
	}
	if _, err := Start(Config{Addr: "127.0.0.1:0", AnnounceAddr: "0.0.0.0:6379"}); err == nil || !strings.Contains(err.Error(), "0.0.0.0") {
		t.Errorf("Start with announce 0.0.0.0:6379: %v, want a refusal naming it", err)
	}
	// A single node names itself by it in Sentinel replies.
	n, err := Start(Config{Addr: "127.0.0.1:0", AnnounceAddr: "127.0.0.9:16000", MasterName: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addr, err := client(t, n.Addr()).Do(context.Background(), "sentinel", "get-master-addr-by-name", "m").StringSlice()
	if err != nil || !slices.Equal(addr, []string{"127.0.0.9", "16000"}) {
		t.Errorf("single node SENTINEL get-master-addr-by-name: %v %v", addr, err)
	}
}

// TestAnnounceAddrCluster: members with --announce-addr are named by it in
// ROLE, INFO replication, CLUSTER SLOTS and SENTINEL replies on every node
// (their listeners stay where they are: forwarding goes by Raft address).
func TestAnnounceAddrCluster(t *testing.T) {
	announced := func(i int) string { return fmt.Sprintf("127.0.0.9:%d", 16379+i) }
	c := runCluster(t, func(i int, cfg *Config) {
		cfg.AnnounceAddr = announced(i)
		cfg.MasterName = "mymaster"
	})
	l := c.WaitLeader()
	ctx := context.Background()
	for i := range c.Nodes {
		rc := client(t, c.Addr(i))
		role, err := rc.Do(ctx, "role").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if i == l {
			var got []string
			for _, r := range role[2].([]any) {
				e := r.([]any)
				got = append(got, e[0].(string)+":"+e[1].(string))
			}
			slices.Sort(got)
			var want []string
			for _, f := range c.Followers() {
				want = append(want, announced(f))
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("leader's ROLE replicas %v, want %v", got, want)
			}
			continue
		}
		if got := fmt.Sprintf("%v:%v", role[1], role[2]); got != announced(l) {
			t.Errorf("node %d ROLE names the master %s, want %s", i, got, announced(l))
		}
		info, err := rc.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := strings.Cut(announced(l), ":")
		if !strings.Contains(info, "master_host:"+host+"\r\n") || !strings.Contains(info, "master_port:"+port+"\r\n") {
			t.Errorf("node %d INFO replication does not name %s:\n%s", i, announced(l), info)
		}
		addr, err := rc.Do(ctx, "sentinel", "get-master-addr-by-name", "mymaster").StringSlice()
		if err != nil || len(addr) != 2 || addr[0]+":"+addr[1] != announced(l) {
			t.Errorf("node %d SENTINEL get-master-addr-by-name: %v %v, want %s", i, addr, err, announced(l))
		}
		// A write through a follower still reaches the leader.
		if err := rc.Set(ctx, fmt.Sprintf("k%d", i), "v", time.Minute).Err(); err != nil {
			t.Errorf("SET through follower %d: %v", i, err)
		}
	}
}
