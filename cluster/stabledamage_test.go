package cluster

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A member whose log/stable has one copy of the term and vote damaged (a
// byte really flipped in the file) starts from the other copy and says
// so in its own log, naming the file; it serves as before. Before, it
// started without a word.
func TestDamagedStableCopyLogged(t *testing.T) {
	dc := startDiskCluster(t, 3, nil)
	dc.write(t, "a", 5, 10)
	v := (dc.leader(-1) + 1) % 3
	dc.stop(v)
	path := filepath.Join(dc.logDir(v), "stable")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[4096+30] ^= 0x08 // the second copy's payload
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	dc.restartWith(t, v, func(cfg *Config) { cfg.Logger = logger })
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	var line string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "stable file was damaged") {
			line = l
		}
	}
	t.Logf("%s", line)
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "file="+path) || !strings.Contains(line, "copy=2") {
		t.Fatalf("no warning naming %s's damaged copy 2 in the node's log:\n%s", path, got)
	}
	dc.write(t, "b", 5, 10)
}
