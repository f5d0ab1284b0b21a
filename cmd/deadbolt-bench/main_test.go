package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/internal/testredis"
)

// TestRun is a smoke test: a very short table against an in-process
// deadbolt and a real redis-server. It checks that the program works, not
// any figure.
func TestRun(t *testing.T) {
	addr := testredis.Start(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"-duration", "100ms", "-warmup", "0s", "-clients", "1,3", "-redis-addr", addr,
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	rows := map[string]bool{}
	for line := range strings.Lines(stdout.String()) {
		if f := strings.Fields(line); len(f) == 7 {
			rows[f[0]+" "+f[1]+" "+f[2]] = true
		}
	}
	for _, server := range []string{"deadbolt 2", "deadbolt 3", "redis 2", "redis 3", "deadbolt/redis 2", "deadbolt/redis 3", "deadbolt 3/2"} {
		for _, clients := range []string{"1", "3"} {
			if !rows[server+" "+clients] {
				t.Errorf("no row for %s with %s clients:\n%s", server, clients, stdout.String())
			}
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-clients", "1,x"},
		{"-clients", "0"},
		{"-runs", "0"},
		{"-duration", "0s"},
		{"extra"},
		{"-cluster", "-systems", "deadbolt,consul"},
		{"-longread", "-longread-systems", "3node,etcd"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
	cfg, err := parseFlags([]string{"-clients", "2, 5"}, &bytes.Buffer{})
	if err != nil || len(cfg.clients) != 2 || cfg.clients[1] != 5 {
		t.Errorf("parseFlags(-clients '2, 5') = (%v, %v)", cfg.clients, err)
	}
	cfg, err = parseFlags([]string{"-longread", "-longread-systems", "3node"}, &bytes.Buffer{})
	if err != nil || !slices.Equal(cfg.longSystems, []string{"3node"}) {
		t.Errorf("parseFlags(-longread-systems 3node) = (%v, %v)", cfg.longSystems, err)
	}
}

// TestCluster runs the cluster table for a moment with three real
// bin/deadbolt processes (built here), a single one with its data on
// disk, and redis-server with appendfsync always; etcd is left out (the -systems flag), so the test needs no etcd.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a cluster")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "deadbolt")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/deadbolt/deadbolt/cmd/deadbolt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"-cluster", "-systems", "deadbolt,deadbolt1,redis", "-deadbolt-bin", bin, "-work-dir", dir,
		"-duration", "200ms", "-warmup", "0s", "-clients", "1,64",
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for _, row := range []string{nameDeadbolt + " 1", nameDeadbolt + " 64", nameSingle + " 64", nameRedisAOF + " 64"} {
		if !hasRow(stdout.String(), row) {
			t.Errorf("no row %q:\n%s", row, stdout.String())
		}
	}
	if !strings.Contains(stdout.String(), "ops/s ≥ 5 × etcd: not measured") {
		t.Errorf("no targets line:\n%s", stdout.String())
	}
}

func hasRow(out, prefix string) bool {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(strings.Join(strings.Fields(line), " "), prefix+" ") {
			return true
		}
	}
	return false
}

func TestReportCluster(t *testing.T) {
	cfg := config{clients: []int{64}, runs: 1}
	targets := []target{{name: nameDeadbolt}, {name: nameRedisAOF}, {name: nameEtcd}}
	results := map[int]map[string][]cell{64: {
		nameDeadbolt: {{opsPerSec: 6000, p99Lock: 4 * time.Millisecond, cpuPerOp: 41 * time.Microsecond, busiestPerOp: 23 * time.Microsecond, genPerOp: 29 * time.Microsecond}},
		nameRedisAOF: {{opsPerSec: 10000, p99Lock: 3 * time.Millisecond}},
		nameEtcd:     {{opsPerSec: 1000}},
	}}
	var out bytes.Buffer
	if err := reportCluster(&out, cfg, targets, results); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6.00× met", "0.60× met", "4000µs met", "gen cpu/op", "41µs        23µs        29µs",
		"ops/s ≥ 1.0 × redis-aof-always: 0.60× NOT met; ops/s ≥ 8 × etcd: 6.00× NOT met; p99 acquire ≤ redis-aof-always's: 4000µs against 3000µs NOT met"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	results[64][nameDeadbolt][0].opsPerSec = 4000
	out.Reset()
	_ = reportCluster(&out, cfg, targets, results)
	if !strings.Contains(out.String(), "4.00× NOT met") {
		t.Errorf("no NOT met in:\n%s", out.String())
	}
}

// TestMemory runs the memory table for a few thousand locks with a real
// bin/deadbolt (built here) and redis-server, and the restart timing: it
// checks that the rows are there with figures, not what they are.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts servers")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "deadbolt")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/deadbolt/deadbolt/cmd/deadbolt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"-memory", "-memory-locks", "3000", "-memory-settle", "0s", "-memory-restart", "2000",
		"-deadbolt-bin", bin, "-work-dir", dir, "-deadbolt-args", "--gc-percent 100",
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for _, row := range []string{"3000 redis", "3000 deadbolt", "3000 deadbolt/redis"} {
		if !hasRow(stdout.String(), row) {
			t.Errorf("no row %q:\n%s", row, stdout.String())
		}
	}
	if !strings.Contains(stdout.String(), "restart of a single node with 2000 locks") {
		t.Errorf("no restart line:\n%s", stdout.String())
	}
}
