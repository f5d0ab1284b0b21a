package deadbolt

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
)

// setSettings proposes the replicated settings of the configuration
// (notify-keyspace-events, maxmemory): at once on a single node; in a
// cluster, in the background until a leader takes them (a node that starts
// before the others has none yet).
func (n *Node) setSettings(cfg Config) error {
	var cmds []fsm.Command
	if cfg.NotifyKeyspaceEvents != "" {
		if _, ok := fsm.ParseNotifyFlags(cfg.NotifyKeyspaceEvents); !ok {
			return fmt.Errorf("bad notify-keyspace-events %q: use the classes Ag$lshzxeKEtmdn", cfg.NotifyKeyspaceEvents)
		}
		cmds = append(cmds, fsm.SetConfigCommand("notify-keyspace-events", cfg.NotifyKeyspaceEvents))
	}
	if cfg.MaxMemory > 0 {
		cmds = append(cmds, fsm.SetConfigCommand("maxmemory", strconv.FormatInt(cfg.MaxMemory, 10)))
	}
	if n.local != nil {
		for _, cmd := range cmds {
			if _, err := n.local.Apply(context.Background(), cmd); err != nil {
				return err
			}
		}
		return nil
	}
	go func() {
		for _, cmd := range cmds {
			if !n.proposeSetting(cmd) {
				if cfg.Logger != nil {
					cfg.Logger.Error(string(cmd.Args[1]) + ": no leader took the setting in 10 minutes; set it with CONFIG SET")
				}
				return
			}
		}
	}()
	return nil
}

// proposeSetting retries cmd until a leader applies it (for ten minutes),
// or the node stops; it reports whether it was applied.
func (n *Node) proposeSetting(cmd fsm.Command) bool {
	for range 600 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := n.raft.Apply(ctx, cmd)
		cancel()
		if err == nil && !res.Reply.IsError() {
			return true
		}
		select {
		case <-n.raft.Stopped():
			return true // nothing to report: the node is stopping
		case <-time.After(time.Second):
		}
	}
	return false
}
