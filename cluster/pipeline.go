package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// Pipelined writes. A client that sends many writes without waiting for
// the replies (a pipeline) gets them applied in the order sent, and each
// sees the effect of those before it. One write at a time per connection
// keeps that order but costs a log entry, a commit round and the loop's
// wake-up per command. The server instead hands a connection's run of
// pipelined writes over as a group: the group is one proposal, taken
// whole into one log entry (with other connections' commands around it),
// so its commands are applied in order, next to each other, and every one
// gets its own result (a command that fails, WRONGTYPE say, fails alone).
//
// A group shares its fate before it is applied: it is proposed whole or
// not at all. When it was not proposed (this node lost leadership first,
// or the proposer stopped), nothing of it was applied and it is tried
// again whole, through the new leader, as a lone command is (route); the
// connection sends nothing after it meanwhile, so a retry cannot overtake
// a later command nor follow one. When its entry's outcome is unknown
// (leadership lost after it was proposed, or the timeout), every command
// of the group gets "outcome unknown", as a lone command would; none is
// retried, so none is applied twice.

// modeGroup forwards a group: the envelope is a batch of the group's
// commands, and the answer an array of the usual four-element answers,
// one per command, in order.
const modeGroup = "g"

// GroupTarget is a ForwardTarget that also applies forwarded groups.
type GroupTarget interface {
	ApplyGroupLocal(ctx context.Context, cmds []fsm.Command) ([]fsm.Result, error)
}

// StartApplyGroup proposes cmds as one group without waiting, when this
// node can (as StartApply: the leader, ready in its term); done then gets
// one result per command, in order, or one error for the whole group,
// exactly once, from another goroutine. A group refused before it was
// proposed is retried whole through ApplyGroup. cmds are encoded before
// StartApplyGroup returns.
func (n *Node) StartApplyGroup(cmds []fsm.Command, done func([]fsm.Result, error)) bool {
	if n.removed() || !n.IsLeader() {
		return false
	}
	ts, ok := n.stamp()
	if !ok {
		return false
	}
	if err := n.refuseGroup(cmds); err != nil {
		go done(nil, err)
		return true
	}
	envs := n.groupEnvelopes(ts, cmds)
	start := time.Now()
	n.prop.enqueue(&proposal{group: envs, at: start, cb: func(o outcome) {
		if o.err == nil || !retryable(o.err) {
			done(o.group, o.err)
			return
		}
		if time.Since(start) >= n.cfg.CommandTimeout {
			done(nil, ErrNoLeader)
			return
		}
		go func() {
			again, err := decodeGroup(envs)
			if err != nil {
				done(nil, err)
				return
			}
			done(n.ApplyGroup(context.Background(), again))
		}()
	}})
	return true
}

