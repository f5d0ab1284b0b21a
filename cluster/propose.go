package cluster

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Errors at the cluster boundary, each with the reply a Redis client
// understands. Raft's errors are translated here, once.
var (
	// ErrNoLeader: no leader could be reached in time. Nothing was
	// applied; clients retry on TRYAGAIN.
	ErrNoLeader = replyError{"TRYAGAIN no leader is available; try again"}
	// ErrNotLeader: this node is not the leader, and the command was not
	// proposed. Safe to retry anywhere.
	ErrNotLeader = replyError{"TRYAGAIN this node is not the leader"}
	// ErrUnknownOutcome: the command was proposed, but leadership was lost
	// (or time ran out) before it was known to be committed. It may or may
	// not have been applied; the error says so and is not retryable.
	ErrUnknownOutcome = replyError{"ERR outcome unknown: leadership changed or timed out after the command was proposed; it may have been applied"}
	// ErrRemoved: this node is no longer a member.
	ErrRemoved = replyError{"ERR this node was removed from the cluster"}
	// ErrShutdown: the node is stopping.
	ErrShutdown = replyError{"ERR node is shutting down"}
)

type replyError struct{ msg string }

func (e replyError) Error() string      { return e.msg }
func (e replyError) RedisError() string { return e.msg }

// retryable reports whether err guarantees the command was not applied.
func retryable(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader)
}

// Apply commits a command through the log and returns its result. On a
// follower it forwards the command to the leader.
func (n *Node) Apply(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	if err := n.checkEntrySize(EntrySize(Entry{Cmd: cmd})); err != nil {
		return fsm.Result{}, err // before forwarding it (bigentry.go)
	}
	var env []byte // encoded once, for every try that forwards it
	return n.route(ctx, func(ctx context.Context) (fsm.Result, error) { return n.ApplyLocal(ctx, cmd) },
		func(ctx context.Context, addr string) (fsm.Result, error) {
			if env == nil {
				env = AppendEntry(nil, Entry{Cmd: unmarked(cmd)}) // upgrade.go
			}
			res, err := n.member.forwardEnv(ctx, addr, modeApply, env)
			if err == nil {
				res.Receivers += n.ownReceivers(cmd)
			}
			return res, err
		})
}

// ReceiverCounter is implemented by a Deliverer that can count the
// subscribers a message would reach on this node.
type ReceiverCounter interface {
	Receivers(channel []byte, shard bool) int
}

// ownReceivers counts, for a PUBLISH or SPUBLISH this follower forwarded,
// its own subscribers that the message reaches when this node applies it:
// the leader counted only its own, and a client of this node expects this
// node's subscribers in the count, as a Redis Cluster node counts its own.
func (n *Node) ownReceivers(cmd fsm.Command) int {
	rc, ok := n.cfg.Deliver.(ReceiverCounter)
	if !ok || len(cmd.Args) != 3 {
		return 0
	}
	switch {
	case strings.EqualFold(string(cmd.Args[0]), "publish"):
		return rc.Receivers(cmd.Args[1], false)
	case strings.EqualFold(string(cmd.Args[0]), "spublish"):
		return rc.Receivers(cmd.Args[1], true)
	}
	return 0
}

// Read serves a read-only command linearizably: on the leader once its
// leadership is confirmed and its commit index applied (readIndex), on a
// follower from its own state at a read point the leader gives it
// (followerread.go).
func (n *Node) Read(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	return n.route(ctx, func(ctx context.Context) (fsm.Result, error) { return n.ReadLocal(ctx, cmd) },
		func(ctx context.Context, addr string) (fsm.Result, error) {
			return n.followerRead(ctx, addr, cmd) // followerread.go
		})
}

// KeyVersion returns a key's version for WATCH, linearizably.
func (n *Node) KeyVersion(ctx context.Context, db int, key string) (uint64, error) {
	cmd := fsm.Command{DB: db, Args: [][]byte{[]byte(key)}}
	res, err := n.route(ctx, func(ctx context.Context) (fsm.Result, error) {
		v, err := n.KeyVersionLocal(ctx, db, key)
		return fsm.Result{LogIndex: v}, err
	}, func(ctx context.Context, addr string) (fsm.Result, error) {
		return n.member.forward(ctx, addr, modeVersion, cmd)
	})
	return res.LogIndex, err
}

