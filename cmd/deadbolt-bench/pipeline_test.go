package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPipelineAndLongRead runs the pipeline and long-read tables for a
// moment with real bin/deadbolt processes (built here) and redis-server,
// and checks every row has a figure, not an error.
func TestPipelineAndLongRead(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts clusters")
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
	err := run(context.Background(), []string{"-pipeline", "-deadbolt-bin", bin, "-base-bin", bin, "-work-dir", dir,
		"-duration", "200ms", "-warmup", "0s", "-pipeline-depth", "100"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run -pipeline: %v\n%s", err, stderr.String())
	}
	for _, row := range []string{"deadbolt-3node-leader", "deadbolt-3node-follower", "base-3node-leader", "base-3node-follower", "redis", "redis-aof-always"} {
		if !hasRow(stdout.String(), row) {
			t.Errorf("no row %q:\n%s", row, stdout.String())
		}
	}
	stdout.Reset()
	err = run(context.Background(), []string{"-longread", "-deadbolt-bin", bin, "-work-dir", dir, "-keys", "3000"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run -longread: %v\n%s", err, stderr.String())
	}
	for _, row := range []string{"deadbolt-memory", "deadbolt-3node", "redis"} {
		if !hasRow(stdout.String(), row) {
			t.Errorf("no row %q:\n%s", row, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "error") {
		t.Errorf("an error row:\n%s", stdout.String())
	}
}
