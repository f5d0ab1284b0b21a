package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

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
		if f := strings.Fields(line); len(f) == 6 {
			rows[f[0]+" "+f[1]] = true
		}
	}
	for _, server := range []string{"deadbolt", "redis", "deadbolt/redis"} {
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
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
	cfg, err := parseFlags([]string{"-clients", "2, 5"}, &bytes.Buffer{})
	if err != nil || len(cfg.clients) != 2 || cfg.clients[1] != 5 {
		t.Errorf("parseFlags(-clients '2, 5') = (%v, %v)", cfg.clients, err)
	}
}