// route runs local on the leader or remote against the leader's client
// address, waiting a bounded time for a leader: it tries again when a
// leadership event comes (leaderEvents), or after a backoff. It retries
// only errors that guarantee nothing was applied.
func (n *Node) route(ctx context.Context, local func(context.Context) (fsm.Result, error), remote func(context.Context, string) (fsm.Result, error)) (fsm.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CommandTimeout)
	defer cancel()
	const firstBackoff = 2 * time.Millisecond
	backoff := firstBackoff
	// event is taken before each retry, so that an event during the try
	// is not missed: a new leader ends the wait at once. The first try,
	// which usually succeeds, takes none (a nil channel never fires; its
	// wait, if it fails, is the first backoff).
	var event <-chan struct{}
	for try := 0; ; try++ {
		if try > 0 {
			event = n.leaderEvents()
		}
		if n.removed() {
			return fsm.Result{}, ErrRemoved
		}
		var (
			res fsm.Result
			err error
		)
		if n.IsLeader() {
			res, err = local(ctx)
		} else if addr, ok := n.leaderRaftAddr(); ok {
			res, err = remote(ctx, addr)
		} else {
			err = ErrNoLeader
		}
		if err == nil || !retryable(err) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return fsm.Result{}, ErrNoLeader
		case <-n.stop:
			return fsm.Result{}, ErrShutdown
		case <-event:
			backoff = firstBackoff
			continue
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// ApplyLocal proposes a command on this node, which must be the leader. It
// never forwards (the receiving end of forwarding calls it). The command
// shares a log entry with those proposed at the same moment (batch.go).
func (n *Node) ApplyLocal(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	ts, ok := n.stamp()
	if !ok {
		return fsm.Result{}, ErrNotLeader
	}
	cmd = n.withRule(cmd)
	if err := n.refuseNewFormat(cmd); err != nil { // upgrade.go
		return fsm.Result{}, err
	}
	if err := n.diskRefusal(cmd); err != nil {
		return n.whileWritesRefused(ctx, cmd, err) // scriptsrefused.go
	}
	if res, refused := n.refuseForMemory(cmd); refused {
		return res, nil
	}
	if err := n.checkEntrySize(EntrySize(Entry{Time: ts, Cmd: cmd})); err != nil {
		return fsm.Result{}, err
	}
	return n.prop.propose(ctx, AppendEntry(nil, Entry{Time: ts, Cmd: cmd}))
}

// StartApply proposes cmd without waiting, when this node can: it must be
// the leader, ready in its term (server.AsyncApplier). done then gets the
// outcome exactly once, from another goroutine. A refusal that guarantees
// the command was not applied (leadership lost before it was proposed) is
// retried through Apply, which forwards to the new leader or waits for one,
// as a waiting caller's would be. cmd is encoded before StartApply returns.
// It returns false, having done nothing, when the caller should use Apply
// instead (a follower, a removed node, a leader not ready yet). Like Apply
// it is bounded by the node's CommandTimeout: a command still queued then
// gets ErrNoLeader, one proposed and not answered ErrUnknownOutcome (the
// proposer's sweeper).
func (n *Node) StartApply(cmd fsm.Command, done func(fsm.Result, error)) bool {
	if n.removed() || !n.IsLeader() {
		return false
	}
	ts, ok := n.stamp()
	if !ok {
		return false
	}
	cmd = n.withRule(cmd)
	if err := n.refuseNewFormat(cmd); err != nil { // upgrade.go
		go done(fsm.Result{}, err)
		return true
	}
	if err := n.diskRefusal(cmd); err != nil {
		if scriptCommand(cmd) {
			return false // Apply serves it as a read, waiting (scriptsrefused.go)
		}
		n.disk.refused.Add(1)
		go done(fsm.Result{}, err)
		return true
	}
	if res, refused := n.refuseForMemory(cmd); refused {
		go done(res, nil)
		return true
	}
	if err := n.checkEntrySize(EntrySize(Entry{Time: ts, Cmd: cmd})); err != nil {
		go done(fsm.Result{}, err)
		return true
	}
	env := AppendEntry(nil, Entry{Time: ts, Cmd: cmd})
	n.prop.enqueue(&proposal{env: env, at: time.Now(), applyDone: done, node: n})
	return true
}

// applyOutcome answers a command StartApply proposed: its outcome, or, if
// the proposal could be retried (no leader took it), the command again by
// Apply, which waits for a leader, unless the command has waited its
// CommandTimeout already (the proposer's sweeper gave up on it: as
// route's deadline).
func (n *Node) applyOutcome(pr *proposal, o outcome) {
	done := pr.applyDone
	if o.err == nil || !retryable(o.err) {
		done(o.res, o.err)
		return
	}
	if time.Since(pr.at) >= n.cfg.CommandTimeout {
		done(fsm.Result{}, ErrNoLeader)
		return
	}
	env := pr.env
	go func() {
		e, err := DecodeEntry(env)
		if err != nil {
			done(fsm.Result{}, err)
			return
		}
		done(n.Apply(context.Background(), e.Cmd))
	}()
}

// readIndex makes a read on this leader linearizable without a log entry
// (readindex.go): it notes the commit index, has a quorum of voters confirm,
// in answers to a message sent after the read began, that this node still
// leads them in its term, and returns once this node has applied the noted
// index. raft's VerifyLeader is not enough for that: it counts the
// answers to heartbeats and appends already in flight when it is called,
// so a leader paused for a while (a stopped process, a stalled VM)
// counts, once resumed, a follower's answer given before the pause and
// before a newer leader was elected. `make chaos` caught a read that
// missed two acknowledged appends that way (a paused leader, resumed).
// Until 2026-11-25 a read committed a tick through the log instead, which
// cost it a write.
//
// The leader is ready (stamp): it has committed an entry of its own term,
// so its commit index covers every entry committed before it led.
// The only voter of a cluster has no one to lose its leadership to: its
// reads wait only for what it has committed to be applied.
func (n *Node) readIndex(ctx context.Context) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	if n.soleVoter() {
		if err := n.fsm.waitApplied(ctx, n.raft.CommitIndex()); err != nil {
			return ErrNoLeader
		}
		return nil
	}
	n.tmu.Lock()
	ready, term := n.lead.ready, n.lead.term
	n.tmu.Unlock()
	if !ready {
		return ErrNotLeader
	}
	index := n.raft.CommitIndex()
	if n.confirm.leased(term) {
		// --read-mode lease (lease.go): no other leader before it ends.
	} else if err := n.confirm.confirm(ctx, term); err != nil {
		return ErrNoLeader // nothing was changed: the read may be retried
	}
	if err := n.fsm.waitApplied(ctx, index); err != nil {
		return ErrNoLeader
	}
	return nil
}

