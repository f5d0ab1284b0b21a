package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// termWatch follows the cluster's Raft term (SENTINEL MASTER's
// config-epoch, the highest any running node reports) so that the runner
// can tell the leader change it caused from unplanned ones: an election
// while no node was killed means the leader lost its followers for a
// heartbeat timeout (on a loaded machine: starved of CPU), and clients then
// see errors no matter what they are.
type termWatch struct {
	mu      sync.Mutex
	term    uint64
	changes []termChange
	planned []window
}

type termChange struct {
	at       time.Time
	from, to uint64
}

type window struct{ from, to time.Time }

func (tc termChange) String() string {
	return fmt.Sprintf("term %d→%d at %s", tc.from, tc.to, tc.at.Format("15:04:05.000"))
}

// watch polls every 100 ms until ctx ends.
func (w *termWatch) watch(ctx context.Context, cl *cluster) {
	clients := map[string]*redis.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		var best uint64
		for _, n := range cl.nodes {
			if !n.running() {
				continue
			}
			c := clients[n.sentinel]
			if c == nil {
				c = redis.NewClient(&redis.Options{Addr: n.sentinel, Protocol: 2, MaxRetries: -1,
					DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
				clients[n.sentinel] = c
			}
			kv, err := c.Do(ctx, "SENTINEL", "MASTER", "mymaster").StringSlice()
			if err != nil {
				continue
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == "config-epoch" {
					if v, err := strconv.ParseUint(kv[i+1], 10, 64); err == nil && v > best {
						best = v
					}
				}
			}
		}
		w.mu.Lock()
		if best > w.term {
			if w.term != 0 {
				w.changes = append(w.changes, termChange{at: time.Now(), from: w.term, to: best})
			}
			w.term = best
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// plan marks [from, to] as a time when the runner itself changes the
// leader.
func (w *termWatch) plan(from, to time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.planned = append(w.planned, window{from, to})
}

// unplanned returns the term changes outside planned windows that fell
// between from and to (to zero: until now).
func (w *termWatch) unplanned(from, to time.Time) []termChange {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []termChange
	for _, c := range w.changes {
		if c.at.Before(from) || (!to.IsZero() && c.at.After(to)) {
			continue
		}
		planned := false
		for _, p := range w.planned {
			planned = planned || (!c.at.Before(p.from) && !c.at.After(p.to))
		}
		if !planned {
			out = append(out, c)
		}
	}
	return out
}

func describe(cs []termChange) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.String())
	}
	return strings.Join(s, ", ")
}
