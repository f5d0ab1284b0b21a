package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// raftState is what INFO raft says of one member.
type raftState struct {
	term, changes, gone uint64
	err                 error
}

// raftTerms reads every cluster member's term and leader-change count,
// for each target that is a deadbolt cluster.
func raftTerms(ctx context.Context, targets []target) map[string][]raftState {
	out := make(map[string][]raftState)
	for _, t := range targets {
		for _, m := range t.members {
			out[t.name] = append(out[t.name], infoRaft(ctx, m))
		}
	}
	return out
}

func infoRaft(ctx context.Context, addr string) raftState {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rc.Close()
	ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := rc.Info(ictx, "raft").Result()
	if err != nil {
		return raftState{err: err}
	}
	var st raftState
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "raft_term":
			st.term, _ = strconv.ParseUint(v, 10, 64)
		case "raft_leader_changes":
			st.changes, _ = strconv.ParseUint(v, 10, 64)
		case "raft_leader_gone_elections":
			st.gone, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return st
}

// reportLeaderChanges prints, per cluster, whether any member's term
// moved while the cells ran: a planned run has none (issue 19 asks a
// 10-minute, 64-client run to show no unplanned leader change).
func reportLeaderChanges(ctx context.Context, w io.Writer, targets []target, before map[string][]raftState) {
	after := raftTerms(ctx, targets)
	for _, t := range targets {
		b, a := before[t.name], after[t.name]
		if len(b) == 0 || len(a) != len(b) {
			continue
		}
		var moved []string
		for i := range b {
			switch {
			case b[i].err != nil || a[i].err != nil:
				moved = append(moved, fmt.Sprintf("member %d: INFO raft failed (%v %v)", i+1, b[i].err, a[i].err))
			case a[i].term != b[i].term || a[i].changes != b[i].changes:
				moved = append(moved, fmt.Sprintf("member %d: term %d → %d, leader changes +%d, elections for a leader gone +%d",
					i+1, b[i].term, a[i].term, a[i].changes-b[i].changes, a[i].gone-b[i].gone))
			}
		}
		if len(moved) == 0 {
			fmt.Fprintf(w, "%s: no leader change while measuring (term %d on all %d members)\n", t.name, a[0].term, len(a))
			continue
		}
		fmt.Fprintf(w, "%s: LEADER CHANGED while measuring: %s\n", t.name, strings.Join(moved, "; "))
	}
}