// soleVoter reports whether this node is the only voter of its latest
// configuration.
func (n *Node) soleVoter() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	servers := f.Configuration().Servers
	voters := 0
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			voters++
			if string(s.ID) != n.cfg.ID {
				return false
			}
		}
	}
	return voters == 1
}

// ReadLocal serves a read on this node, which must be the leader.
func (n *Node) ReadLocal(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	if err := n.readIndex(ctx); err != nil {
		return fsm.Result{}, err
	}
	return n.readNow(cmd)
}

// KeyVersionLocal answers WATCH on this node, which must be the leader.
func (n *Node) KeyVersionLocal(ctx context.Context, db int, key string) (uint64, error) {
	if err := n.readIndex(ctx); err != nil {
		return 0, err
	}
	ts, ok := n.stamp()
	if !ok {
		return 0, ErrNotLeader
	}
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.state.KeyVersion(db, key, ts), nil
}

// register publishes this node's client address through the log, so the
// others can forward to it and name it in discovery answers.
func (n *Node) register() {
	addr := n.RESPAddr()
	if addr == "" {
		return
	}
	n.fsm.mu.Lock()
	cur, ok := n.state.NodeAddr(n.cfg.ID)
	n.fsm.mu.Unlock()
	if ok && cur == addr {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.CommandTimeout)
	defer cancel()
	if _, err := n.Apply(ctx, fsm.NodeCommand(n.cfg.ID, addr)); err != nil {
		n.cfg.Logger.Warn("registering client address failed", "err", err)
	}
}

// removed reports whether this node has been removed from the cluster:
// told so by the leader, or out of the newest configuration it has (kept
// current by membershipLoop).
func (n *Node) removed() bool { return n.toldRemoved.Load() || n.outOfConfig.Load() }
