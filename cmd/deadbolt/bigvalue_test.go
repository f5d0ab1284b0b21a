//go:build linux

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// peakRSS is a process's peak resident memory (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 { return procStatusKB(t, pid, "VmHWM") << 10 }

// TestProcessBigValuesBoundedMemory runs three real deadbolt processes on
// disk with the default --max-entry-bytes and writes values at the limit
// through every node (the leader, and both followers, which forward), then
// values over it (32 times, which the node drops as they arrive, and just
// over, which it reads and then refuses), and transactions over it. Every
// value at the limit is stored and reads back on every node; every write
// over it is refused with the error naming the limit, and nothing of it
// is stored; and no process's peak resident memory exceeds 64 MiB plus 48
// times the limit (63-79 MiB measured; the margin is for a loaded machine,
// where the collector may lag). The build before the limit took each node
// to 1.6-2.0 GiB here (DEADBOLT_PLAIN_BIN=that binary).
func TestProcessBigValuesBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const limit = 1 << 20 // the default of --max-entry-bytes
	bin := buildPlainBinary(t)
	procs := startProcs(t, bin, "m", 3)
	ctx := context.Background()
	clients := make([]*redis.Client, len(procs))
	for i, p := range procs {
		clients[i] = redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
		defer clients[i].Close()
	}
	// Every node takes a small write: a leader is elected, and each knows it.
	deadline := time.Now().Add(30 * time.Second)
	for i, c := range clients {
		for c.Set(ctx, fmt.Sprint("warm", i), "x", 0).Err() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("%s took no write within 30 s", procs[i].id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if v, err := clients[0].ConfigGet(ctx, "max-entry-bytes").Result(); err != nil || v["max-entry-bytes"] != "1mb" {
		t.Errorf("CONFIG GET max-entry-bytes: %v %v, want 1mb", v, err)
	}
	leader, err := leaderOf(ctx, procs)
	if err != nil {
		t.Fatal(err)
	}
	// The envelope of SET key value is the value and a few bytes more.
	atLimit := strings.Repeat("v", limit-64)
	over := strings.Repeat("o", 32*limit)  // dropped as it arrives (resp.Reader.SkipAbove)
	justOver := strings.Repeat("j", limit) // kept, and refused by the entry's size
	for round := range 3 {
		for i, c := range clients {
			key := fmt.Sprintf("big:%d:%d", i, round)
			if err := c.Set(ctx, key, atLimit, 0).Err(); err != nil {
				t.Fatalf("SET of %d bytes through %s (leader %s): %v", len(atLimit), procs[i].id, procs[leader].id, err)
			}
			for _, v := range []string{over, justOver} {
				err := c.Set(ctx, "over:"+key, v, 0).Err()
				if err == nil || !strings.HasPrefix(err.Error(), "ERR write refused: ") || !strings.Contains(err.Error(), fmt.Sprintf("max-entry-bytes %d", limit)) {
					t.Errorf("SET of %d bytes through %s: %v, want the max-entry-bytes refusal", len(v), procs[i].id, err)
				}
			}
			// MULTI/EXEC: one entry for the whole transaction.
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "over:"+key, atLimit[:limit/2], 0)
				p.Set(ctx, "over:"+key+":b", atLimit[:limit/2], 0)
				return nil
			})
			if err == nil || !strings.HasPrefix(err.Error(), "ERR write refused: ") {
				t.Errorf("MULTI of two SETs of %d bytes through %s: %v, want the max-entry-bytes refusal", limit/2, procs[i].id, err)
			}
		}
	}
	// Each node holds every value at the limit and none over it (a read
	// through any node is linearizable: the leader answers it).
	for i, c := range clients {
		for j := range clients {
			for round := range 3 {
				key := fmt.Sprintf("big:%d:%d", j, round)
				if n, err := c.StrLen(ctx, key).Result(); err != nil || n != int64(len(atLimit)) {
					t.Errorf("STRLEN %s on %s: %d %v, want %d", key, procs[i].id, n, err, len(atLimit))
				}
				if n, err := c.Exists(ctx, "over:"+key).Result(); err != nil || n != 0 {
					t.Errorf("EXISTS over:%s on %s: %d %v, want 0", key, procs[i].id, n, err)
				}
			}
		}
	}
	const bound = 64<<20 + 48*limit
	for i, p := range procs {
		peak := peakRSS(t, p.cmd.Process.Pid)
		role := "follower"
		if i == leader {
			role = "leader"
		}
		t.Logf("%s (%s): peak RSS %.1f MiB (bound %.0f MiB)", p.id, role, float64(peak)/(1<<20), float64(bound)/(1<<20))
		if peak > bound {
			t.Errorf("%s (%s): peak RSS %d bytes, more than %d (64 MiB + 48 × the %d-byte limit)", p.id, role, peak, bound, limit)
		}
	}
}
