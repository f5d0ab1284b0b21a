package cluster

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// teeConn records what a connection writes.
type teeConn struct {
	net.Conn
	mu  *sync.Mutex
	out *bytes.Buffer
}

func (c teeConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// A follower forwards commands unmarked (upgrade.go's unmarked): the
// leader decides the rule, and an older leader must be able to decode
// what it is sent. A command already marked (StartApply's and
// StartApplyGroup's retry after a lost leadership hands the decoded,
// marked command to Apply or ApplyGroup) goes out in envelope version 1
// without FoldFunctionNames, alone (Apply), as a group (ApplyGroup) and
// one by one (forwardEach). What the follower writes to the leader is read
// off its real connection (the member forwarder's dial, wrapped).
func TestFunctionRuleFollowerForwardsUnmarked(t *testing.T) {
	ctx := context.Background()
	c := startTestCluster(t, 3)
	li := c.leader(-1)
	l := c.nodes[li]
	if res, err := l.Apply(ctx, cmd("FUNCTION", "LOAD", ruleLibB)); err != nil || replyText(res.Reply) != "b" {
		t.Fatalf("FUNCTION LOAD: %v %v", res.Reply, err)
	}
	// The leader serves its members' connections as the server package
	// does for DEADBOLT.FORWARD (which cluster cannot import): HELLO, then
	// ServeForward.
	l.SetMemberServer(func(nc net.Conn) {
		defer nc.Close()
		rd := resp.NewReader(nc)
		for {
			args, err := rd.ReadCommand()
			if err != nil {
				return
			}
			r := resp.StatusReply("OK")
			if len(args) == 3 && string(args[0]) == ForwardCommand {
				r = ServeForward(ctx, l, args[1], args[2])
			}
			if _, err := nc.Write(r.AppendProto(nil, 3)); err != nil {
				return
			}
		}
	})
	f := c.nodes[(li+1)%3]
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	f.member.mu.Lock()
	dial := f.member.dial
	f.member.dial = func(ctx context.Context, addr string) (net.Conn, error) {
		nc, err := dial(ctx, addr)
		if err != nil {
			return nil, err
		}
		return teeConn{Conn: nc, mu: &mu, out: &out}, nil
	}
	for _, list := range f.member.idle { // so every forward dials anew
		for _, fc := range list {
			fc.nc.Close()
		}
	}
	f.member.idle = map[string][]*fwdConn{}
	f.member.mu.Unlock()

	marked := func(args ...string) fsm.Command {
		m := cmd(args...)
		m.FoldFunctionNames = true
		return m
	}
	if res, err := f.Apply(ctx, marked("FCALL", "Abc", "0")); err != nil || replyText(res.Reply) != "b" {
		t.Fatalf("Apply on the follower: %v %v", res.Reply, err)
	}
	if rs, err := f.ApplyGroup(ctx, []fsm.Command{marked("FCALL", "Abc", "0"), cmd("SET", "k", "v")}); err != nil || len(rs) != 2 {
		t.Fatalf("ApplyGroup on the follower: %v %v", rs, err)
	}
	if rs, err := f.forwardEach(ctx, func() string { a, _ := f.leaderRaftAddr(); return a }(), []fsm.Command{marked("FCALL", "Abc", "0")}); err != nil || len(rs) != 1 {
		t.Fatalf("forwardEach: %v %v", rs, err)
	}

	mu.Lock()
	sent := append([]byte(nil), out.Bytes()...)
	mu.Unlock()
	rd := resp.NewReader(bytes.NewReader(sent))
	forwards := 0
	for {
		args, err := rd.ReadCommand()
		if err != nil {
			break
		}
		if len(args) != 3 || string(args[0]) != ForwardCommand {
			continue
		}
		var envs [][]byte
		if string(args[1]) == modeGroup {
			r := envReader{b: args[2][1:]}
			for range r.count() {
				envs = append(envs, r.bytes())
			}
		} else {
			envs = [][]byte{args[2]}
		}
		for _, env := range envs {
			e, err := DecodeEntry(env)
			if err != nil {
				t.Fatalf("forwarded %q: %v", env, err)
			}
			forwards++
			if env[0] != 1 || e.Cmd.FoldFunctionNames {
				t.Errorf("the follower forwarded %q (mode %s) in envelope version %d, marked %v; want 1, unmarked",
					e.Cmd.Args, args[1], env[0], e.Cmd.FoldFunctionNames)
			}
		}
	}
	if forwards != 4 {
		t.Errorf("read %d forwarded commands off the follower's connections, want 4", forwards)
	}
	c.converged()
}