// ApplyGroup commits cmds as one group and returns their results, in
// order; on a follower it forwards the group to the leader.
func (n *Node) ApplyGroup(ctx context.Context, cmds []fsm.Command) ([]fsm.Result, error) {
	if err := n.checkGroupSize(cmds); err != nil { // before forwarding, as Apply
		return nil, err
	}
	var out []fsm.Result
	_, err := n.route(ctx, func(ctx context.Context) (fsm.Result, error) {
		rs, err := n.ApplyGroupLocal(ctx, cmds)
		out = rs
		return fsm.Result{}, err
	}, func(ctx context.Context, addr string) (fsm.Result, error) {
		rs, err := n.forwardGroup(ctx, addr, cmds)
		out = rs
		return fsm.Result{}, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ApplyGroupLocal proposes cmds as one group on this node, which must be
// the leader, and waits for their results. It never forwards.
func (n *Node) ApplyGroupLocal(ctx context.Context, cmds []fsm.Command) ([]fsm.Result, error) {
	ts, ok := n.stamp()
	if !ok {
		return nil, ErrNotLeader
	}
	if err := n.refuseGroup(cmds); err != nil {
		return nil, err
	}
	o := n.prop.await(ctx, &proposal{group: n.groupEnvelopes(ts, cmds), done: make(chan outcome, 1)})
	if o.err != nil {
		return nil, o.err
	}
	if len(o.group) != len(cmds) {
		return nil, ErrUnknownOutcome
	}
	return o.group, nil
}

// refuseGroup is refuseWrite for a group: a write refused (the disk is
// short of space) refuses the group, whose other commands were not
// applied either; and so does a group whose entry would be over the
// node's --max-entry-bytes (checkGroupSize).
func (n *Node) refuseGroup(cmds []fsm.Command) error {
	if err := n.checkGroupSize(cmds); err != nil {
		return err
	}
	for _, cmd := range cmds {
		if err := n.refuseWrite(cmd); err != nil {
			return err
		}
	}
	return nil
}

// checkGroupSize refuses a group whose commands' envelopes together are
// over the node's entry limit (bigentry.go), as Apply refuses one command.
// The server keeps groups well under it (server/pipeline.go), so this
// refuses only a group from a member with another limit, whole. Each is
// measured as the leader writes it (withRule: a folding command's flags
// add a byte).
func (n *Node) checkGroupSize(cmds []fsm.Command) error {
	size := 0
	for _, cmd := range cmds {
		size += EntrySize(Entry{Cmd: n.withRule(cmd)})
	}
	return n.checkEntrySize(size)
}

func (n *Node) groupEnvelopes(ts int64, cmds []fsm.Command) [][]byte {
	envs := make([][]byte, len(cmds))
	for i, cmd := range cmds {
		envs[i] = AppendEntry(nil, Entry{Time: ts, Cmd: n.withRule(cmd)}) // upgrade.go
	}
	return envs
}

func decodeGroup(envs [][]byte) ([]fsm.Command, error) {
	cmds := make([]fsm.Command, len(envs))
	for i, env := range envs {
		e, err := DecodeEntry(env)
		if err != nil {
			return nil, err
		}
		cmds[i] = e.Cmd
	}
	return cmds, nil
}

// forwardGroup sends a group to the leader at addr. A leader from before
// groups answers that it does not know the mode, having done nothing: the
// commands then go one by one, in order, each with its own outcome.
func (n *Node) forwardGroup(ctx context.Context, addr string, cmds []fsm.Command) ([]fsm.Result, error) {
	f := n.member
	c, err := f.get(ctx, addr)
	if err != nil {
		return nil, ErrNoLeader // nothing was sent
	}
	envs := make([][]byte, len(cmds))
	for i, cmd := range cmds {
		envs[i] = AppendEntry(nil, Entry{Cmd: unmarked(cmd)}) // upgrade.go
	}
	r, err := c.roundTrip(ctx, [][]byte{[]byte(ForwardCommand), []byte(modeGroup), AppendBatch(nil, envs...)})
	if err != nil {
		c.nc.Close()
		return nil, ErrUnknownOutcome
	}
	f.put(addr, c)
	if r.Type == resp.Error {
		msg := string(r.Str)
		switch {
		case strings.HasPrefix(msg, "TRYAGAIN"):
			return nil, ErrNotLeader
		case msg == errUnknownMode, strings.HasPrefix(msg, "ERR "+ErrBadEnvelope.Error()):
			// A leader from before groups: it decoded no command.
			return n.forwardEach(ctx, addr, cmds)
		}
		return nil, replyError{msg}
	}
	if r.Type != resp.Array || len(r.Elems) != len(cmds) {
		return nil, ErrUnknownOutcome // applied, but the answer is not one to read
	}
	out := make([]fsm.Result, len(cmds))
	for i, e := range r.Elems {
		if e.Type != resp.Array || len(e.Elems) != 4 {
			return nil, fmt.Errorf("cluster: malformed forward reply")
		}
		idx, _ := strconv.ParseUint(string(e.Elems[3].Str), 10, 64)
		out[i] = fsm.Result{Reply: e.Elems[0], DB: int(e.Elems[1].Int), Receivers: int(e.Elems[2].Int), LogIndex: idx}
	}
	return out, nil
}

// forwardEach forwards cmds one by one, in order, to a leader that
// applies no groups. A command's error becomes its reply. Once one's
// outcome is unknown, or it was refused for want of a leader, nothing
// more is sent (a later command could overtake it): the rest are
// answered TRYAGAIN, not having been applied.
func (n *Node) forwardEach(ctx context.Context, addr string, cmds []fsm.Command) ([]fsm.Result, error) {
	out := make([]fsm.Result, len(cmds))
	var stop error
	for i, cmd := range cmds {
		if stop != nil {
			out[i] = fsm.Result{Reply: resp.Err(ErrNoLeader.msg), DB: cmd.DB}
			continue
		}
		res, err := n.member.forward(ctx, addr, modeApply, cmd)
		if err != nil {
			var re replyError
			if !errors.As(err, &re) {
				re = ErrUnknownOutcome // a malformed answer: it was applied
			}
			if re == ErrUnknownOutcome || retryable(re) {
				stop = re
			}
			res = fsm.Result{Reply: resp.Err(re.msg), DB: cmd.DB}
		}
		out[i] = res
	}
	return out, nil
}

// errUnknownMode is a leader's answer to a forward mode it does not know.
const errUnknownMode = "ERR unknown forward mode"

// serveGroup answers a forwarded group on the leader.
func serveGroup(ctx context.Context, t ForwardTarget, envelope []byte) resp.Reply {
	gt, ok := t.(GroupTarget)
	if !ok {
		return resp.Err(errUnknownMode)
	}
	es, err := DecodeEntries(envelope)
	if err != nil {
		return resp.Err("ERR " + err.Error())
	}
	cmds := make([]fsm.Command, len(es))
	for i, e := range es {
		cmds[i] = e.Cmd
	}
	rs, err := gt.ApplyGroupLocal(ctx, cmds)
	if err != nil {
		var re replyError
		if errors.As(err, &re) {
			return resp.Err(re.msg)
		}
		return resp.Err("ERR " + err.Error())
	}
	out := make([]resp.Reply, len(rs))
	for i, res := range rs {
		out[i] = resp.ArrayReply(res.Reply, resp.IntReply(int64(res.DB)), resp.IntReply(int64(res.Receivers)),
			resp.BulkString(strconv.FormatUint(res.LogIndex, 10)))
	}
	return resp.ArrayReply(out...)
}
