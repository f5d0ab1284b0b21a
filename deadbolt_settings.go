package deadbolt

import (
	"context"
	"fmt"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
)

// setNotify proposes the notify-keyspace-events of the configuration: at
// once on a single node; in a cluster, in the background until a leader
// takes it (a node that starts before the others has none yet).
func (n *Node) setNotify(cfg Config) error {
	if _, ok := fsm.ParseNotifyFlags(cfg.NotifyKeyspaceEvents); !ok {
		return fmt.Errorf("bad notify-keyspace-events %q: use the classes Ag$lshzxeKEtmdn", cfg.NotifyKeyspaceEvents)
	}
	cmd := fsm.SetConfigCommand("notify-keyspace-events", cfg.NotifyKeyspaceEvents)
	if n.local != nil {
		_, err := n.local.Apply(context.Background(), cmd)
		return err
	}
	go func() {
		for range 600 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			res, err := n.raft.Apply(ctx, cmd)
			cancel()
			if err == nil && !res.Reply.IsError() {
				return
			}
			select {
			case <-n.raft.Stopped():
				return
			case <-time.After(time.Second):
			}
		}
		if cfg.Logger != nil {
			cfg.Logger.Error("notify-keyspace-events: no leader took the setting in 10 minutes; set it with CONFIG SET")
		}
	}()
	return nil
}
