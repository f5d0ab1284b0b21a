package cluster

import (
	"context"
	"errors"

	"github.com/deadbolt/deadbolt/fsm"
)

// Scripts on a full disk. Redis 7.0 refuses only commands flagged write
// while it cannot persist, and a script without a shebang is not flagged
// write: it runs, and a write command it calls raises the MISCONF error
// (script.c, scriptVerifyWriteCommandAllow). A no-writes script or
// function, EVAL_RO and FCALL_RO of one run too (fsm.RunsWhileWritesRefused).
// deadbolt proposes every script
// command through the log, so without this a leader that refuses writes
// for want of space would refuse a script that only reads.
//
// So a script command that diskRefusal refuses, and that Redis would run
// (fsm.RunsWhileWritesRefused), is served as a read on this leader: with
// the read confirmation every read has (readIndex), at the leader's time,
// under the state machine's lock as applying is. A write command the
// script calls gets the same MISCONF error a client's write gets here
// (fsm.ReadWritesRefused); nothing is proposed, so nothing is written.
// A follower forwards the command as it forwards any script, and the
// leader answers it so.

// scriptCommand reports whether cmd is one of the script commands that
// may run while writes are refused (SCRIPT LOAD of a cached script too) (a cheap test on the name; the state
// machine decides by the script's flags).
func scriptCommand(cmd fsm.Command) bool {
	if len(cmd.Args) == 0 {
		return false
	}
	spec, ok := fsm.Lookup(cmd.Args[0])
	return ok && spec.Flags&fsm.Scripting != 0
}

// whileWritesRefused answers cmd, which diskRefusal refused with refusal:
// a script Redis would run is served as a read; anything else gets the
// refusal, counted.
func (n *Node) whileWritesRefused(ctx context.Context, cmd fsm.Command, refusal error) (fsm.Result, error) {
	var re replyError
	if !scriptCommand(cmd) || !errors.As(refusal, &re) {
		n.disk.refused.Add(1)
		return fsm.Result{}, refusal
	}
	if err := n.readIndex(ctx); err != nil {
		return fsm.Result{}, err
	}
	ts, ok := n.stamp()
	if !ok {
		return fsm.Result{}, ErrNotLeader
	}
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	if !n.state.RunsWhileWritesRefused(cmd) {
		n.disk.refused.Add(1)
		return fsm.Result{}, refusal
	}
	return n.state.ReadWritesRefused(ts, cmd, re.msg), nil
}
