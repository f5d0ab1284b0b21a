package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterIDOf reads the cluster id a data directory holds ("" without one).
func clusterIDOf(p *proc) string {
	b, err := os.ReadFile(filepath.Join(p.dir, "data", "cluster.id"))
	if err != nil {
		return ""
	}
	id, _ := strings.CutPrefix(strings.TrimSpace(string(b)), "deadbolt cluster\nid ")
	return id
}

// TestProcessClusterIDBesideOlderBuild: a cluster of this build has an id
// in every data directory; one member goes back to the older build
// (d5c42b3, after deadbolt downgrade), which sends no id and closes a
// connection that opens with the id's hello. The members of this build,
// run with --preserve-downgrade as a mixed cluster must be, notice, talk
// to it without, and it keeps receiving the log; back on this build it
// keeps the cluster's id.
func TestProcessClusterIDBesideOlderBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	oldBin := buildOld(t)
	newBin := buildBinary(t)
	procs, peers := threeProcs(t, "c")
	for _, p := range procs {
		p.start(t, newBin, peers)
	}
	for _, p := range procs {
		waitServing(t, p)
	}
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for {
		id = clusterIDOf(procs[0])
		if id != "" && clusterIDOf(procs[1]) == id && clusterIDOf(procs[2]) == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no common cluster id within 30 s: %q %q %q", id, clusterIDOf(procs[1]), clusterIDOf(procs[2]))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// An older build may be a member only while this build's members run
	// with --preserve-downgrade (without, a node that knows its id refuses
	// a connection without the hello, and dials none without it).
	for _, p := range procs[:2] {
		stopGracefully(t, p)
		p.extra = []string{"--preserve-downgrade"}
		p.start(t, newBin, peers)
		waitServing(t, p)
	}
	old := procs[2]
	stopGracefully(t, old)
	if out, err := exec.Command(newBin, "downgrade", "--data-dir", filepath.Join(old.dir, "data")).CombinedOutput(); err != nil {
		t.Fatalf("deadbolt downgrade: %v\n%s", err, out)
	}
	old.start(t, oldBin, peers)
	waitServing(t, old)

	// Writes through this build's members reach the older one: read
	// through it, each waits for its own copy of the log.
	ctx := context.Background()
	w := redis.NewClient(&redis.Options{Addr: procs[0].addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer w.Close()
	r := redis.NewClient(&redis.Options{Addr: old.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer r.Close()
	for i := range 20 {
		k := fmt.Sprintf("beside-old:%d", i)
		if err := w.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		if v, err := r.Get(ctx, k).Result(); err != nil || v != "v" {
			t.Fatalf("GET %s through the older build: %q, %v", k, v, err)
		}
	}
	fallback := false
	for _, p := range procs[:2] {
		log := readLog(p)
		if strings.Contains(log, "member of another cluster") {
			t.Fatalf("%s refused a member of its own cluster:\n%s", p.id, log)
		}
		fallback = fallback || strings.Contains(log, "closed the connection at the cluster id's hello")
	}
	if !fallback {
		t.Fatal("no member of this build logged that the older build takes no cluster id")
	}
	if got := clusterIDOf(old); got != id {
		t.Fatalf("the older build's data directory: cluster id %q, want %q", got, id)
	}

	// Back on this build, with the cluster's id.
	stopGracefully(t, old)
	old.start(t, newBin, peers)
	waitServing(t, old)
	for _, p := range procs {
		if strings.Contains(readLog(p), "member of another cluster") {
			t.Fatalf("%s refused a member of its own cluster:\n%s", p.id, readLog(p))
		}
		if got := clusterIDOf(p); got != id {
			t.Fatalf("%s: cluster id %q, want %q", p.id, got, id)
		}
	}
}
